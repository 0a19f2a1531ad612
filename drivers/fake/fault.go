package fake

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/enum"
)

// Op names a Device method, for Fault.Op and Calls.
type Op uint8

// The operations of a Device. OpAny, the zero value, matches every
// operation in a Fault (except Close, which never fails) and counts every
// call in Calls.
const (
	OpAny Op = iota
	OpStatus
	OpSet
	OpCycle
	OpSoftOff
	OpList
	OpMonitor
	OpBoot
	OpClose
	numOps
)

var opNames = [...]string{
	OpAny:     "any",
	OpStatus:  "status",
	OpSet:     "set",
	OpCycle:   "cycle",
	OpSoftOff: "soft-off",
	OpList:    "list",
	OpMonitor: "monitor",
	OpBoot:    "boot",
	OpClose:   "close",
}

// String returns the operation's name ("status", "set", ...).
func (o Op) String() string {
	return enum.Name(opNames[:], o, "op")
}

// acts reports whether the operation asks the device to switch a plug.
func (o Op) acts() bool { return o == OpSet || o == OpCycle || o == OpSoftOff || o == OpBoot }

// Kind is what an injected fault does.
type Kind uint8

// The kinds of faults. The zero Kind is not valid: Inject panics on it.
const (
	// Fail makes the call fail with an error marked fence.NotDone: the
	// device refused and did nothing. The error wraps Fault.Err when set.
	Fail Kind = iota + 1
	// Hang blocks the call until its context ends, then returns the
	// context's error. From Set, Cycle and SoftOff the error is marked
	// fence.OutcomeUnknown (never fence.NotDone): a hung request may have
	// reached the device. Nothing is switched.
	Hang
	// Delay sleeps Fault.Delay (honouring the context), then the call goes
	// on as if the fault were not there: later faults still apply.
	Delay
	// Lie makes Status (and the states of List) report Fault.State instead
	// of the truth, with no error.
	Lie
	// Flap makes Status (and the states of List) alternate on, off, on, ...
	// on every call, whatever the truth. Each plug has its own alternation,
	// which starts with on.
	Flap
	// Unknown makes Set, Cycle and SoftOff return an error that is not
	// marked fence.NotDone (it is marked fence.OutcomeUnknown); the request
	// took effect if and only if Fault.Acted. Other calls fail with such an
	// error and do nothing.
	Unknown
	// Down makes every call fail with an error wrapping fence.ErrUnreachable,
	// marked fence.NotDone, as an unreachable device does.
	Down
	// Ignore makes Set, Cycle and SoftOff return nil while the plug does not
	// switch.
	Ignore
	// BadState makes Status return fence.StateUnknown with an error wrapping
	// fence.ErrBadState (the device answered something that is neither on
	// nor off), List report every state as fence.StateUnknown, and Monitor
	// fail with such an error.
	BadState
	numKinds
)

var kindNames = [...]string{
	Fail:     "fail",
	Hang:     "hang",
	Delay:    "delay",
	Lie:      "lie",
	Flap:     "flap",
	Unknown:  "unknown",
	Down:     "down",
	Ignore:   "ignore",
	BadState: "bad-state",
}

// String returns the kind's name ("fail", "hang", ...).
func (k Kind) String() string {
	return enum.Name(kindNames[:], k, "kind")
}

// appliesTo reports whether a fault of kind k has any effect on op; a fault
// that has none neither matches nor uses up its Times on such a call.
func (k Kind) appliesTo(op Op) bool {
	switch k {
	case Fail, Hang, Delay, Unknown, Down:
		return true
	case Ignore:
		return op.acts()
	case Lie, Flap:
		return op == OpStatus || op == OpList
	case BadState:
		return op == OpStatus || op == OpList || op == OpMonitor
	}
	return false
}

// Fault is a misbehaviour injected into a Device with Inject.
//
// A fault matches a call when its Op is the call's operation or OpAny, its
// Plugs is nil or holds the call's plug, and its Kind has an effect on that
// operation (a Lie has none on Set, an Ignore none on Status). List and
// Monitor have no plug: only faults with a nil Plugs match them. Close is
// never faulted.
//
// For each call the faults are tried in the order they were injected: every
// matching Delay fault adds its delay and the call goes on to the next
// fault; the first matching fault of any other kind takes effect, and the
// faults after it are not looked at. Each fault that matched uses up one of
// its Times.
type Fault struct {
	// Op is the operation the fault applies to; OpAny (the zero value)
	// means every operation.
	Op Op
	// Plugs limits the fault to these plugs; nil means every plug.
	Plugs []string
	// Kind is what the fault does.
	Kind Kind
	// Times limits the fault to the next Times matching calls, after which
	// it is removed; 0 means every matching call, until removed.
	Times int
	// Delay is slept (honouring the context) before the fault takes effect,
	// for any Kind; for Delay it is the whole fault.
	Delay time.Duration
	// State is what a Lie reports.
	State fence.State
	// Err is the cause a Fail (or an Unknown, Down or BadState) reports; it
	// is wrapped, so errors.Is finds it. A generic error when nil.
	Err error
	// Acted tells, for Unknown, whether the request took effect.
	Acted bool
}

// injected is a fault in a device's list.
type injected struct {
	f    Fault
	left int                    // calls left; <= 0 means unlimited
	flap map[string]fence.State // the next answer of a Flap, per plug
}

// effect is what the faults do to one call.
type effect struct {
	delay time.Duration
	kind  Kind // 0: none
	f     Fault
	flap  fence.State // for Flap: the answer of this call
}

// match finds the faults of a call and uses up their Times. plugged is
// false for the calls without a plug (List, Monitor); plug is canonical.
// d.mu must be held.
func (d *Device) match(op Op, plug string, plugged bool) effect {
	var e effect
	keep := d.faults[:0]
	done := false
	for _, in := range d.faults {
		if done || !d.matches(in.f, op, plug, plugged) {
			keep = append(keep, in)
			continue
		}
		e.delay += in.f.Delay
		if in.f.Kind != Delay {
			e.kind, e.f, done = in.f.Kind, in.f, true
			if in.f.Kind == Flap {
				if in.flap == nil {
					in.flap = map[string]fence.State{}
				}
				key := plug
				if !plugged {
					key = "\x00list"
				}
				e.flap = in.flap[key]
				if e.flap != fence.StateOff {
					e.flap = fence.StateOn
				}
				in.flap[key] = fence.StateOn + fence.StateOff - e.flap
			}
		}
		if in.left > 0 {
			in.left--
			if in.left == 0 {
				continue // used up: drop it
			}
		}
		keep = append(keep, in)
	}
	clear(d.faults[len(keep):])
	d.faults = keep
	return e
}

func (d *Device) matches(f Fault, op Op, plug string, plugged bool) bool {
	if f.Op != OpAny && f.Op != op {
		return false
	}
	if !f.Kind.appliesTo(op) {
		return false
	}
	if f.Plugs == nil {
		return true
	}
	if !plugged {
		return false
	}
	return slices.ContainsFunc(f.Plugs, func(p string) bool { return d.canonical(p) == plug })
}

// Inject adds a fault to the device and returns a function that removes it
// (calling it again, or after the fault was used up, does nothing). It
// panics on a fault with no valid Kind or Op, or one that targets Close.
func (d *Device) Inject(f Fault) (remove func()) {
	if f.Kind == 0 || f.Kind >= numKinds {
		panic(fmt.Sprintf("fake: Inject: invalid fault kind %v", f.Kind))
	}
	if f.Op >= numOps || f.Op == OpClose {
		panic(fmt.Sprintf("fake: Inject: faults do not apply to %v", f.Op))
	}
	f.Plugs = slices.Clone(f.Plugs)
	in := &injected{f: f, left: max(f.Times, 0)}
	d.mu.Lock()
	d.faults = append(d.faults, in)
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if i := slices.Index(d.faults, in); i >= 0 {
			d.faults = slices.Delete(d.faults, i, i+1)
		}
	}
}

// ClearFaults removes every injected fault.
func (d *Device) ClearFaults() {
	d.mu.Lock()
	d.faults = nil
	d.mu.Unlock()
}

// Faults returns the faults in effect, in the order they are tried, with
// Times set to the number of calls each has left (0: unlimited).
func (d *Device) Faults() []Fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Fault, len(d.faults))
	for i, in := range d.faults {
		out[i] = in.f
		out[i].Times = in.left
		out[i].Plugs = slices.Clone(in.f.Plugs)
	}
	return out
}

var (
	errInjected        = errors.New("injected failure")
	errInjectedUnknown = errors.New("injected failure, outcome unknown")
)

// failure returns the error of a terminal fault other than Hang, or nil.
func (e effect) failure(op Op, plug string) error {
	switch e.kind {
	case Fail:
		err := e.f.Err
		if err == nil {
			err = errInjected
		}
		return fence.NotDone(fmt.Errorf("fake: %v: %w", op, err))
	case Down:
		if e.f.Err != nil {
			return fence.NotDone(fmt.Errorf("fake: %v: %w: %w", op, fence.ErrUnreachable, e.f.Err))
		}
		return fence.NotDone(fmt.Errorf("fake: %v: %w", op, fence.ErrUnreachable))
	case Unknown:
		if op.acts() {
			return nil // handled by the acting operations
		}
		err := e.f.Err
		if err == nil {
			err = errInjectedUnknown
		}
		return fence.OutcomeUnknown(fmt.Errorf("fake: %v: %w", op, err))
	case BadState:
		if op == OpStatus || op == OpMonitor {
			return badState(op, plug, e.f.Err)
		}
	}
	return nil
}

func badState(op Op, plug string, cause error) error {
	if cause != nil {
		return fmt.Errorf("fake: %v: plug %q: %w: %w", op, plug, fence.ErrBadState, cause)
	}
	return fmt.Errorf("fake: %v: plug %q: %w", op, plug, fence.ErrBadState)
}

// unknownErr is the error of an acting call under an Unknown fault.
func (e effect) unknownErr(op Op) error {
	err := e.f.Err
	if err == nil {
		err = errInjectedUnknown
	}
	return fence.OutcomeUnknown(fmt.Errorf("fake: %v: %w", op, err))
}
