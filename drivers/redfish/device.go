package redfish

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/fencekit/fencekit/fence"
)

// AuthMode is how the driver authenticates to the service.
type AuthMode uint8

const (
	// AuthBasic sends HTTP Basic credentials with every request (the
	// default, and what fence_redfish does).
	AuthBasic AuthMode = iota
	// AuthSession logs in once (POST to the SessionService's Sessions),
	// sends the session's X-Auth-Token with every request, logs in again
	// if the service drops the session, and deletes it on Close.
	AuthSession
)

// String returns "basic" or "session".
func (m AuthMode) String() string {
	if m == AuthSession {
		return "session"
	}
	return "basic"
}

// DefaultRedfishURI is the service root's path.
const DefaultRedfishURI = "/redfish/v1"

// DefaultTimeout bounds a request whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Options configure a Device (see New).
type Options struct {
	// Endpoint is the service's scheme, host and port, without a path:
	// "https://10.0.0.5", "https://bmc-3:8443", "http://127.0.0.1:8000".
	// HTTPS when it has no scheme; plain HTTP only when it says http://.
	Endpoint string
	// RedfishURI is the service root's path; default DefaultRedfishURI.
	RedfishURI string
	// SystemsURI is the path of the computer system to act on, such as
	// /redfish/v1/Systems/System.Embedded.1. When empty, the driver uses
	// the only member of the Systems collection, and fails, listing them,
	// when there are several.
	SystemsURI string
	// Username and Password are the credentials.
	Username string
	Password fence.Secret
	// Auth chooses HTTP Basic (default) or session authentication.
	Auth AuthMode
	// RootCAs, when set, are the only CAs trusted to sign the service's
	// certificate; nil trusts the system's.
	RootCAs *x509.CertPool
	// InsecureSkipVerify accepts any certificate. Only when asked
	// (ssl_insecure).
	InsecureSkipVerify bool
	// Timeout bounds a request whose context has no deadline; default
	// DefaultTimeout. A context's deadline always applies.
	Timeout time.Duration
	// BootMode, when set ("UEFI" or "Legacy"), is the
	// BootSourceOverrideMode SetBootDevice sets with the target; empty
	// leaves the system's mode as it is.
	BootMode string
	// Logger receives a debug record per request; nil discards them.
	Logger *slog.Logger
}

// Device is a Redfish service's computer system as a fence device. Its
// methods are safe for concurrent use.
//
// Plugs: the empty plug is the selected system (Options.SystemsURI, else
// the only system). Any other plug names a system by its Id (the last
// segment of its URI, as List reports it); "1" also stands for the
// selected system when no system has the Id "1", for configurations that
// always give a plug. A plug that names no system fails with an error
// wrapping fence.ErrUnknownPlug.
//
// Operations: Set on sends the reset type On (ForceOn if only that is
// offered), Set off ForceOff, Cycle PowerCycle (ForceRestart if only that
// is offered), SoftOff GracefulShutdown, each to the system's
// #ComputerSystem.Reset action and only if the system offers the type.
// Status reads PowerState: On and Off are states; PoweringOn and
// PoweringOff are errors wrapping ErrTransition; anything else is an error
// wrapping fence.ErrBadState.
//
// Round trips: one connection is kept alive and reused, and what the
// driver discovers (the service root, the Systems collection, each
// system's reset target and offered reset types) is cached for the
// device's life, the reset target and types refreshed by every status
// read. A verified off is then a status GET, the reset POST and a
// confirming GET.
type Device struct {
	o       Options
	base    string // scheme://host:port
	host    string // host:port, for errors
	hostURL string // host name, lower case, to recognise URLs from the service
	port    string // port; empty for the scheme's default
	scheme  string
	client  *http.Client
	basic   string // "Basic ..."; empty with AuthSession
	logger  *slog.Logger

	requests atomic.Uint64
	authMu   sync.Mutex // serialises logins

	mu       sync.Mutex
	closed   bool
	token    string // session token
	session  string // session URI
	root     *rootDoc
	members  []member // nil until read
	selected string   // the selected system's URI, once known
	systems  map[string]*sysInfo
}

type member struct {
	id, uri string
}

// sysInfo is what the driver knows of one system's reset action.
type sysInfo struct {
	known          bool   // the system's document was read
	target         string // the reset action's target; empty if none
	actionInfo     string // the action's @Redfish.ActionInfo
	actionInfoRead bool
	advertised     bool // allowed is what the service offers
	allowed        []schemas.ResetType
	actionsErr     error // the Actions property could not be decoded
}

type odataID struct {
	ID string `json:"@odata.id"`
}

type rootDoc struct {
	Systems odataID
	Links   struct {
		Sessions odataID
	}
}

type systemDoc struct {
	Name       string
	UUID       string
	PowerState json.RawMessage
	Actions    json.RawMessage
}

type actionsDoc struct {
	Reset *struct {
		schemas.ActionTarget
		Allowed []schemas.ResetType `json:"ResetType@Redfish.AllowableValues"`
	} `json:"#ComputerSystem.Reset"`
}

// New returns a device for the Redfish service of o. It does not touch
// the network: the first request connects (and, with AuthSession, logs in).
func New(o Options) (*Device, error) {
	ep := strings.TrimSpace(o.Endpoint)
	if ep == "" {
		return nil, errors.New("redfish: no endpoint")
	}
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return nil, fmt.Errorf("redfish: endpoint: %w", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("redfish: endpoint scheme %q: want https or http", u.Scheme)
	case u.User != nil:
		return nil, errors.New("redfish: endpoint holds credentials; give Username and Password")
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("redfish: endpoint has no host")
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
		return nil, errors.New("redfish: endpoint has a path; give RedfishURI or SystemsURI")
	}
	if o.RedfishURI == "" {
		o.RedfishURI = DefaultRedfishURI
	}
	for _, p := range []*string{&o.RedfishURI, &o.SystemsURI} {
		if *p == "" {
			continue
		}
		if !strings.HasPrefix(*p, "/") || strings.ContainsAny(*p, "?# \t\r\n") {
			return nil, fmt.Errorf("redfish: URI %q is not an absolute path", *p)
		}
		if len(*p) > 1 {
			*p = strings.TrimRight(*p, "/")
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	d := &Device{
		o:       o,
		base:    u.Scheme + "://" + u.Host,
		scheme:  u.Scheme,
		host:    u.Host,
		hostURL: strings.ToLower(u.Hostname()),
		port:    u.Port(),
		logger:  o.Logger,
		systems: map[string]*sysInfo{},
	}
	if u.Port() == "" {
		d.host = u.Host + ":" + defaultPort(u.Scheme) // u.Host has IPv6 brackets
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if o.Auth == AuthBasic {
		d.basic = "Basic " + base64.StdEncoding.EncodeToString([]byte(o.Username+":"+o.Password.Reveal()))
	}
	// Insecure settings are said once per device.
	switch {
	case u.Scheme == "http":
		d.logger.Warn("redfish: plain HTTP: the credentials and every command cross the network unencrypted; use https", "host", d.host)
	case o.InsecureSkipVerify:
		d.logger.Warn("redfish: the BMC's TLS certificate is not verified (ssl_insecure): anyone on the path can pose as it and learn the credentials", "host", d.host)
	}
	d.client = newClient(tlsConfig(&d.o))
	return d, nil
}

// Requests returns how many HTTP requests the device has sent, logins and
// logouts included.
func (d *Device) Requests() uint64 { return d.requests.Load() }

func (d *Device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Close deletes the session, if any (bounded by a short timeout), and
// closes idle connections. Later calls fail with ErrClosed; a second
// Close does nothing.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	err := d.logout()
	d.client.CloseIdleConnections()
	return err
}

// checkOpen fails when the device is closed.
func (d *Device) checkOpen(method, p string) error {
	if d.isClosed() {
		return d.fail(method, p, "", "not sent", ErrClosed)
	}
	return nil
}

// serviceRoot returns the service root, cached.
func (d *Device) serviceRoot(ctx context.Context) (*rootDoc, error) {
	d.mu.Lock()
	r := d.root
	d.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return d.readRoot(ctx)
}

// readRoot GETs the service root and caches it.
func (d *Device) readRoot(ctx context.Context) (*rootDoc, error) {
	var r rootDoc
	// The service root needs no credentials; with sessions, it is read
	// before the login, so it goes without.
	p := d.o.RedfishURI
	name := ""
	if d.basic != "" {
		name = "Authorization"
	}
	rp, se := d.roundTrip(ctx, http.MethodGet, p, nil, name, d.basic)
	if se != nil {
		return nil, se.err
	}
	if rp.status < 200 || rp.status > 299 {
		return nil, d.statusError(http.MethodGet, p, rp)
	}
	if err := json.Unmarshal(rp.body, &r); err != nil {
		return nil, d.fail(http.MethodGet, p, "", "reply is not a service root", err, ErrMalformedReply)
	}
	d.mu.Lock()
	d.root = &r
	d.mu.Unlock()
	return &r, nil
}

// memberList returns the Systems collection's members, cached unless
// fresh is set.
func (d *Device) memberList(ctx context.Context, fresh bool) ([]member, error) {
	d.mu.Lock()
	ms := d.members
	d.mu.Unlock()
	if ms != nil && !fresh {
		return ms, nil
	}
	root, err := d.serviceRoot(ctx)
	if err != nil {
		return nil, err
	}
	if root.Systems.ID == "" {
		return nil, d.fail(http.MethodGet, d.o.RedfishURI, "Systems", "the service root links no Systems collection", nil, ErrMalformedReply)
	}
	cp := d.localPath(root.Systems.ID)
	var coll struct {
		Members []odataID
	}
	if err := d.getJSON(ctx, cp, &coll); err != nil {
		return nil, err
	}
	ms = make([]member, 0, len(coll.Members))
	for _, m := range coll.Members {
		if m.ID == "" {
			return nil, d.fail(http.MethodGet, cp, "Members", "a member has no @odata.id", nil, ErrMalformedReply)
		}
		u := d.localPath(m.ID)
		if len(u) > 1 {
			u = strings.TrimRight(u, "/")
		}
		ms = append(ms, member{id: path.Base(u), uri: u})
	}
	d.mu.Lock()
	d.members = ms
	d.mu.Unlock()
	return ms, nil
}

func (d *Device) systemsPath() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root != nil && d.root.Systems.ID != "" {
		return d.root.Systems.ID
	}
	return d.o.RedfishURI + "/Systems"
}

// selectedURI returns the URI of the selected system: Options.SystemsURI,
// else the only member of the Systems collection.
func (d *Device) selectedURI(ctx context.Context) (string, error) {
	if d.o.SystemsURI != "" {
		return d.o.SystemsURI, nil
	}
	d.mu.Lock()
	sel := d.selected
	d.mu.Unlock()
	if sel != "" {
		return sel, nil
	}
	ms, err := d.memberList(ctx, false)
	if err != nil {
		return "", err
	}
	switch len(ms) {
	case 0:
		return "", d.fail(http.MethodGet, d.systemsPath(), "Members", "the Systems collection is empty", nil, ErrNoSuchSystem)
	case 1:
		d.mu.Lock()
		d.selected = ms[0].uri
		d.mu.Unlock()
		return ms[0].uri, nil
	}
	return "", d.fail(http.MethodGet, d.systemsPath(), "Members",
		fmt.Sprintf("%d systems (%s): choose one with systems_uri or a plug naming its Id (fence_redfish would take the last, %s; fencekit does not guess which machine to switch off)",
			len(ms), uris(ms), ms[len(ms)-1].uri), nil, ErrSeveralSystems)
}

func uris(ms []member) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.uri
	}
	return strings.Join(s, ", ")
}

// systemURI returns the URI of the system a plug names (see Device).
func (d *Device) systemURI(ctx context.Context, plug string) (string, error) {
	if plug == "" {
		return d.selectedURI(ctx)
	}
	ms, err := d.memberList(ctx, false)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.id == plug {
			return m.uri, nil
		}
	}
	if plug == "1" {
		return d.selectedURI(ctx)
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	return "", d.fail(http.MethodGet, d.systemsPath(), "Members",
		fmt.Sprintf("plug %q names no system (systems: %s)", plug, strings.Join(ids, ", ")), nil, ErrNoSuchSystem)
}

// forget drops what was discovered about uri after it answered 404, so
// that the next call discovers afresh.
func (d *Device) forget(uri string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.systems, uri)
	if d.selected == uri {
		d.selected = ""
	}
	d.members = nil
}

// system finds the plug's system and reads it (readSystem): its URI and
// its document.
func (d *Device) system(ctx context.Context, plug string) (string, *systemDoc, error) {
	uri, err := d.systemURI(ctx, plug)
	if err != nil {
		return "", nil, err
	}
	doc, err := d.readSystem(ctx, uri)
	return uri, doc, err
}

// readSystem GETs the system at uri, and refreshes its reset action's
// cache.
func (d *Device) readSystem(ctx context.Context, uri string) (*systemDoc, error) {
	if err := d.checkOpen(http.MethodGet, uri); err != nil {
		return nil, err
	}
	var doc systemDoc
	if err := d.getJSON(ctx, uri, &doc); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusNotFound {
			e.is = append(e.is, ErrNoSuchSystem)
			d.forget(uri)
		}
		return nil, err
	}
	info := &sysInfo{known: true}
	if len(doc.Actions) > 0 {
		var a actionsDoc
		if err := json.Unmarshal(doc.Actions, &a); err != nil {
			info.actionsErr = d.fail(http.MethodGet, uri, "Actions", "cannot read the reset action", err, ErrMalformedReply)
		} else if a.Reset != nil {
			info.target = d.localPath(a.Reset.Target)
			info.actionInfo = d.localPath(a.Reset.ActionInfoTarget)
			info.allowed = a.Reset.Allowed
			info.advertised = a.Reset.Allowed != nil
		}
	}
	d.mu.Lock()
	if old := d.systems[uri]; old != nil && !info.advertised && old.actionInfo == info.actionInfo && old.actionInfoRead {
		// Keep what the ActionInfo resource said.
		info.actionInfoRead, info.advertised, info.allowed = true, old.advertised, old.allowed
	}
	d.systems[uri] = info
	d.mu.Unlock()
	return &doc, nil
}

// powerState reads a system document's PowerState.
func (d *Device) powerState(uri string, doc *systemDoc) (fence.State, schemas.PowerState, error) {
	raw := doc.PowerState
	if len(raw) == 0 || string(raw) == "null" {
		return fence.StateUnknown, "", d.fail(http.MethodGet, uri, "PowerState", "missing from the reply", nil, ErrMalformedReply, fence.ErrBadState)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fence.StateUnknown, "", d.fail(http.MethodGet, uri, "PowerState", "not a string: "+clip(string(raw), 40), nil, ErrMalformedReply, fence.ErrBadState)
	}
	ps := schemas.PowerState(strings.TrimSpace(s))
	switch {
	case strings.EqualFold(string(ps), string(schemas.OnPowerState)):
		return fence.StateOn, ps, nil
	case strings.EqualFold(string(ps), string(schemas.OffPowerState)):
		return fence.StateOff, ps, nil
	case strings.EqualFold(string(ps), string(schemas.PoweringOnPowerState)),
		strings.EqualFold(string(ps), string(schemas.PoweringOffPowerState)):
		return fence.StateUnknown, ps, d.fail(http.MethodGet, uri, "PowerState", fmt.Sprintf("%q: in transition, neither on nor off yet", clip(s, 40)), nil, ErrTransition)
	}
	return fence.StateUnknown, ps, d.fail(http.MethodGet, uri, "PowerState", fmt.Sprintf("%q is neither on nor off", clip(s, 40)), nil, fence.ErrBadState)
}

// Status reads the plug's system's PowerState (see Device).
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	uri, doc, err := d.system(ctx, plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	st, _, err := d.powerState(uri, doc)
	return st, err
}

// Identity returns the UUID the plug's system reports
// (ComputerSystem.UUID), the identity of its machine (fence.Identifier); an
// error wrapping fence.ErrNoIdentity when the system reports none.
func (d *Device) Identity(ctx context.Context, plug string) (string, error) {
	uri, doc, err := d.system(ctx, plug)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(doc.UUID) == "" {
		return "", d.fail(http.MethodGet, uri, "UUID", "the system reports no UUID", nil, fence.ErrNoIdentity)
	}
	return doc.UUID, nil
}

// PowerState returns the PowerState the plug's system reports, as it
// reports it (PoweringOn, Paused, ...).
func (d *Device) PowerState(ctx context.Context, plug string) (schemas.PowerState, error) {
	uri, doc, err := d.system(ctx, plug)
	if err != nil {
		return "", err
	}
	_, ps, err := d.powerState(uri, doc)
	if errors.Is(err, ErrMalformedReply) {
		return "", err
	}
	return ps, nil
}

// Set turns the plug's system on (reset type On, else ForceOn) or off
// (ForceOff).
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	switch s {
	case fence.StateOn:
		return d.reset(ctx, plug, s, schemas.OnResetType, schemas.ForceOnResetType)
	case fence.StateOff:
		return d.reset(ctx, plug, s, schemas.ForceOffResetType)
	}
	return fence.NotDone(fmt.Errorf("redfish %s: cannot set state %v", d.host, s))
}

// Cycle power-cycles the plug's system (reset type PowerCycle, else
// ForceRestart).
func (d *Device) Cycle(ctx context.Context, plug string) error {
	return d.reset(ctx, plug, fence.StateUnknown, schemas.PowerCycleResetType, schemas.ForceRestartResetType)
}

// SoftOff asks the plug's system's operating system to shut down (reset
// type GracefulShutdown).
func (d *Device) SoftOff(ctx context.Context, plug string) error {
	return d.reset(ctx, plug, fence.StateUnknown, schemas.GracefulShutdownResetType)
}

// Reset sends reset type t to the plug's system, if the system offers it.
// Its errors are marked as Set's are (see fence.Device).
func (d *Device) Reset(ctx context.Context, plug string, t schemas.ResetType) error {
	return d.reset(ctx, plug, fence.StateUnknown, t)
}

// ResetTypes returns the reset types the plug's system offers, and false
// when it advertises none (neither AllowableValues nor ActionInfo).
func (d *Device) ResetTypes(ctx context.Context, plug string) ([]schemas.ResetType, bool, error) {
	_, info, err := d.resetInfo(ctx, plug)
	if err != nil {
		return nil, false, err
	}
	return slices.Clone(info.allowed), info.advertised, nil
}

// resetInfo returns the plug's system and what is known of its reset
// action, reading the system (and its ActionInfo) if nothing is yet.
func (d *Device) resetInfo(ctx context.Context, plug string) (string, sysInfo, error) {
	uri, err := d.systemURI(ctx, plug)
	if err != nil {
		return "", sysInfo{}, err
	}
	d.mu.Lock()
	info := d.systems[uri]
	d.mu.Unlock()
	if info == nil {
		if _, err := d.readSystem(ctx, uri); err != nil {
			return uri, sysInfo{}, err
		}
		d.mu.Lock()
		info = d.systems[uri]
		d.mu.Unlock()
		if info == nil {
			return uri, sysInfo{}, d.fail(http.MethodGet, uri, "", "the system vanished", nil, ErrNoSuchSystem)
		}
	}
	cp := *info
	if cp.actionsErr != nil {
		return uri, cp, cp.actionsErr
	}
	if !cp.advertised && cp.actionInfo != "" && !cp.actionInfoRead {
		var ai schemas.ActionInfo
		if err := d.getJSON(ctx, cp.actionInfo, &ai); err != nil {
			// The reset types stay unknown: the reset is sent, and the
			// service refuses a type it lacks.
			d.logger.LogAttrs(ctx, slog.LevelWarn, "redfish: cannot read the reset action's ActionInfo",
				slog.String("host", d.host), slog.String("error", err.Error()))
		} else {
			cp.actionInfoRead = true
			for _, p := range ai.Parameters {
				if p.Name == "ResetType" && p.AllowableValues != nil {
					cp.advertised = true
					cp.allowed = make([]schemas.ResetType, len(p.AllowableValues))
					for i, v := range p.AllowableValues {
						cp.allowed[i] = schemas.ResetType(v)
					}
				}
			}
		}
		d.mu.Lock()
		if cur := d.systems[uri]; cur == info {
			n := cp
			d.systems[uri] = &n
		}
		d.mu.Unlock()
	}
	return uri, cp, nil
}

// reset sends the first of types the plug's system offers. want is the
// state it should lead to, for Set (StateUnknown for the others): a reset
// the service refuses (4xx) while the system already is in that state
// counts as done.
func (d *Device) reset(ctx context.Context, plug string, want fence.State, types ...schemas.ResetType) error {
	uri, info, err := d.resetInfo(ctx, plug)
	if err != nil {
		return fence.NotDone(err)
	}
	if info.target == "" {
		return fence.NotDone(d.fail(http.MethodGet, uri, "Actions", "the system has no #ComputerSystem.Reset action", nil, fence.ErrUnsupported))
	}
	rt := types[0]
	if info.advertised {
		i := slices.IndexFunc(types, func(t schemas.ResetType) bool { return slices.Contains(info.allowed, t) })
		if i < 0 {
			offered := make([]string, len(info.allowed))
			for i, t := range info.allowed {
				offered[i] = string(t)
			}
			o := strings.Join(offered, ", ")
			if o == "" {
				o = "none"
			}
			return fence.NotDone(d.fail(http.MethodPost, info.target, "ResetType",
				fmt.Sprintf("%s not offered by %s (it offers: %s); not sent", joinTypes(types), uri, o), nil, ErrResetTypeNotOffered))
		}
		rt = types[i]
	}
	body := []byte(`{"ResetType":` + quoteJSON(string(rt)) + `}`)
	if err := d.checkOpen(http.MethodPost, info.target); err != nil {
		return fence.NotDone(err)
	}
	r, se := d.send(ctx, http.MethodPost, info.target, body)
	if se != nil {
		if !se.mayHaveSent {
			return fence.NotDone(se.err)
		}
		return se.err // outcome unknown
	}
	switch {
	case r.status >= 200 && r.status <= 299:
		return nil
	case r.status >= 400 && r.status <= 499:
		e := d.statusError(http.MethodPost, info.target, r)
		e.Reason = string(rt) + ": " + e.Reason
		if r.status == http.StatusNotFound {
			d.forget(uri)
		}
		if want.Known() && (r.status == http.StatusConflict || r.status == http.StatusBadRequest) && d.already(ctx, plug, want) {
			// Some services refuse a reset that would change nothing.
			return nil
		}
		return fence.NotDone(e)
	}
	e := d.statusError(http.MethodPost, info.target, r)
	e.Reason = string(rt) + ": " + e.Reason
	return e // a 5xx (or an odd status): the service may have acted
}

// already reports whether the plug's system is in state want, or on its
// way there (PoweringOn for on, PoweringOff for off): a reset the service
// refused then changed nothing, and Set may succeed (the engine still
// verifies the state).
func (d *Device) already(ctx context.Context, plug string, want fence.State) bool {
	ps, err := d.PowerState(ctx, plug)
	if err != nil {
		return false
	}
	switch {
	case strings.EqualFold(string(ps), string(schemas.OnPowerState)), strings.EqualFold(string(ps), string(schemas.PoweringOnPowerState)):
		return want == fence.StateOn
	case strings.EqualFold(string(ps), string(schemas.OffPowerState)), strings.EqualFold(string(ps), string(schemas.PoweringOffPowerState)):
		return want == fence.StateOff
	}
	return false
}

func joinTypes(ts []schemas.ResetType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	if len(s) == 1 {
		return "reset type " + s[0]
	}
	return "reset types " + strings.Join(s, " and ")
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// List returns the service's computer systems as plugs: ID is the
// system's Id, Name its Name, State its power state (StateUnknown while it
// is switching or reports anything but On or Off). It reads the Systems
// collection and then each system.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	if err := d.checkOpen(http.MethodGet, d.systemsPath()); err != nil {
		return nil, err
	}
	ms, err := d.memberList(ctx, true)
	if err != nil {
		return nil, err
	}
	out := make([]fence.Plug, 0, len(ms))
	for _, m := range ms {
		doc, err := d.readSystem(ctx, m.uri)
		if err != nil {
			return nil, err
		}
		st, _, _ := d.powerState(m.uri, doc)
		out = append(out, fence.Plug{ID: m.id, Name: doc.Name, State: st})
	}
	return out, nil
}

// Monitor checks the service: it reads the service root and the selected
// system, and wants a PowerState in it (any value: a system switching is
// healthy). When no system is selected and the service has several, it
// reads the Systems collection instead.
func (d *Device) Monitor(ctx context.Context) error {
	if err := d.checkOpen(http.MethodGet, d.o.RedfishURI); err != nil {
		return err
	}
	if _, err := d.readRoot(ctx); err != nil {
		return err
	}
	uri := d.o.SystemsURI
	if uri == "" {
		ms, err := d.memberList(ctx, true)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			_, err := d.selectedURI(ctx)
			if errors.Is(err, ErrSeveralSystems) {
				return nil // the collection answered; plugs choose
			}
			return err
		}
		uri = ms[0].uri
	}
	doc, err := d.readSystem(ctx, uri)
	if err != nil {
		return err
	}
	if _, _, err := d.powerState(uri, doc); errors.Is(err, ErrMalformedReply) {
		return err
	}
	return nil
}

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }

// String returns the device's base URL (scheme, host and port); never its
// credentials or session token.
func (d *Device) String() string { return "redfish+" + d.base }
