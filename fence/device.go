package fence

import "context"

// Device is what a driver implements: read and set the state of one plug.
// A plug names what the device switches: an outlet of a PDU, a port of a
// switch, or, for a BMC that controls one server, usually the empty string.
//
// Drivers report what the device answered and nothing more; verification,
// retries, delays and timeouts are the job of this package (see Do and DoLevels). A
// driver must:
//
//   - honour ctx on every call and return promptly once it is done;
//   - be safe for concurrent use;
//   - return an error wrapping ErrUnknownPlug for a plug the device does not
//     have, never a state;
//   - return StateUnknown with an error when the device's answer is neither on
//     nor off, never a guess;
//   - from Set, wrap an error with NotDone only when the device surely did not
//     act (the request was refused, or never sent); any other error from Set is
//     taken as "outcome unknown".
type Device interface {
	// Status reads the plug's current state.
	Status(ctx context.Context, plug string) (State, error)
	// Set asks the device to put the plug in state s (StateOn or StateOff).
	// A nil error means the device accepted the request, not that the plug
	// is already in that state.
	Set(ctx context.Context, plug string, s State) error
}

// Cycler is implemented by devices with a native power cycle (IPMI chassis
// power cycle, Redfish PowerCycle, an outlet's reboot command). It is used
// for reboots with RebootCycle.
type Cycler interface {
	Cycle(ctx context.Context, plug string) error
}

// SoftOffer is implemented by devices that can ask the operating system to
// shut down gracefully (ACPI soft off, Redfish GracefulShutdown). A soft off
// is never a fence by itself: the engine verifies the off state like any
// other.
type SoftOffer interface {
	SoftOff(ctx context.Context, plug string) error
}

// Plug describes one plug of a device, as listed by a Lister.
type Plug struct {
	// ID is what Status and Set take (an outlet number, a port index).
	ID string
	// Name is the device's label for the plug, if it has one.
	Name string
	// State is the plug's state when the list was read; StateUnknown when
	// the device does not report states in its list.
	State State
}

// Lister is implemented by devices that can list their plugs.
type Lister interface {
	List(ctx context.Context) ([]Plug, error)
}

// Monitor is implemented by devices that can check their own health: the
// device is reachable, the credentials work, and it answers sensibly. It is
// the agents' --action monitor.
type Monitor interface {
	Monitor(ctx context.Context) error
}

// Devices that hold connections implement io.Closer. Close must not block
// for long: a driver bounds its own goodbye (for example a session logout)
// with a short timeout.

// TimeProver is implemented by devices whose off is proven by elapsed
// time, not by a switch they read back: SBD (a message that stood for
// msgwait: the node's watchdog fired). The engine marks their results (Result.ByTime), so that a
// record says how the node was proven off.
type TimeProver interface {
	ProofByTime() bool
}

// PlugNodeAddresses is a plug that stands for the node's own addresses
// (the InternalIP addresses of its Node object): a controller
// (fence/controller) replaces it with them, separated by commas, before
// the method runs, for a driver whose plugs are addresses
// (drivers/cephblock). A node without an address gets an empty plug, which
// such a driver refuses.
const PlugNodeAddresses = "@node-addresses"
