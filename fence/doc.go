// Package fence is the core of fencekit: it makes a node safe by switching
// off its power or cutting it from its storage, and reports success only when
// the device has confirmed it.
//
// The pieces, from the bottom up:
//
//   - Device is what a driver implements: read and set the state of a plug
//     (an outlet, a port, a BMC's chassis). Optional capabilities (Cycler,
//     SoftOffer, Lister, Monitor, io.Closer) are found by type assertion.
//   - A Registry maps driver names, URL schemes and ClusterLabs agent names to
//     drivers; Registry.Open turns a method's parameters into a Method.
//   - Do carries out a verified action on a Method with the semantics of the
//     ClusterLabs fence agents (lib/fencing.py): read first, set, wait, poll
//     until the device confirms or the power timeout passes, retry. It returns
//     a Result with every attempt, and an error that tells "surely not done"
//     (ErrNotDone) from "outcome unknown" (ErrOutcomeUnknown).
//   - DoLevels runs a fencing topology: ordered levels of methods, the next
//     level tried when one fails. Within a level, PlanLevel orders the
//     switches; DoPhase carries out one of them.
//   - A Fencer runs a node's levels as one operation (Fence, Unfence,
//     Status), for a host that fences nodes rather than methods.
//
// Around it: package fence/config reads the fence configuration of the
// Kubernetes node-fencing design (its ConfigMaps) and turns a node's steps
// into levels; fence/flow is the NodeFence record and the pure function
// that moves it on; fence/controller runs that flow for every node.
//
// # What "fenced" means for each level shape
//
// A level is run as Pacemaker runs a topology level of several devices:
// every off first (methods in order, each verified by its device), then
// every on. The node counts as fenced by a level only when every method
// that must succeed (not BestEffort) and switches something off has its
// device confirm the off, and at least one method does, all before any
// device of the level is switched on again. The fence controller runs the
// same plan one persisted switch at a time, and releases the node's pods
// between the offs and the ons, while the node is verified off
// (fence/controller).
//
//	level (action asked)                | switches, in order         | fenced when                 | a failed on after the offs
//	------------------------------------+----------------------------+-----------------------------+---------------------------
//	bmc (off)                           | bmc off                    | bmc confirmed off           | -
//	bmc (reboot: no action=, or reboot) | bmc off, bmc on            | bmc confirmed off           | fenced, OnErr reported
//	eaton-off eaton-on (action=off, on) | eaton-off off, eaton-on on | eaton-off confirmed off     | fenced, OnErr reported
//	pdu-a pdu-b (reboot)                | A off, B off, A on, B on   | A and B both confirmed off  | fenced, OnErr reported
//	pdu-a pdu-b (off)                   | A off, B off               | A and B both confirmed off  | -
//	notify (best effort) pdu (reboot)   | notify off, pdu off, ons   | pdu confirmed off           | fenced, OnErr reported
//	fc-on (reboot or off)               | nothing                    | never: nothing switches off | -
//	fc-on (on: recovery)                | fc-on on                   | - (not a fencing)           | the level fails
//
// A required off that fails fails the level: its ons are not run and the
// devices it switched off stay off (switching them on could only re-power
// a node that is not proven fenced); the next level is tried. A reboot in a
// level is always an off then an on, never the device's native cycle (a
// cycle cannot prove the plug was off). A failed on after the offs does not
// undo the fence: as with the agents' reboot, the level succeeds and the
// error is reported beside it (LevelResult.OnErr, TopologyResult.OnErr; in
// the controller, NodeFence.OnError and a FencePowerOnFailed event), and
// the node stays off.
//
// Safety rules the package keeps: a nil error from Do means the device
// confirmed the wanted state; Result.Fenced is true only when the device
// confirmed the plug off; an unknown outcome is an error, never a success;
// credentials never appear in errors or log records. The package logs through
// an injected *slog.Logger and reports attempts to an Observer; it never
// prints and depends on no metrics library.
package fence
