package agent

import (
	"context"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "agent": it runs the ClusterLabs fence agent named by the
// agent parameter, for every device the agents support beside fencekit's
// native drivers. Its parameters:
//
//   - agent (required): the agent, a name such as fence_apc_snmp or an
//     absolute path (see LookPath);
//   - agent_timeout (seconds, default 60): bounds each run of the agent,
//     whatever the call allows (fence.Do gives each call io_timeout);
//   - agent_check_plugs (boolean, default yes): for an agent that lists its
//     plugs, a plug read off must be in the device's plug list (see
//     Device.Status);
//
// and every parameter of the agent's metadata, checked against it (see
// doc.go for which are passed and how). The address is agent://host[:port]
// or the agent's own ip and ipport parameters. The device Open returns is a
// View; Unwrap recovers the *Device.
//
// fence.Do bounds each call by io_timeout, 10 s by default, and every call
// starts the agent afresh (a Python interpreter, then its login): agents
// that log in over ssh or telnet, or hosts under load, want io_timeout=30
// or so. The engine applies power_wait after each set; an agent's own
// default wait (fence_ipmilan's 2 s, 4 s as fence_ilo3) is not applied
// unless power_wait is set.
var Driver = fence.Driver{
	Name:        fence.AgentDriver,
	Description: "Runs a ClusterLabs fence agent (fence_*), its options on standard input",
	// Every call starts the agent, which starts Python and logs in.
	IOTimeout: 60 * time.Second,
	Params: []fence.ParamSpec{
		{Name: "agent", Description: "The fence agent to run: a name such as fence_apc_snmp (searched in PATH, /usr/sbin, /usr/bin, ...) or an absolute path", Type: "string", Required: true},
		{Name: "agent_timeout", Description: "Bound on each run of the agent, in seconds", Type: "second", Default: "60"},
		{Name: "agent_check_plugs", Description: "Check a plug the agent reads off against the device's plug list, for agents that list their plugs", Type: "boolean", Default: "yes"},
	},
	// The agent's own parameters are checked against its metadata when
	// it opens.
	OpenParams: true,
	Open:       open,
}

func init() { fence.Register(Driver) }

func open(ctx context.Context, oo fence.OpenOptions) (fence.Device, error) {
	name, _ := oo.Params.Get("agent")
	o := Options{Path: name, Params: oo.Params, Logger: oo.Logger}
	if oo.Address.Host != "" {
		o.Address = oo.Address
	}
	if d, ok, err := oo.Params.Seconds("agent_timeout"); err != nil {
		return nil, err
	} else if ok {
		if d <= 0 {
			return nil, &fence.ParamError{Key: "agent_timeout", Value: oo.Params["agent_timeout"], Reason: "not a positive number of seconds"}
		}
		o.Timeout = d
	}
	if b, ok, err := oo.Params.Bool("agent_check_plugs"); err != nil {
		return nil, err
	} else if ok {
		o.NoPlugCheck = !b
	}
	d, err := New(ctx, o)
	if err != nil {
		return nil, err
	}
	return d.View(), nil
}
