package fake

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "fake", standing in for the agent fence_dummy.
//
// Its parameters are plugs (a count such as "4" for plugs "1" to "4", or a
// comma-separated list of IDs such as "a,b,c"), initial (on or off),
// state_file (see Options.StateFile) and switch_delay (seconds, such as
// "0.5"). The address fake://NAME opens the named device NAME, shared by
// the whole process (see Named): the first Open creates it from its
// parameters, later ones share it and their parameters are only checked.
// Without an address, Open creates a new device.
var Driver = fence.Driver{
	Name:        "fake",
	Description: "In-memory fence device with fault injection, for tests and demonstrations (fence_dummy compatible with state_file)",
	Agents:      []string{"fence_dummy"},
	Params: []fence.ParamSpec{
		{Name: "plugs", Description: `Plugs of the device: a count ("4" for 1 to 4) or a comma-separated list of IDs ("a,b,c")`, Type: "string", Default: "8"},
		{Name: "initial", Description: "State of every plug at first: on or off (not with state_file)", Type: "string", Default: "on"},
		{Name: "state_file", Aliases: []string{"status_file"}, Description: "File that holds the state of the device's single plug, as fence_dummy --status-file", Type: "string"},
		{Name: "switch_delay", Description: "Plugs switch X seconds after a request returns", Type: "second", Default: "0"},
	},
	Ignored: fence.IgnoredParams("fence_dummy",
		fence.ParamSpec{Name: "login_timeout", Type: "string", Default: "5"},
		fence.ParamSpec{Name: "plug_separator", Type: "string", Default: ","},
		fence.ParamSpec{Name: "random_sleep_range", Type: "string"},
		fence.ParamSpec{Name: "type", Type: "string", Default: "file"},
	),
	Check: func(_ fence.Address, p fence.Params) error {
		_, err := OptionsFromParams(p)
		return err
	},
	Open: open,
}

func init() { fence.Register(Driver) }

// maxPlugs bounds the plug count of the plugs parameter.
const maxPlugs = 4096

// OptionsFromParams reads Options from a method's parameters (see Driver).
// Errors are *fence.ParamError values.
func OptionsFromParams(p fence.Params) (Options, error) {
	var o Options
	if v, ok := p.Get("plugs"); ok {
		plugs, err := parsePlugs(v)
		if err != nil {
			return o, err
		}
		o.Plugs = plugs
	}
	if v, ok := p.Get("initial"); ok {
		st, err := fence.ParseState(v)
		if err != nil || !st.Known() {
			return o, &fence.ParamError{Key: "initial", Value: v, Reason: "want on or off"}
		}
		o.Initial = st
	}
	if v, ok := p.Get("state_file", "status_file"); ok {
		if strings.TrimSpace(v) == "" {
			return o, &fence.ParamError{Key: "state_file", Value: v, Reason: "empty"}
		}
		o.StateFile = v
	}
	d, _, err := p.Seconds("switch_delay")
	if err != nil {
		return o, err
	}
	o.SwitchDelay = d
	return o, nil
}

func parsePlugs(v string) ([]string, error) {
	s := strings.TrimSpace(v)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > maxPlugs {
			return nil, &fence.ParamError{Key: "plugs", Value: v, Reason: "not a count from 1 to " + strconv.Itoa(maxPlugs)}
		}
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(i + 1)
		}
		return out, nil
	}
	var out []string
	seen := map[string]bool{}
	for id := range strings.SplitSeq(s, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, &fence.ParamError{Key: "plugs", Value: v, Reason: "empty plug ID"}
		}
		if seen[id] {
			return nil, &fence.ParamError{Key: "plugs", Value: v, Reason: "plug " + strconv.Quote(id) + " listed twice"}
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Params)
	if err != nil {
		return nil, err
	}
	if oo.Address.Host == "" {
		return New(o), nil
	}
	named.mu.Lock()
	defer named.mu.Unlock()
	key := strings.ToLower(oo.Address.Host)
	if d, ok := named.m[key]; ok {
		return d, nil
	}
	d := New(o)
	d.name = key
	named.m[key] = d
	return d, nil
}

// named holds the process's named devices.
var named = struct {
	mu sync.Mutex
	m  map[string]*Device
}{m: map[string]*Device{}}

// Named returns the device that fake://NAME opens, or nil when none was
// opened or created yet. Names are not case-sensitive. Tests use it to
// inject faults into, and look at, the device a method opened.
func Named(name string) *Device {
	named.mu.Lock()
	defer named.mu.Unlock()
	return named.m[strings.ToLower(name)]
}

// NewNamed creates the device that fake://NAME opens from now on, replacing
// (as Forget does) any device of that name.
func NewNamed(name string, o Options) *Device {
	d := New(o)
	d.name = strings.ToLower(name)
	named.mu.Lock()
	old := named.m[d.name]
	named.m[d.name] = d
	named.mu.Unlock()
	if old != nil {
		old.forget()
	}
	return d
}

// Forget drops the named device: the next fake://NAME opens a new one.
// Pending switches of the old device are carried out at once.
func Forget(name string) {
	named.mu.Lock()
	d := named.m[strings.ToLower(name)]
	delete(named.m, strings.ToLower(name))
	named.mu.Unlock()
	if d != nil {
		d.forget()
	}
}

func (d *Device) forget() {
	d.mu.Lock()
	d.flush()
	d.mu.Unlock()
}
