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
//     level tried when one fails.
//   - Config parses the fence configuration of the Kubernetes node fencing
//     design (ConfigMaps fence-config-<node>, fence-method-<method>-<node> and
//     fence-method-template-<name>) and resolves a node's steps into levels.
//
// Safety rules the package keeps: a nil error from Do means the device
// confirmed the wanted state; Result.Fenced is true only when the device
// confirmed the plug off; an unknown outcome is an error, never a success;
// credentials never appear in errors or log records. The package logs through
// an injected *slog.Logger and reports attempts to an Observer; it never
// prints and depends on no metrics library.
package fence
