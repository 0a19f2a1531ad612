package fence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ParamSpec describes one parameter a driver takes, for validation, for
// fencectl's --help and for --action metadata.
type ParamSpec struct {
	Name        string // canonical key, such as "ipport"
	Aliases     []string
	Description string
	Type        string // "string", "integer", "boolean" or "second"
	Default     string
	Required    bool
	Secret      bool // never printed; Secret is implied by IsSecret(Name)
}

// OpenOptions is what a driver's Open receives.
type OpenOptions struct {
	// Address is where the device listens; Address.Port is 0 when not
	// given, and the driver applies its default port.
	Address Address
	// Params holds every parameter of the method (credentials included),
	// canonical keys.
	Params Params
	// Logger is the host application's logger; never nil.
	Logger *slog.Logger
}

// Driver is a registered device driver.
type Driver struct {
	// Name is the driver's name and its URL scheme ("ipmi", "redfish").
	Name string
	// Description is one line for --help and metadata.
	Description string
	// Agents are the ClusterLabs agent names the driver stands in for
	// ("fence_ipmilan"), so the node-fencing design's agent_name selects it.
	Agents []string
	// Params lists the driver's own parameters, beyond the common ones
	// (CommonParams).
	Params []ParamSpec
	// Ignored lists the options of the agents the driver stands in for
	// that mean nothing to it (they name a program it does not run:
	// ipmitool_path, sudo, snmpget_path, ...): accepted and ignored, as
	// the agents ignore what they do not use, so that a configuration or
	// command line written for the agent works unchanged.
	Ignored []ParamSpec
	// OpenParams is set by a driver that takes parameters beyond Params
	// and checks them itself when it opens (the agent driver, against the
	// agent's metadata): Config.Validate then leaves them to it instead
	// of refusing them as unknown.
	OpenParams bool
	// Check, when set, reads a method's address and parameters as Open
	// would, without any I/O, and returns the first problem
	// (Config.Validate reports it with the ConfigMap and key at fault):
	// values out of range, settings that contradict each other.
	Check func(a Address, p Params) error
	// IOTimeout, when set, is the default of a method's io_timeout for
	// this driver: how long one device call may take. Drivers whose calls
	// start a process or log in each time need more than DefaultIOTimeout.
	IOTimeout time.Duration
	// PowerTimeout, when set, is the default of a method's power_timeout
	// for this driver (the agent it stands in for has another default
	// than the common 20 s, or its devices need longer).
	PowerTimeout time.Duration
	// RebootMethod is the default of a method's method parameter for this
	// driver: RebootOnOff (the zero value) as most agents, RebootCycle for
	// a driver whose agent cycles by default and whose device's Cycle
	// proves the node went down (a Cycler).
	RebootMethod RebootMethod
	// DefaultAction is the action a command-line front end uses when none
	// is given: ActionNone means the agents' default, reboot; a fabric
	// fencing driver, which cannot reboot, says ActionOff.
	DefaultAction Action
	// Open opens a device. It should not block on the network for longer
	// than ctx allows; many drivers connect lazily on first use.
	Open func(ctx context.Context, o OpenOptions) (Device, error)
}

// IgnoredParams returns params, options of agent that mean nothing to a
// native driver, for Driver.Ignored: each described as accepted for
// compatibility with agent and not used, unless it has a description of
// its own.
func IgnoredParams(agent string, params ...ParamSpec) []ParamSpec {
	out := make([]ParamSpec, len(params))
	for i, p := range params {
		if p.Description == "" {
			p.Description = "Accepted for compatibility with " + agent + "; not used by the native driver"
		}
		out[i] = p
	}
	return out
}

// CheckParams returns a Driver.Check that reads a method's address and
// parameters with read, the function the driver's Open reads its options
// with, and returns read's error.
func CheckParams[O any](read func(Address, Params) (O, error)) func(Address, Params) error {
	return func(a Address, p Params) error {
		_, err := read(a, p)
		return err
	}
}

// defaults returns the engine options the driver's methods start from,
// before their parameters.
func (d *Driver) defaults() Options {
	return Options{IOTimeout: d.IOTimeout, PowerTimeout: d.PowerTimeout, RebootMethod: d.RebootMethod}
}

// Registry maps driver names, schemes and agent names to drivers. The zero
// value is not usable: use NewRegistry, or the package's default registry
// through Register and DefaultRegistry.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]*Driver
	byAgent map[string]*Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*Driver{}, byAgent: map[string]*Driver{}}
}

var defaultRegistry = NewRegistry()

// DefaultRegistry returns the registry that drivers join from their init
// functions (import a driver package for its side effect to register it).
func DefaultRegistry() *Registry { return defaultRegistry }

// Register adds d to the default registry. It panics when the name is
// taken or d is incomplete, as database/sql.Register does.
func Register(d Driver) {
	if err := defaultRegistry.Register(d); err != nil {
		panic(err)
	}
}

// Register adds d to r.
func (r *Registry) Register(d Driver) error {
	name := strings.ToLower(d.Name)
	if name == "" || d.Open == nil {
		return fmt.Errorf("fence: register: a driver needs a name and an Open function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("fence: register: driver %q registered twice", name)
	}
	for _, a := range d.Agents {
		if o, dup := r.byAgent[strings.ToLower(a)]; dup {
			return fmt.Errorf("fence: register: agent name %q is claimed by drivers %q and %q", a, o.Name, name)
		}
	}
	d.Name = name
	p := &d
	r.byName[name] = p
	for _, a := range d.Agents {
		r.byAgent[strings.ToLower(a)] = p
	}
	return nil
}

// Lookup finds a driver by its name (the scheme's driver part) or by a
// ClusterLabs agent name it stands in for.
func (r *Registry) Lookup(name string) (*Driver, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if i := strings.IndexByte(name, '+'); i >= 0 {
		name = name[:i]
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d, ok := r.byName[name]; ok {
		return d, true
	}
	d, ok := r.byAgent[name]
	return d, ok
}

// Resolve finds the driver a method names, as Open does: by Lookup, or,
// for a ClusterLabs agent name (fence_*) that no native driver stands in
// for, the agent driver (AgentDriver) when it is registered, with the agent
// parameter set to that name in the returned copy of p.
func (r *Registry) Resolve(name string, p Params) (*Driver, Params, bool) {
	if d, ok := r.Lookup(name); ok {
		return d, p, true
	}
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(name)), "fence_") {
		return nil, p, false
	}
	ad, ok := r.Lookup(AgentDriver)
	if !ok {
		return nil, p, false
	}
	if _, set := p.Get("agent"); !set {
		p = p.Clone()
		if p == nil {
			p = Params{}
		}
		p.Set("agent", strings.TrimSpace(name))
	}
	return ad, p, true
}

// Drivers returns the registered drivers sorted by name.
func (r *Registry) Drivers() []*Driver {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Driver, 0, len(r.byName))
	for _, d := range r.byName {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Driver) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AgentDriver is the name of the driver that runs a ClusterLabs fence
// agent itself (drivers/agent). Registry.Open falls back to it for an agent
// name (fence_*) that no native driver stands in for.
const AgentDriver = "agent"

// CommonParams are the parameters every method understands, with the
// agents' names and aliases. Drivers add their own (Driver.Params).
var CommonParams = []ParamSpec{
	{Name: "address", Description: "Device address as a URL (ipmi://host:623, redfish+https://host/...); alternative to ip and ipport", Type: "string"},
	{Name: "ip", Aliases: []string{"ipaddr"}, Description: "IP address or hostname of the fence device", Type: "string"},
	{Name: "ipport", Description: "TCP/UDP port of the fence device", Type: "integer"},
	{Name: "username", Aliases: []string{"login"}, Description: "Login name", Type: "string"},
	{Name: "password", Aliases: []string{"passwd"}, Description: "Login password", Type: "string", Secret: true},
	{Name: "plug", Aliases: []string{"port"}, Description: "Plug (outlet, port) that feeds or connects the node", Type: "string"},
	{Name: "action", Description: "Fencing action: on, off, reboot, status, list, monitor", Type: "string", Default: "reboot"},
	{Name: "method", Description: "Method to reboot: onoff or cycle", Type: "string", Default: "onoff"},
	{Name: "power_timeout", Description: "Test X seconds for status change after ON/OFF", Type: "second", Default: "20"},
	{Name: "power_wait", Description: "Wait X seconds after issuing ON/OFF", Type: "second", Default: "0"},
	{Name: "stonith_status_sleep", Description: "Sleep X seconds between status calls during a STONITH action", Type: "second", Default: "1"},
	{Name: "retry_on", Description: "Count of attempts to retry power on", Type: "integer", Default: "1"},
	{Name: "retry_off", Description: "Count of attempts to retry power off (fencekit; the agents never retry an off)", Type: "integer", Default: "0"},
	{Name: "delay", Description: "Wait X seconds before fencing is started", Type: "second", Default: "0"},
	{Name: "min_off", Description: "In a reboot, hold the plug off at least X seconds after its off is confirmed before switching it on; 0: no hold (fencekit)", Type: "second", Default: "2"},
	{Name: "io_timeout", Aliases: []string{"shell_timeout"}, Description: "Wait X seconds for one answer of the device", Type: "second", Default: "10"},
	{Name: "soft", Description: "Try a graceful shutdown before a hard power off", Type: "boolean", Default: "no"},
	{Name: "verify_identity", Description: "Before an off, check that the device's machine is the node's (its system UUID), where the device can tell (fencekit)", Type: "boolean", Default: "yes"},
	{Name: "ssl_insecure", Description: "Use SSL connection without verifying certificate", Type: "boolean", Default: "no"},
}

// OptionsFromParams reads the verification options from a method's
// parameters (power_timeout, power_wait, stonith_status_sleep, retry_on,
// retry_off, delay, min_off, io_timeout, method, soft, verify_identity). Unset keys keep base's value.
func OptionsFromParams(base Options, p Params) (Options, error) {
	o := base
	secs := []struct {
		key string
		dst *time.Duration
	}{
		{"power_timeout", &o.PowerTimeout},
		{"power_wait", &o.PowerWait},
		{"stonith_status_sleep", &o.PollInterval},
		{"delay", &o.Delay},
		{"io_timeout", &o.IOTimeout},
		{"shell_timeout", &o.IOTimeout},
	}
	for _, s := range secs {
		d, ok, err := p.Seconds(s.key)
		if err != nil {
			return o, err
		}
		if ok {
			if d > MaxWait {
				v, _ := p.Get(s.key)
				return o, &ParamError{Key: s.key, Value: v, Reason: fmt.Sprintf("more than %v", MaxWait)}
			}
			*s.dst = d
		}
	}
	for _, k := range []string{"retry_on", "retry_off"} {
		if n, ok, err := p.Int(k); err == nil && ok && n > MaxRetry {
			return o, &ParamError{Key: k, Value: p[k], Reason: fmt.Sprintf("more than %d", MaxRetry)}
		}
	}
	if n, ok, err := p.Int("retry_on"); err != nil {
		return o, err
	} else if ok {
		if n < 0 {
			return o, &ParamError{Key: "retry_on", Value: p["retry_on"], Reason: "negative"}
		}
		o.RetryOn = n
		if n == 0 {
			o.RetryOn = NoRetry
		}
	}
	if n, ok, err := p.Int("retry_off"); err != nil {
		return o, err
	} else if ok {
		if n < 0 {
			return o, &ParamError{Key: "retry_off", Value: p["retry_off"], Reason: "negative"}
		}
		o.RetryOff = n
	}
	if v, ok := p.Get("method"); ok {
		m, err := ParseRebootMethod(v)
		if err != nil {
			return o, &ParamError{Key: "method", Value: v, Reason: "want onoff or cycle"}
		}
		o.RebootMethod = m
	}
	if d, ok, err := p.Seconds("min_off"); err != nil {
		return o, err
	} else if ok {
		if d > MaxWait {
			v, _ := p.Get("min_off")
			return o, &ParamError{Key: "min_off", Value: v, Reason: fmt.Sprintf("more than %v", MaxWait)}
		}
		o.MinOff = d
		if d == 0 {
			o.MinOff = NoMinOff
		}
	}
	if b, ok, err := p.Bool("soft"); err != nil {
		return o, err
	} else if ok {
		o.Soft = b
	}
	if b, ok, err := p.Bool("verify_identity"); err != nil {
		return o, err
	} else if ok {
		o.SkipIdentity = !b
	}
	return o, nil
}

// AddressFromParams returns the device address of a method: the address
// parameter when set, else ip (or ipaddr) and ipport.
func AddressFromParams(p Params) (Address, string, error) {
	if v, ok := p.Get("address"); ok {
		a, err := ParseAddress(v)
		if err != nil {
			return a, "address", err
		}
		return a, "", nil
	}
	ip, ok := p.Get("ip", "ipaddr")
	if !ok || strings.TrimSpace(ip) == "" {
		return Address{}, "", nil
	}
	a, err := ParseAddress(ip)
	if err != nil {
		return a, "ip", err
	}
	if a.Driver != "" {
		// ip= holds a full URL: take it as given.
		return a, "", nil
	}
	// Without a scheme, ip= is a host (and port): checked as one, so that
	// a typo does not reach a device as some other name.
	if a.Path != "" || len(a.Query) > 0 {
		return a, "ip", fmt.Errorf("%w: ip holds a host name or address, not a path or query (give address=SCHEME://HOST/PATH for a URL)", errAddress)
	}
	if err := CheckHost(a.Host); err != nil {
		return a, "ip", err
	}
	if n, ok, err := p.Int("ipport"); err != nil {
		return a, "ipport", err
	} else if ok {
		if n < 1 || n > 65535 {
			return a, "ipport", &ParamError{Key: "ipport", Value: p["ipport"], Reason: "not a port from 1 to 65535"}
		}
		a.Port = n
	}
	return a, "", nil
}

// MethodOptions is what opening a method takes besides its device's URL.
// The zero value (or nil) works: a method with no name, for no node, with
// the driver the URL's scheme names.
type MethodOptions struct {
	// Node is the node the method fences, for errors and results.
	Node string
	// Name is the method's name, for errors and events ("pdu-off").
	Name string
	// Driver names the driver (a name, a scheme or a ClusterLabs agent
	// name such as fence_ipmilan); when empty, the URL's scheme picks it.
	Driver string
	// Params holds the method's parameters: credentials (never in the
	// URL), plug, the verification options (power_timeout, retry_on, ...)
	// and the driver's own. Without a URL, the address is read from them
	// as the agents take it (address, or ip and ipport).
	Params Params
	// Logger is the host application's logger; nil discards.
	Logger *slog.Logger
	// SystemUUID is the node's machine identity (Method.SystemUUID): an
	// off switches nothing on a device whose machine is another.
	SystemUUID string
}

// Open opens the device at url through the default registry and returns it
// as a Method ready for Do (see Registry.Open). Close the Method when done.
func Open(ctx context.Context, url string, o *MethodOptions) (*Method, error) {
	return defaultRegistry.Open(ctx, url, o)
}

// Open opens the device at url ("ipmi://10.0.0.5:623",
// "redfish+https://bmc/redfish/v1/Systems/1", "apc://pdu-a:161") with the
// driver its scheme (or o.Driver) names, and returns it as a Method ready
// for Do that owns the device: Close it when done. An empty url takes the
// address from o.Params. Credentials go in o.Params, never in the URL (a
// URL with user information is refused whole). Errors are *Error values
// naming node, method and the field at fault, and are NotDone: nothing was
// switched.
func (r *Registry) Open(ctx context.Context, url string, o *MethodOptions) (*Method, error) {
	if o == nil {
		o = &MethodOptions{}
	}
	node, method, driver, p, logger := o.Node, o.Name, o.Driver, o.Params, o.Logger
	var host string
	fail := func(field string, err error) (*Method, error) {
		return nil, &Error{Node: node, Method: method, Driver: driver, Host: host, Op: "open", Field: field, Err: NotDone(err)}
	}
	var (
		addr  Address
		field string
		err   error
	)
	if strings.TrimSpace(url) != "" {
		if _, has := p.Get("address", "ip", "ipaddr", "ipport"); has {
			return fail("address", fmt.Errorf("%w: the address is given both as the URL and in the parameters", ErrConfig))
		}
		addr, err = ParseAddress(url)
		field = "address"
	} else {
		addr, field, err = AddressFromParams(p)
	}
	if err != nil {
		return fail(field, err)
	}
	host = addr.Host
	if driver == "" {
		driver = addr.Driver
	}
	if driver == "" {
		return fail("driver", fmt.Errorf("%w: no driver named, and the address has no scheme", ErrConfig))
	}
	d, p, ok := r.Resolve(driver, p)
	if !ok {
		return fail("driver", fmt.Errorf("%w %q", ErrUnknownDriver, driver))
	}
	driver = d.Name
	if addr.Driver != "" && addr.Driver != d.Name {
		if ad, ok := r.Lookup(addr.Driver); !ok || ad != d {
			return fail("address", fmt.Errorf("%w: address scheme %q does not match driver %q", ErrConfig, addr.Scheme(), d.Name))
		}
	}
	if addr.Driver == "" {
		addr.Driver = d.Name
	}
	opts, err := OptionsFromParams(d.defaults(), p)
	if err != nil {
		var pe *ParamError
		if errors.As(err, &pe) {
			field = pe.Key
		}
		return fail(field, err)
	}
	act := ActionNone
	if v, ok := p.Get("action"); ok && strings.TrimSpace(v) != "" {
		a, err := ParseAction(v)
		if err != nil {
			return fail("action", err)
		}
		act = a
	}
	if logger == nil {
		logger = discardLogger
	}
	opts.Logger = logger
	dev, err := d.Open(ctx, OpenOptions{Address: addr, Params: p, Logger: logger})
	if err != nil {
		var pe *ParamError
		if errors.As(err, &pe) {
			field = pe.Key
		}
		return fail(field, err)
	}
	plug, _ := p.Get("plug", "port")
	best := false
	for _, k := range []string{"must_succeed", "must_sucess"} { // the node-fencing design spells it must_sucess
		if b, ok, err := p.Bool(k); err != nil {
			return fail(k, err)
		} else if ok {
			best = !b
			break
		}
	}
	host = addr.Host
	if addr.Port != 0 {
		host = net.JoinHostPort(addr.Host, strconv.Itoa(addr.Port))
	}
	return &Method{Name: method, Node: node, Driver: d.Name, Host: host, Device: dev, Plug: plug, Action: act, BestEffort: best, Options: opts, SystemUUID: o.SystemUUID}, nil
}
