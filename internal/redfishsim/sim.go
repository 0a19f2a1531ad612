// Package redfishsim is a small Redfish service (a BMC's REST API) for
// tests and demonstrations: an HTTPS server on 127.0.0.1 with a service
// root, a Systems collection, one or more computer systems with a
// PowerState, and a #ComputerSystem.Reset action that changes it, at once
// or after a delay during which the system reports PoweringOn or
// PoweringOff.
//
// It speaks enough Redfish for the redfish driver and for the ClusterLabs
// agent fence_redfish: HTTP Basic authentication and sessions (X-Auth-Token),
// ResetType@Redfish.AllowableValues or an ActionInfo resource, Redfish
// error bodies, and fault injection (error statuses, malformed JSON, a
// missing or odd PowerState, resets that are accepted and never carried
// out, replies that never come, connections dropped). It counts requests
// per method and path and the connections it accepted, so that tests can
// check how many round trips a client makes.
//
//	s := redfishsim.New(redfishsim.Options{})
//	defer s.Close()
//	// s.URL() is https://127.0.0.1:PORT, trusted by s.CertPool().
//	s.SetTruth("1", fence.StateOff)
package redfishsim

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Redfish power states a system reports.
const (
	// PowerOn is the PowerState of a system that is on.
	PowerOn = "On"
	// PowerOff is the PowerState of a system that is off.
	PowerOff = "Off"
	// PowerPoweringOn is reported while a system powers on (PowerDelay).
	PowerPoweringOn = "PoweringOn"
	// PowerPoweringOff is reported while a system powers off (PowerDelay).
	PowerPoweringOff = "PoweringOff"
	// PowerPaused is the PowerState after a Pause or Suspend reset.
	PowerPaused = "Paused"
)

// DefaultResetTypes are the reset types a system offers when System.ResetTypes
// is nil.
var DefaultResetTypes = []string{
	"On", "ForceOn", "ForceOff", "GracefulShutdown", "GracefulRestart",
	"ForceRestart", "PowerCycle", "PushPowerButton", "Nmi",
}

// knownResetTypes are the values of the Redfish ResetType enumeration; a
// reset of any other value is refused as malformed.
var knownResetTypes = []string{
	"On", "ForceOn", "ForceOff", "GracefulShutdown", "GracefulRestart",
	"ForceRestart", "PowerCycle", "FullPowerCycle", "PushPowerButton", "Nmi",
	"Suspend", "Pause", "Resume",
}

// Advertise says how a system advertises the reset types it offers.
type Advertise uint8

const (
	// AdvertiseAllowable lists them in the action's
	// ResetType@Redfish.AllowableValues (the default).
	AdvertiseAllowable Advertise = iota
	// AdvertiseActionInfo links an ActionInfo resource from the action's
	// @Redfish.ActionInfo, whose ResetType parameter lists them.
	AdvertiseActionInfo
	// AdvertiseNone advertises nothing; the system still refuses the types
	// it does not offer.
	AdvertiseNone
)

// System describes one computer system of the server.
type System struct {
	// ID is the system's Id and the last segment of its URI
	// (/redfish/v1/Systems/ID). Default: "1", "2", ... by position.
	ID string
	// Name is the system's Name. Default: "System ID".
	Name string
	// PowerState is the state the system starts in: "On" (default), "Off",
	// or any value to report as is (such as "Paused").
	PowerState string
	// ResetTypes are the reset types the system offers. nil means
	// DefaultResetTypes.
	ResetTypes []string
	// Advertise says how the offered types are advertised.
	Advertise Advertise
	// UUID is the system's UUID (ComputerSystem.UUID), the machine's
	// identity; empty: the property is left out.
	UUID string
}

// Options configure a Server. The zero value serves one system "1", on,
// over HTTPS, to the user admin with the password "password".
type Options struct {
	// Systems are the computer systems; default one System{}.
	Systems []System
	// Username and Password are the only credentials accepted; defaults
	// "admin" and "password".
	Username, Password string
	// PowerDelay is how long a system reports PoweringOn or PoweringOff
	// after a reset that changes its state (or restarts it) before it
	// reaches the final state. 0 switches at once.
	PowerDelay time.Duration
	// QuietDelay makes a system keep reporting its previous state during
	// PowerDelay instead of PoweringOn or PoweringOff, as some BMCs do.
	QuietDelay bool
	// PlainHTTP serves plain HTTP instead of HTTPS.
	PlainHTTP bool
	// SessionOnly refuses HTTP Basic authentication: only a session's
	// X-Auth-Token is accepted.
	SessionOnly bool
	// RefuseNoop answers 409 to an On or ForceOn of a system that is on and
	// to a ForceOff of a system that is off, as some BMCs do.
	RefuseNoop bool
	// ResetStatus is the status of an accepted reset: 204 (default), 200
	// (with a Redfish message body) or 202 (with a task monitor Location).
	ResetStatus int
	// AbsoluteTargets gives the reset action's target as an absolute URL
	// (https://127.0.0.1:PORT/...), as some services do, instead of a path.
	AbsoluteTargets bool
}

// FaultKind is a kind of injected fault.
type FaultKind uint8

const (
	// FaultStatus answers Code (default 500) with a Redfish error body.
	FaultStatus FaultKind = iota + 1
	// FaultBadJSON answers 200 with a body that is not JSON.
	FaultBadJSON
	// FaultNoPowerState leaves PowerState out of a system's document.
	FaultNoPowerState
	// FaultPowerState reports Value as a system's PowerState.
	FaultPowerState
	// FaultDropReset accepts a reset (of type Value, or any when Value is
	// empty) as usual and never carries it out.
	FaultDropReset
	// FaultHang holds the reply for Delay, or until the client gives up or
	// the server closes when Delay is 0, then answers normally.
	FaultHang
	// FaultCloseConn closes the connection without a reply, after carrying
	// out the request (a reset is done, the client cannot know).
	FaultCloseConn
)

// Fault is a fault to inject (see Server.Inject).
type Fault struct {
	// Kind is what goes wrong.
	Kind FaultKind
	// Method and Path select the requests it applies to; empty means any.
	// Path is matched without a trailing slash.
	Method, Path string
	// Code is FaultStatus's HTTP status; default 500.
	Code int
	// Value is FaultPowerState's PowerState, or FaultDropReset's reset type.
	Value string
	// Delay is how long FaultHang holds the reply; 0 means for ever.
	Delay time.Duration
	// Times is how many requests it applies to; 0 means until removed.
	Times int
}

// Reset is one reset the server accepted.
type Reset struct {
	System string // the system's ID
	Type   string // the ResetType
}

// Server is a running Redfish service. Its methods are safe for concurrent
// use.
type Server struct {
	srv  *httptest.Server
	opts Options
	done chan struct{}

	mu       sync.Mutex
	systems  map[string]*system
	order    []string
	sessions map[string]string // token -> session id
	seq      int
	faults   []*faultEntry
	counts   map[string]int // "METHOD /path"
	total    int
	resets   []Reset

	conns     atomic.Int64
	closeOnce sync.Once
}

type system struct {
	System
	power   string    // the settled state
	final   string    // the state a pending transition ends in; "" if none
	until   time.Time // when it ends
	showing string    // what is reported meanwhile
	// The boot source override (Boot.BootSourceOverrideTarget,
	// BootSourceOverrideEnabled and BootSourceOverrideMode), and what each
	// boot booted from.
	bootTarget, bootEnabled, bootMode string
	boots                             []string
}

// The boot source override targets and modes the simulator offers.
var (
	bootTargets = []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup"}
	bootModes   = []string{"UEFI", "Legacy"}
)

type faultEntry struct {
	Fault
	left int // requests left; -1 for ever
}

// New starts a server on 127.0.0.1 with a random port.
func New(o Options) *Server {
	if o.Username == "" {
		o.Username = "admin"
	}
	if o.Password == "" {
		o.Password = "password"
	}
	if len(o.Systems) == 0 {
		o.Systems = []System{{}}
	}
	if o.ResetStatus == 0 {
		o.ResetStatus = http.StatusNoContent
	}
	s := &Server{
		opts:     o,
		done:     make(chan struct{}),
		systems:  map[string]*system{},
		sessions: map[string]string{},
		counts:   map[string]int{},
	}
	for i, sys := range o.Systems {
		if sys.ID == "" {
			sys.ID = strconv.Itoa(i + 1)
		}
		if sys.Name == "" {
			sys.Name = "System " + sys.ID
		}
		if sys.PowerState == "" {
			sys.PowerState = PowerOn
		}
		if sys.ResetTypes == nil {
			sys.ResetTypes = DefaultResetTypes
		}
		sys.ResetTypes = slices.Clone(sys.ResetTypes)
		if _, dup := s.systems[sys.ID]; dup {
			panic("redfishsim: system " + sys.ID + " listed twice")
		}
		s.systems[sys.ID] = &system{System: sys, power: sys.PowerState, bootTarget: "None", bootEnabled: "Disabled", bootMode: "UEFI"}
		s.order = append(s.order, sys.ID)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st != http.StateNew {
			return
		}
		s.conns.Add(1)
		// Go sets TCP_NODELAY by default; say so, since a reply stalled
		// by delayed ACKs would distort every timing taken against us.
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
	}
	// Clients that hang up mid-handshake (as the agents' do) are no news.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if o.PlainHTTP {
		s.srv.Start()
	} else {
		s.srv.StartTLS()
	}
	return s
}

// Close stops the server, releasing replies held by FaultHang first.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// URL returns the server's base URL, https://127.0.0.1:PORT (http:// with
// PlainHTTP).
func (s *Server) URL() string { return s.srv.URL }

// HostPort returns the server's 127.0.0.1:PORT.
func (s *Server) HostPort() string { return s.srv.Listener.Addr().String() }

// Host returns the server's IP address, 127.0.0.1.
func (s *Server) Host() string {
	h, _, _ := net.SplitHostPort(s.HostPort())
	return h
}

// Port returns the server's TCP port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.HostPort())
	n, _ := strconv.Atoi(p)
	return n
}

// Address returns the server as a fencekit device address,
// redfish+https://127.0.0.1:PORT (redfish+http:// with PlainHTTP).
func (s *Server) Address() string {
	if s.opts.PlainHTTP {
		return "redfish+http://" + s.HostPort()
	}
	return "redfish+https://" + s.HostPort()
}

// Username returns the user name the server accepts.
func (s *Server) Username() string { return s.opts.Username }

// Password returns the password the server accepts.
func (s *Server) Password() string { return s.opts.Password }

// SystemURI returns the URI of the system id, /redfish/v1/Systems/ID.
func (s *Server) SystemURI(id string) string { return "/redfish/v1/Systems/" + id }

// Certificate returns the server's self-signed certificate; nil with
// PlainHTTP.
func (s *Server) Certificate() *x509.Certificate {
	if s.opts.PlainHTTP {
		return nil
	}
	return s.srv.Certificate()
}

// CertPool returns a pool that trusts the server's certificate.
func (s *Server) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	if c := s.Certificate(); c != nil {
		p.AddCert(c)
	}
	return p
}

// CertPEM returns the server's certificate in PEM, as a CA bundle holds it.
func (s *Server) CertPEM() []byte {
	c := s.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// WriteCA writes the server's certificate as a PEM CA bundle into dir and
// returns the file's path.
func (s *Server) WriteCA(dir string) (string, error) {
	f := filepath.Join(dir, "redfishsim-ca.pem")
	return f, os.WriteFile(f, s.CertPEM(), 0o644)
}

// Client returns an HTTP client that trusts the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// lockSystem locks s and returns the system id, or, when there is none,
// answers 404 and returns nil with s unlocked.
func (s *Server) lockSystem(w http.ResponseWriter, id string) *system {
	s.mu.Lock()
	if s.systems[id] == nil {
		s.mu.Unlock()
		reply(w, http.StatusNotFound, errorBody("ResourceNotFound", "no system "+id))
		return nil
	}
	return s.sys(id)
}

// sys returns the system id, settled; the caller holds s.mu.
func (s *Server) sys(id string) *system {
	y := s.systems[id]
	if y == nil {
		panic("redfishsim: no system " + strconv.Quote(id))
	}
	if y.final != "" && !time.Now().Before(y.until) {
		y.power, y.final = y.final, ""
	}
	return y
}

// boot records a boot of y, which consumes a one-time override, as a BMC's
// BIOS does when it boots; s.mu held.
func (y *system) boot() {
	b := "Hdd"
	if y.bootEnabled != "Disabled" && y.bootTarget != "None" && y.bootTarget != "" {
		b = y.bootTarget
	}
	y.boots = append(y.boots, b)
	if y.bootEnabled == "Once" {
		y.bootTarget, y.bootEnabled = "None", "Disabled"
	}
}

// patchSystem serves PATCH on a system: only Boot's
// BootSourceOverrideTarget, BootSourceOverrideEnabled and
// BootSourceOverrideMode (UEFI or Legacy) may change; any
// other property, or a value the system does not offer, is a 400 and
// changes nothing. It answers 204 No Content.
func (s *Server) patchSystem(w http.ResponseWriter, id string, body []byte) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		reply(w, http.StatusBadRequest, errorBody("MalformedJSON", "the body is not a JSON object"))
		return
	}
	var boot map[string]string
	for k, v := range req {
		if k != "Boot" {
			reply(w, http.StatusBadRequest, errorBody("PropertyNotWritable", "the property "+k+" is read-only"))
			return
		}
		if err := json.Unmarshal(v, &boot); err != nil {
			reply(w, http.StatusBadRequest, errorBody("PropertyValueTypeError", "Boot is not an object of strings"))
			return
		}
	}
	y := s.lockSystem(w, id)
	if y == nil {
		return
	}
	defer s.mu.Unlock()
	target, enabled, mode := y.bootTarget, y.bootEnabled, y.bootMode
	for k, v := range boot {
		switch k {
		case "BootSourceOverrideTarget":
			if !slices.Contains(bootTargets, v) {
				reply(w, http.StatusBadRequest, errorBody("PropertyValueNotInList", "BootSourceOverrideTarget "+strconv.Quote(v)+" is not offered"))
				return
			}
			target = v
		case "BootSourceOverrideEnabled":
			if v != "Once" && v != "Continuous" && v != "Disabled" {
				reply(w, http.StatusBadRequest, errorBody("PropertyValueNotInList", "BootSourceOverrideEnabled "+strconv.Quote(v)+" is not offered"))
				return
			}
			enabled = v
		case "BootSourceOverrideMode":
			if !slices.Contains(bootModes, v) {
				reply(w, http.StatusBadRequest, errorBody("PropertyValueNotInList", "BootSourceOverrideMode "+strconv.Quote(v)+" is not offered"))
				return
			}
			mode = v
		default:
			reply(w, http.StatusBadRequest, errorBody("PropertyNotWritable", "the property Boot/"+k+" is read-only"))
			return
		}
	}
	y.bootTarget, y.bootEnabled, y.bootMode = target, enabled, mode
	w.WriteHeader(http.StatusNoContent)
}

// Boot returns system id's boot source override: its target and whether
// it is enabled ("Once", "Continuous", "Disabled").
func (s *Server) Boot(id string) (target, enabled string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	y := s.sys(id)
	return y.bootTarget, y.bootEnabled
}

// Boots returns what each boot of system id booted from (a reset or power
// on that turns it on: "Pxe", "Hdd", ...); a one-time override is used by
// the first boot after it was set.
func (s *Server) Boots(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sys(id).boots)
}

// reported is what the system reports as its PowerState; s.mu held.
func (y *system) reported() string {
	if y.final != "" {
		return y.showing
	}
	return y.power
}

// switching reports whether system id is in a transition; s.mu held.
func (s *Server) switching(id string) bool { return s.sys(id).final != "" }

// PowerState returns the PowerState system id reports now. It panics for
// a system the server does not have.
func (s *Server) PowerState(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sys(id).reported()
}

// SetPowerState makes system id report v from now on, ending any pending
// transition. v may be any value, such as "Paused" or "PoweringOff".
func (s *Server) SetPowerState(id, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	y := s.sys(id)
	y.power, y.final = v, ""
}

// Truth returns system id's true power state: on or off, or unknown while
// it is switching (whatever it reports) or reports anything else.
func (s *Server) Truth(id string) fence.State {
	s.mu.Lock()
	ps, sw := s.sys(id).reported(), s.switching(id)
	s.mu.Unlock()
	if sw {
		return fence.StateUnknown
	}
	switch ps {
	case PowerOn:
		return fence.StateOn
	case PowerOff:
		return fence.StateOff
	}
	return fence.StateUnknown
}

// SetTruth turns system id on or off at once, ending any pending
// transition.
func (s *Server) SetTruth(id string, st fence.State) {
	switch st {
	case fence.StateOn:
		s.SetPowerState(id, PowerOn)
	case fence.StateOff:
		s.SetPowerState(id, PowerOff)
	default:
		panic("redfishsim: SetTruth takes on or off")
	}
}

// Inject adds a fault; the returned function removes it. Faults are
// checked in the order they were added; the first that matches a request
// applies.
func (s *Server) Inject(f Fault) (remove func()) {
	e := &faultEntry{Fault: f, left: f.Times}
	if f.Times <= 0 {
		e.left = -1
	}
	e.Path = strings.TrimRight(e.Path, "/")
	s.mu.Lock()
	s.faults = append(s.faults, e)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.faults = slices.DeleteFunc(s.faults, func(x *faultEntry) bool { return x == e })
	}
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Requests returns how many requests of method on path the server received
// (path without a trailing slash); method "" counts every method.
func (s *Server) Requests(method, path string) int {
	path = cleanPath(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if method != "" {
		return s.counts[method+" "+path]
	}
	n := 0
	for k, c := range s.counts {
		if _, p, _ := strings.Cut(k, " "); p == path {
			n += c
		}
	}
	return n
}

// TotalRequests returns how many requests the server received.
func (s *Server) TotalRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// RequestCounts returns the count of requests per "METHOD /path".
func (s *Server) RequestCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// Connections returns how many connections the server accepted.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Resets returns the resets the server accepted, in order.
func (s *Server) Resets() []Reset {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resets)
}

// Sessions returns how many sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// DropSessions ends every session, as a service does when sessions time
// out or it restarts: their tokens are refused from now on.
func (s *Server) DropSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

// ResetCounters sets the request, connection and reset counters to zero.
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.counts)
	s.total = 0
	s.resets = nil
	s.conns.Store(0)
}

func cleanPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if p = strings.TrimRight(p, "/"); p == "" {
		p = "/"
	}
	return p
}

// fault returns the first fault of one of kinds that matches the request,
// counting it as applied; s.mu held.
func (s *Server) fault(method, path string, kinds ...FaultKind) *faultEntry {
	for i, f := range s.faults {
		if !slices.Contains(kinds, f.Kind) || (f.Method != "" && !strings.EqualFold(f.Method, method)) ||
			(f.Path != "" && f.Path != path) {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return f
	}
	return nil
}

// errorBody is a Redfish error reply.
func errorBody(id, msg string) map[string]any {
	return map[string]any{"error": map[string]any{
		"code": "Base.1.15.0." + id, "message": msg,
		"@Message.ExtendedInfo": []map[string]any{{
			"@odata.type": "#Message.v1_1_1.Message",
			"MessageId":   "Base.1.15.0." + id, "Message": msg, "Severity": "Critical",
		}},
	}}
}

// reply writes a JSON reply in one piece.
func reply(w http.ResponseWriter, code int, body any, hdr ...string) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			panic(err)
		}
	}
	h := w.Header()
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	h.Set("OData-Version", "4.0")
	h.Set("Cache-Control", "no-cache")
	if b != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	if code != http.StatusNoContent {
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.WriteHeader(code)
	if len(b) > 0 {
		w.Write(b)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := cleanPath(r.URL.Path)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))

	s.mu.Lock()
	s.counts[r.Method+" "+path]++
	s.total++
	f := s.fault(r.Method, path, FaultStatus, FaultBadJSON, FaultHang, FaultCloseConn)
	var ff Fault
	if f != nil {
		ff = f.Fault
	}
	s.mu.Unlock()

	if f != nil {
		switch ff.Kind {
		case FaultStatus:
			code := ff.Code
			if code == 0 {
				code = http.StatusInternalServerError
			}
			reply(w, code, errorBody("InternalError", "injected fault: status "+strconv.Itoa(code)))
			return
		case FaultBadJSON:
			const bad = `{"PowerState": On, "Id": ` + "\n"
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(bad)))
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, bad)
			return
		case FaultHang:
			var after <-chan time.Time
			if ff.Delay > 0 {
				t := time.NewTimer(ff.Delay)
				defer t.Stop()
				after = t.C
			}
			select {
			case <-r.Context().Done():
				// The client gave up: hang up without a reply, never an
				// empty one that a client racing its own cancel could read.
				panic(http.ErrAbortHandler)
			case <-s.done:
				panic(http.ErrAbortHandler)
			case <-after:
			}
		case FaultCloseConn:
			rec := httptest.NewRecorder()
			s.route(rec, r, path, body)
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
	}
	s.route(w, r, path, body)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, path string, body []byte) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "/redfish" && r.Method == http.MethodGet:
		reply(w, http.StatusOK, map[string]string{"v1": "/redfish/v1/"})
		return
	case path == "/redfish/v1" && r.Method == http.MethodGet:
		reply(w, http.StatusOK, serviceRoot)
		return
	case path == "/redfish/v1/SessionService/Sessions" && r.Method == http.MethodPost:
		s.login(w, body)
		return
	case !strings.HasPrefix(path, "/redfish/v1/"):
		reply(w, http.StatusNotFound, errorBody("ResourceNotFound", "no resource at "+path))
		return
	}
	if !s.authorized(r) {
		reply(w, http.StatusUnauthorized, errorBody("InsufficientPrivilege", "authentication required"),
			"WWW-Authenticate", `Basic realm="redfishsim"`)
		return
	}
	switch {
	case path == "/redfish/v1/Systems":
		s.only(w, r, http.MethodGet, s.collection)
	case len(parts) == 4 && parts[2] == "Systems" && r.Method == http.MethodPatch:
		s.patchSystem(w, parts[3], body)
	case len(parts) == 4 && parts[2] == "Systems":
		s.only(w, r, http.MethodGet, func(w http.ResponseWriter) { s.system(w, r, path, parts[3]) })
	case len(parts) == 5 && parts[2] == "Systems" && parts[4] == "ResetActionInfo":
		s.only(w, r, http.MethodGet, func(w http.ResponseWriter) { s.actionInfo(w, parts[3]) })
	case len(parts) == 6 && parts[2] == "Systems" && parts[4] == "Actions" && parts[5] == "ComputerSystem.Reset":
		s.only(w, r, http.MethodPost, func(w http.ResponseWriter) { s.reset(w, r, path, parts[3], body) })
	case path == "/redfish/v1/SessionService":
		s.only(w, r, http.MethodGet, func(w http.ResponseWriter) {
			reply(w, http.StatusOK, map[string]any{
				"@odata.id": path, "@odata.type": "#SessionService.v1_1_8.SessionService",
				"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true,
				"SessionTimeout": 1800, "Sessions": map[string]string{"@odata.id": path + "/Sessions"},
			})
		})
	case path == "/redfish/v1/SessionService/Sessions":
		s.only(w, r, http.MethodGet, s.sessionList)
	case len(parts) == 5 && parts[2] == "SessionService" && parts[3] == "Sessions":
		s.only(w, r, http.MethodDelete, func(w http.ResponseWriter) { s.logout(w, parts[4]) })
	default:
		reply(w, http.StatusNotFound, errorBody("ResourceNotFound", "no resource at "+path))
	}
}

// only runs h for requests of method, and answers 405 to others.
func (s *Server) only(w http.ResponseWriter, r *http.Request, method string, h func(http.ResponseWriter)) {
	if r.Method != method {
		reply(w, http.StatusMethodNotAllowed, errorBody("OperationNotAllowed", r.Method+" is not allowed here"),
			"Allow", method)
		return
	}
	h(w)
}

var serviceRoot = map[string]any{
	"@odata.id":      "/redfish/v1/",
	"@odata.type":    "#ServiceRoot.v1_15_0.ServiceRoot",
	"Id":             "RootService",
	"Name":           "Root Service",
	"RedfishVersion": "1.15.0",
	"UUID":           "6d1c7f0e-5a3b-4c2e-9f11-000000000001",
	"Systems":        map[string]string{"@odata.id": "/redfish/v1/Systems"},
	"SessionService": map[string]string{"@odata.id": "/redfish/v1/SessionService"},
	"Links": map[string]any{
		"Sessions": map[string]string{"@odata.id": "/redfish/v1/SessionService/Sessions"},
	},
}

func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		_, ok := s.sessions[tok]
		return ok
	}
	if s.opts.SessionOnly {
		return false
	}
	h := r.Header.Get("Authorization")
	if len(h) < 6 || !strings.EqualFold(h[:6], "basic ") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
	if err != nil {
		return false
	}
	u, p, _ := bytes.Cut(raw, []byte{':'})
	return s.credentialsOK(string(u), string(p))
}

func (s *Server) credentialsOK(u, p string) bool {
	okU := subtle.ConstantTimeCompare([]byte(u), []byte(s.opts.Username)) == 1
	okP := subtle.ConstantTimeCompare([]byte(p), []byte(s.opts.Password)) == 1
	return okU && okP
}

func (s *Server) login(w http.ResponseWriter, body []byte) {
	var req struct{ UserName, Password string }
	if err := json.Unmarshal(body, &req); err != nil {
		reply(w, http.StatusBadRequest, errorBody("MalformedJSON", "the request body is not JSON"))
		return
	}
	if !s.credentialsOK(req.UserName, req.Password) {
		reply(w, http.StatusUnauthorized, errorBody("NoValidSession", "invalid user name or password"))
		return
	}
	var b [16]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.seq++
	id := strconv.Itoa(s.seq)
	s.sessions[tok] = id
	s.mu.Unlock()
	loc := "/redfish/v1/SessionService/Sessions/" + id
	reply(w, http.StatusCreated, map[string]any{
		"@odata.id": loc, "@odata.type": "#Session.v1_7_0.Session",
		"Id": id, "Name": "User Session", "UserName": req.UserName,
	}, "X-Auth-Token", tok, "Location", loc)
}

func (s *Server) logout(w http.ResponseWriter, id string) {
	s.mu.Lock()
	found := false
	for tok, sid := range s.sessions {
		if sid == id {
			delete(s.sessions, tok)
			found = true
		}
	}
	s.mu.Unlock()
	if !found {
		reply(w, http.StatusNotFound, errorBody("ResourceNotFound", "no session "+id))
		return
	}
	reply(w, http.StatusNoContent, nil)
}

func (s *Server) sessionList(w http.ResponseWriter) {
	s.mu.Lock()
	var ids []string
	for _, id := range s.sessions {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	members := make([]map[string]string, len(ids))
	for i, id := range ids {
		members[i] = map[string]string{"@odata.id": "/redfish/v1/SessionService/Sessions/" + id}
	}
	reply(w, http.StatusOK, map[string]any{
		"@odata.id": "/redfish/v1/SessionService/Sessions", "@odata.type": "#SessionCollection.SessionCollection",
		"Name": "Session Collection", "Members@odata.count": len(members), "Members": members,
	})
}

func (s *Server) collection(w http.ResponseWriter) {
	members := make([]map[string]string, len(s.order))
	for i, id := range s.order {
		members[i] = map[string]string{"@odata.id": s.SystemURI(id)}
	}
	reply(w, http.StatusOK, map[string]any{
		"@odata.id": "/redfish/v1/Systems", "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
		"Name": "Computer System Collection", "Members@odata.count": len(members), "Members": members,
	})
}

func (s *Server) system(w http.ResponseWriter, r *http.Request, path, id string) {
	y := s.lockSystem(w, id)
	if y == nil {
		return
	}
	power := y.reported()
	omit := false
	if f := s.fault(r.Method, path, FaultNoPowerState, FaultPowerState); f != nil {
		if f.Kind == FaultNoPowerState {
			omit = true
		} else {
			power = f.Value
		}
	}
	uri := s.SystemURI(id)
	target := uri + "/Actions/ComputerSystem.Reset"
	if s.opts.AbsoluteTargets {
		target = s.URL() + target
	}
	action := map[string]any{"target": target}
	switch y.Advertise {
	case AdvertiseAllowable:
		action["ResetType@Redfish.AllowableValues"] = slices.Clone(y.ResetTypes)
	case AdvertiseActionInfo:
		action["@Redfish.ActionInfo"] = uri + "/ResetActionInfo"
	}
	doc := map[string]any{
		"@odata.id": uri, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id": id, "Name": y.Name, "SystemType": "Physical",
		"Status":  map[string]string{"State": "Enabled", "Health": "OK"},
		"Actions": map[string]any{"#ComputerSystem.Reset": action},
		"Boot": map[string]any{
			"BootSourceOverrideTarget":                         y.bootTarget,
			"BootSourceOverrideEnabled":                        y.bootEnabled,
			"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
			"BootSourceOverrideMode":                           y.bootMode,
			"BootSourceOverrideMode@Redfish.AllowableValues":   bootModes,
		},
	}
	if y.UUID != "" {
		doc["UUID"] = y.UUID
	}
	s.mu.Unlock()
	if !omit {
		doc["PowerState"] = power
	}
	reply(w, http.StatusOK, doc)
}

func (s *Server) actionInfo(w http.ResponseWriter, id string) {
	s.mu.Lock()
	y := s.systems[id]
	if y == nil || y.Advertise != AdvertiseActionInfo {
		s.mu.Unlock()
		reply(w, http.StatusNotFound, errorBody("ResourceNotFound", "no action info for system "+id))
		return
	}
	types := slices.Clone(y.ResetTypes)
	s.mu.Unlock()
	uri := s.SystemURI(id) + "/ResetActionInfo"
	reply(w, http.StatusOK, map[string]any{
		"@odata.id": uri, "@odata.type": "#ActionInfo.v1_4_0.ActionInfo",
		"Id": "ResetActionInfo", "Name": "Reset Action Info",
		"Parameters": []map[string]any{{
			"Name": "ResetType", "Required": true, "DataType": "String", "AllowableValues": types,
		}},
	})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request, path, id string, body []byte) {
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		reply(w, http.StatusBadRequest, errorBody("MalformedJSON", "the request body is not JSON"))
		return
	}
	raw, ok := req["ResetType"]
	if !ok {
		reply(w, http.StatusBadRequest, errorBody("ActionParameterMissing", "ResetType is required"))
		return
	}
	rt, ok := raw.(string)
	if !ok || !slices.Contains(knownResetTypes, rt) {
		reply(w, http.StatusBadRequest, errorBody("ActionParameterValueError", fmt.Sprintf("ResetType %v is not a reset type", raw)))
		return
	}
	y := s.lockSystem(w, id)
	if y == nil {
		return
	}
	if !slices.Contains(y.ResetTypes, rt) {
		s.mu.Unlock()
		reply(w, http.StatusBadRequest, errorBody("ActionParameterNotSupported", "ResetType "+rt+" is not supported by system "+id))
		return
	}
	cur := y.power
	if y.final != "" {
		cur = y.final
	}
	if s.opts.RefuseNoop && ((cur == PowerOn && (rt == "On" || rt == "ForceOn")) || (cur == PowerOff && rt == "ForceOff")) {
		s.mu.Unlock()
		reply(w, http.StatusConflict, errorBody("NoOperation", "system "+id+" is already "+cur))
		return
	}
	s.resets = append(s.resets, Reset{System: id, Type: rt})
	if f := s.fault(r.Method, path, FaultDropReset); f == nil || (f.Value != "" && f.Value != rt) {
		s.apply(y, rt, cur)
	}
	s.mu.Unlock()
	switch s.opts.ResetStatus {
	case http.StatusOK:
		reply(w, http.StatusOK, map[string]any{"@Message.ExtendedInfo": []map[string]any{{
			"MessageId": "Base.1.15.0.Success", "Message": "The request completed successfully.", "Severity": "OK",
		}}})
	case http.StatusAccepted:
		reply(w, http.StatusAccepted, nil, "Location", "/redfish/v1/TaskService/TaskMonitors/1")
	default:
		reply(w, http.StatusNoContent, nil)
	}
}

// apply carries out reset rt of y, whose state is (or is becoming) cur;
// s.mu held.
func (s *Server) apply(y *system, rt, cur string) {
	final, restart := cur, false
	switch rt {
	case "On", "ForceOn":
		final = PowerOn
	case "ForceOff", "GracefulShutdown":
		final = PowerOff
	case "ForceRestart", "GracefulRestart", "PowerCycle", "FullPowerCycle":
		final, restart = PowerOn, true
	case "PushPowerButton":
		final = PowerOn
		if cur == PowerOn {
			final = PowerOff
		}
	case "Pause", "Suspend":
		final = PowerPaused
	case "Resume":
		final = PowerOn
	}
	if final == cur && !restart {
		return // nothing changes; a transition under way goes on
	}
	if final == PowerOn {
		y.boot()
	}
	if s.opts.PowerDelay <= 0 {
		y.power, y.final = final, ""
		return
	}
	if y.final == "" {
		y.showing = y.power // QuietDelay: what it reported so far
	}
	y.final, y.until = final, time.Now().Add(s.opts.PowerDelay)
	if !s.opts.QuietDelay {
		y.showing = PowerPoweringOn
		if final == PowerOff {
			y.showing = PowerPoweringOff
		}
	}
}
