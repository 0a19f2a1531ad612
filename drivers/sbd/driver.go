package sbd

import (
	"context"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "sbd", standing in for fence_sbd. Its parameters:
//
//   - devices (required): the SBD devices, comma-separated (one to three),
//     as fence_sbd's --devices;
//   - plug (port): the node's name, as its slot holds it;
//   - off_message (default off): the message an off writes: off (the node
//     powers itself off), reset (it reboots) or crashdump;
//   - from: the sender's name in the mailbox (default: the host's name).
//
// As fence_sbd's, its defaults are the action reboot, the method cycle (a
// reset message, proven by msgwait; see Device.Cycle) and a power_timeout
// of 30 s. power_timeout must exceed the devices' msgwait: a node is
// reported off only once its message has stood for msgwait, and a shorter
// power_timeout could never see it (Open refuses it). fence_sbd's
// sbd_path, login_timeout and plug_separator are accepted and ignored: the
// driver reads and writes the devices itself, logs in nowhere and takes
// one node.
var Driver = fence.Driver{
	Name:        "sbd",
	Description: "Shared-disk poison pill (SBD): writes the node's fencing message into its slot on the SBD devices and reports it off once the message has stood for msgwait (fence_sbd compatible)",
	Agents:      []string{"fence_sbd"},
	// fence_sbd's defaults: a reboot by a reset message (method cycle),
	// power_timeout 30 s.
	RebootMethod: fence.RebootCycle,
	PowerTimeout: defaultPowerTimeout,
	// Reading a slot of three devices is a few dozen sector reads.
	IOTimeout: 30 * time.Second,
	Params: []fence.ParamSpec{
		{Name: "devices", Description: "SBD devices, comma-separated (one to three)", Type: "string", Required: true},
		{Name: "plug", Aliases: []string{"port"}, Description: "Name of the node, as its SBD slot holds it", Type: "string", Required: true},
		{Name: "off_message", Description: "Message an off writes: off, reset or crashdump", Type: "string", Default: "off"},
		{Name: "from", Description: "Sender's name written with the message (default: the host's name)", Type: "string"},
	},
	Ignored: []fence.ParamSpec{
		{Name: "sbd_path", Description: "Accepted for compatibility with fence_sbd; the driver reads and writes the devices itself", Type: "string", Default: "/usr/sbin/sbd"},
		{Name: "login_timeout", Description: "Accepted for compatibility with fence_sbd; the driver logs in nowhere", Type: "second", Default: "5"},
		{Name: "plug_separator", Description: "Accepted for compatibility with fence_sbd; a method fences one node", Type: "string", Default: ","},
	},
	Check: func(_ fence.Address, p fence.Params) error {
		_, err := optionsFromParams(p)
		return err
	},
	Open: open,
}

func init() { fence.Register(Driver) }

// defaultPowerTimeout is fence_sbd's default power_timeout.
const defaultPowerTimeout = 30 * time.Second

// optionsFromParams reads Options from a method's parameters.
func optionsFromParams(p fence.Params) (Options, error) {
	var o Options
	v, _ := p.Get("devices")
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d != "" {
			o.Devices = append(o.Devices, d)
		}
	}
	if len(o.Devices) == 0 || len(o.Devices) > 3 {
		return o, &fence.ParamError{Key: "devices", Value: v, Reason: "want one to three SBD devices, comma-separated"}
	}
	if m, ok := p.Get("off_message"); ok && m != "" {
		msg, err := ParseMessage(strings.TrimSpace(m))
		if err != nil || !msg.Kills() {
			return o, &fence.ParamError{Key: "off_message", Value: m, Reason: "want off, reset or crashdump"}
		}
		o.OffMessage = msg
	}
	o.From, _ = p.Get("from")
	return o, nil
}

func open(ctx context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := optionsFromParams(oo.Params)
	if err != nil {
		return nil, err
	}
	o.Logger = oo.Logger
	d, err := New(ctx, o)
	if err != nil {
		return nil, err
	}
	h, err := d.Header(ctx)
	if err != nil {
		d.Close()
		return nil, err
	}
	timeout := defaultPowerTimeout
	if t, ok, err := oo.Params.Seconds("power_timeout"); err == nil && ok {
		timeout = t
	}
	if timeout > 0 && timeout <= h.MsgWait { // 0: no bound, as the agents
		d.Close()
		return nil, &fence.ParamError{Key: "power_timeout", Value: timeout.String(),
			Reason: "must exceed the SBD devices' msgwait (" + h.MsgWait.String() + "): a node is off only once its message has stood that long"}
	}
	return d, nil
}
