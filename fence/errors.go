package fence

import (
	"errors"
	"strings"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels, checked with errors.Is. ErrNotDone and ErrOutcomeUnknown tell a
// caller what it may do next (use IsNotDone and IsOutcomeUnknown, which let
// doubt win when an error carries both):
//
//   - ErrNotDone: the action surely did not take effect (the device refused it,
//     or the request never left). Retrying, or falling through to the next
//     method or level, is safe.
//   - ErrOutcomeUnknown: the action may or may not have taken effect (a
//     request timed out after it was sent, the connection dropped, the state
//     did not settle within the power timeout). Re-read the state before
//     anything else; never take it for a success.
var (
	ErrNotDone        = errors.New("surely not done")
	ErrOutcomeUnknown = errors.New("outcome unknown")

	// ErrUnknownPlug means the device has no such plug (outlet, port).
	ErrUnknownPlug = errors.New("unknown plug")
	// ErrUnsupported means the device lacks a capability the action needs,
	// such as a native cycle or a plug list.
	ErrUnsupported = errors.New("not supported by the device")
	// ErrTimeout means the plug did not reach the wanted state within the
	// power timeout. It comes with ErrOutcomeUnknown.
	ErrTimeout = errors.New("timed out waiting for the state")
	// ErrBadState means the device answered a state that is neither on nor
	// off (the agents' "Unable to obtain correct plug status").
	ErrBadState = errors.New("device reported no usable state")
	// ErrLoginDenied means the device refused the credentials.
	ErrLoginDenied = errors.New("login denied")
	// ErrUnreachable means the device could not be reached at all.
	ErrUnreachable = errors.New("device unreachable")
	// ErrUnknownDriver means no driver is registered under the name.
	ErrUnknownDriver = errors.New("unknown driver")
	// ErrConfig marks every configuration error (see config.Error).
	ErrConfig = errors.New("bad fence configuration")
	// ErrNotFenced means no level of a topology fenced the node.
	ErrNotFenced = errors.New("node not fenced")
)

// NotDone marks err as "surely not done": the device did not act. Drivers
// use it for errors they know happened before the device could act, such as
// a refused request or a failed login. NotDone(nil) is nil.
func NotDone(err error) error {
	if err == nil {
		return nil
	}
	return &classed{err: err, class: ErrNotDone}
}

// OutcomeUnknown marks err as "outcome unknown". OutcomeUnknown(nil) is nil.
func OutcomeUnknown(err error) error {
	if err == nil {
		return nil
	}
	return &classed{err: err, class: ErrOutcomeUnknown}
}

// IsNotDone reports whether err says the action surely did not happen: it
// wraps ErrNotDone and not ErrOutcomeUnknown (doubt wins over certainty, so
// an error joining both is unknown).
func IsNotDone(err error) bool {
	return errors.Is(err, ErrNotDone) && !errors.Is(err, ErrOutcomeUnknown)
}

// IsOutcomeUnknown reports whether err leaves the outcome unknown. An error
// that carries neither mark counts as unknown: only a marked "not done" is
// safe to take as not done.
func IsOutcomeUnknown(err error) bool {
	return err != nil && !IsNotDone(err)
}

type classed struct {
	err   error
	class error
}

func (c *classed) Error() string {
	msg := c.err.Error()
	if strings.Contains(msg, c.class.Error()) {
		return msg
	}
	return msg + " (" + c.class.Error() + ")"
}

func (c *classed) Unwrap() []error { return []error{c.err, c.class} }

// Error is the error of one method's action: it names the node, the method,
// the driver, the plug and the operation that failed, and wraps the cause.
// It never holds credentials: drivers must not put them in their errors, and
// parameters are only ever named, never quoted, by this package.
type Error struct {
	Node   string // the node being fenced, if known
	Method string // the method's name, such as "eaton-off"
	Driver string // the driver's name, such as "ipmi"
	Host   string // the device's host or host:port, if known
	Plug   string // the plug acted on
	Action Action // the action asked for
	Op     string // what failed: "status", "set", "cycle", "soft-off", "verify", "list", "monitor", "open"
	Field  string // the parameter at fault, when one is
	Err    error
}

func (e *Error) Error() string {
	var b errfmt.Labels
	b.Start("fence").Add("node", e.Node).Add("method", e.Method).AddRaw("driver", e.Driver).
		Add("host", e.Host).Add("plug", e.Plug).AddRaw("field", e.Field)
	if e.Action != ActionNone {
		b.Part(e.Action.String())
	}
	if e.Op != e.Action.String() {
		b.Part(e.Op)
	}
	return b.Cause(e.Err, "failed")
}

func (e *Error) Unwrap() error { return e.Err }
