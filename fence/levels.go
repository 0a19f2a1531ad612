package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// Level is one level of a fencing topology (as Pacemaker's): methods that
// act together and must all succeed. A step such as the design's
// "power_management=eaton-off eaton-on" is one level of two methods; a node
// fed by two PDUs is fenced by a level of one method per PDU.
type Level struct {
	Methods []*Method
}

// PlanStep is one switch of a level's plan: a method of the level and the
// half of its action to carry out now.
type PlanStep struct {
	// Method is the index of the method in its level.
	Method int
	// Action is the method's action: its own (Method.Action, the design's
	// action=) when it has one and the level's action switches power, else
	// the level's action.
	Action Action
	// Phase is what this switch does: ActionOff or ActionOn (a reboot has
	// one of each); for a read (status, list, monitor), the read itself.
	Phase Action
}

// PlanLevel returns the order in which a level carries out action a, given
// each method's own action (ActionNone: it takes a). It is Pacemaker's rule
// for a topology level of several devices: every off first, methods in
// order, then every on, methods in order. A reboot method contributes its
// off to the first part and its on to the second; an "off" method only an
// off, an "on" method only an on. So a node fed by two PDUs loses power on
// both before either is switched on again, and a level "eaton-off eaton-on"
// is its off, then its on. DoLevels and the fence controller both follow
// this plan, so that a level means the same in a library call and in a
// controller that persists every switch.
func PlanLevel(a Action, own []Action) []PlanStep {
	var offs, ons []PlanStep
	for i, o := range own {
		e := a
		if o != ActionNone && a.Switches() {
			e = o
		}
		switch e {
		case ActionReboot:
			offs = append(offs, PlanStep{Method: i, Action: e, Phase: ActionOff})
			ons = append(ons, PlanStep{Method: i, Action: e, Phase: ActionOn})
		case ActionOn:
			ons = append(ons, PlanStep{Method: i, Action: e, Phase: ActionOn})
		default:
			offs = append(offs, PlanStep{Method: i, Action: e, Phase: e})
		}
	}
	return append(offs, ons...)
}

// LevelResult tells how one level went.
type LevelResult struct {
	Index int // 0-based position in the topology
	// Results holds one result per method run, in the level's order;
	// methods not reached (after a failed off) are left out. A reboot
	// method's two halves are one result: its Attempts hold both, its
	// OffConfirmed the proof of the off, its OnErr a failed on.
	Results []*Result
	// Err is nil when the level succeeded.
	Err error
	// OnErr is set when the level fenced the node (every required device
	// confirmed off) but switching a device on again afterwards failed. As
	// with the agents' reboot, the level still succeeded.
	OnErr error
}

// TopologyResult tells how a fencing through levels went.
type TopologyResult struct {
	Node   string
	Action Action
	// Level is the index of the level that succeeded, or -1.
	Level int
	// Fenced is true when the successful level proved the node off or
	// isolated: every device of the level that must succeed confirmed the
	// off state, all of them before any was switched on again.
	Fenced bool
	// OnErr is the successful level's OnErr: the node was fenced, but a
	// device could not be switched on again.
	OnErr    error
	Levels   []LevelResult
	Start    time.Time
	Duration time.Duration
}

// LevelsError is returned by DoLevels when no level succeeded. It wraps
// ErrNotFenced (for an off or reboot), ErrOutcomeUnknown when any level may
// have acted (else ErrNotDone), and the levels' errors.
type LevelsError struct {
	Node   string
	Action Action
	Levels []LevelResult
}

func (e *LevelsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fence: node %s: %v: no level succeeded", errfmt.Quote(e.Node), e.Action)
	for _, l := range e.Levels {
		fmt.Fprintf(&b, "; level %d: %v", l.Index+1, l.Err)
	}
	return b.String()
}

// Unwrap returns ErrNotFenced (for off and reboot), the class of the
// failure (ErrOutcomeUnknown if any level may have acted, else ErrNotDone),
// and every level's error.
func (e *LevelsError) Unwrap() []error {
	class := ErrNotDone
	for _, l := range e.Levels {
		if IsOutcomeUnknown(l.Err) {
			class = ErrOutcomeUnknown
		}
	}
	out := make([]error, 0, 2+len(e.Levels))
	if e.Action == ActionOff || e.Action == ActionReboot {
		out = append(out, ErrNotFenced)
	}
	out = append(out, class)
	for _, l := range e.Levels {
		if l.Err != nil {
			out = append(out, l.Err)
		}
	}
	return out
}

// errNoOffConfirmed fails a level that succeeded at an off or reboot
// without any method confirming the node off (for example a level of "on"
// methods only).
var errNoOffConfirmed = errors.New("no method of the level confirmed the node off")

// DoLevels runs action a through the levels in order until one succeeds.
//
// Within a level the methods switch in the order PlanLevel gives: for an off
// or a reboot, every off first (each verified, methods in order), then every
// on. The node counts as fenced by the level only when every method that
// must succeed (not BestEffort) confirmed its device off, and at least one
// did, all before any device of the level is switched on again: a node fed
// by two PDUs is fenced only once both outlets were off together. A failed
// on after that does not undo the fence: the level succeeds, and the error
// is in LevelResult.OnErr and TopologyResult.OnErr (the agents' rule for a
// reboot).
//
// A required off that fails fails the level: its ons are not run, and the
// devices it switched off stay off (switching them on could only re-power a
// node that is not proven fenced); the next level is tried. A BestEffort
// method whose off fails is not switched on later. For an on (recovery), each
// method must succeed unless BestEffort, and at least one must.
//
// The result tells which level succeeded and why the others failed.
func DoLevels(ctx context.Context, node string, levels []Level, a Action) (*TopologyResult, error) {
	res := &TopologyResult{Node: node, Action: a, Level: -1, Start: time.Now()}
	defer func() { res.Duration = time.Since(res.Start) }()
	for i, l := range levels {
		lr := doLevel(ctx, i, l, a)
		res.Levels = append(res.Levels, lr)
		if lr.Err == nil {
			res.Level = i
			res.Fenced = fencing(a)
			res.OnErr = lr.OnErr
			return res, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(levels) == 0 {
		return res, &LevelsError{Node: node, Action: a, Levels: []LevelResult{{Err: NotDone(fmt.Errorf("%w: no fencing levels configured", ErrConfig))}}}
	}
	return res, &LevelsError{Node: node, Action: a, Levels: res.Levels}
}

// fencing reports whether a is an action that fences: off or reboot.
func fencing(a Action) bool { return a.Fences() }

func doLevel(ctx context.Context, i int, l Level, a Action) LevelResult {
	lr := LevelResult{Index: i}
	if len(l.Methods) == 0 {
		lr.Err = NotDone(fmt.Errorf("%w: level %d has no methods", ErrConfig, i+1))
		return lr
	}
	own := make([]Action, len(l.Methods))
	for j, m := range l.Methods {
		if m == nil {
			lr.Err = NotDone(fmt.Errorf("%w: level %d: method %d is nil", ErrConfig, i+1, j+1))
			return lr
		}
		own[j] = m.Action
	}
	res := make([]*Result, len(l.Methods))
	dropped := make([]bool, len(l.Methods)) // best-effort methods that failed
	var bestEffortErrs, onErrs []error
	judged := false
	judge := func() error {
		judged = true
		return judgeOffs(l, res, dropped, a)
	}
	done := func() LevelResult {
		for _, r := range res {
			if r != nil {
				lr.Results = append(lr.Results, r)
			}
		}
		lr.OnErr = errors.Join(onErrs...)
		return lr
	}
	for _, st := range PlanLevel(a, own) {
		if dropped[st.Method] {
			continue
		}
		m := l.Methods[st.Method]
		if fencing(a) && st.Phase == ActionOn && !judged {
			if err := judge(); err != nil {
				lr.Err = errors.Join(append([]error{err}, bestEffortErrs...)...)
				return done()
			}
			// Every device of the level is off together now: held off
			// for the longest MinOff of the methods before any on.
			if err := holdOff(ctx, time.Now(), levelMinOff(l, a)); err != nil {
				onErrs = append(onErrs, &Error{Node: m.Node, Action: a, Op: "hold off", Err: NotDone(err)})
				return done()
			}
		}
		r, err := DoPhase(ctx, m, st.Action, st.Phase)
		res[st.Method] = mergeResult(res[st.Method], r)
		if err == nil {
			continue
		}
		switch {
		case fencing(a) && st.Phase == ActionOn:
			// The level fenced the node already: a failed on is reported,
			// not counted against the fence.
			res[st.Method].OnErr = err
			onErrs = append(onErrs, err)
		case m.BestEffort:
			dropped[st.Method] = true
			bestEffortErrs = append(bestEffortErrs, err)
		default:
			lr.Err = err
			return done()
		}
	}
	if fencing(a) {
		if !judged {
			if err := judge(); err != nil {
				lr.Err = errors.Join(append([]error{err}, bestEffortErrs...)...)
			}
		}
		return done()
	}
	if !slices.ContainsFunc(res, func(r *Result) bool { return r != nil }) || allDropped(dropped) {
		lr.Err = errors.Join(bestEffortErrs...)
	}
	return done()
}

// levelMinOff is the longest MinOff of the methods of l that switch on
// in a's plan (a reboot's second halves).
func levelMinOff(l Level, a Action) time.Duration {
	var d time.Duration
	for _, m := range l.Methods {
		if hasOff(m, a) {
			d = max(d, m.Options.withDefaults().MinOff) // NoMinOff counts as 0
		}
	}
	return d
}

// judgeOffs checks a level's offs: every required method that has an off
// half confirmed its device off, and at least one method did.
func judgeOffs(l Level, res []*Result, dropped []bool, a Action) error {
	any := false
	for j, r := range res {
		confirmed := r != nil && r.OffConfirmed && !dropped[j]
		any = any || confirmed
		m := l.Methods[j]
		if !m.BestEffort && hasOff(m, a) && !confirmed {
			return &Error{Node: m.Node, Method: m.Name, Driver: m.Driver, Host: m.Host, Plug: m.Plug, Action: a, Op: "verify",
				Err: OutcomeUnknown(errors.New("the device did not confirm the plug off"))}
		}
	}
	if !any {
		return &Error{Node: l.Methods[0].Node, Action: a, Op: "verify", Err: OutcomeUnknown(errNoOffConfirmed)}
	}
	return nil
}

// hasOff reports whether method m switches something off when its level
// carries out a.
func hasOff(m *Method, a Action) bool {
	e := a
	if m.Action != ActionNone && a.Switches() {
		e = m.Action
	}
	return e == ActionOff || e == ActionReboot
}

func allDropped(d []bool) bool {
	for _, x := range d {
		if !x {
			return false
		}
	}
	return true
}

// mergeResult adds the result of a method's second half to its first.
func mergeResult(into, r *Result) *Result {
	if into == nil {
		return r
	}
	into.Attempts = append(into.Attempts, r.Attempts...)
	into.State = r.State
	into.OffConfirmed = into.OffConfirmed || r.OffConfirmed
	into.Already = into.Already && r.Already
	into.Duration = r.Start.Add(r.Duration).Sub(into.Start)
	return into
}
