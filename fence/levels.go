package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Level is one level of a fencing topology (as Pacemaker's): methods that
// are run in order and must all succeed. A step such as the seed's
// "power_management=eaton-off eaton-on" is one level of two methods.
type Level struct {
	Methods []*Method
}

// LevelResult tells how one level went.
type LevelResult struct {
	Index   int       // 0-based position in the topology
	Results []*Result // one per method run, in order; methods after a failure are not run
	Err     error     // nil when the level succeeded
}

// TopologyResult tells how a fencing through levels went.
type TopologyResult struct {
	Node   string
	Action Action
	// Level is the index of the level that succeeded, or -1.
	Level int
	// Fenced is true when the successful level proved the node off or
	// isolated (some method's device confirmed the off state).
	Fenced   bool
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
	fmt.Fprintf(&b, "fence: node %s: %v: no level succeeded", quoteIfNeeded(e.Node), e.Action)
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
// without any method confirming the node off (for example a native cycle).
var errNoOffConfirmed = errors.New("no method of the level confirmed the node off")

// DoLevels runs action a through the levels in order until one succeeds:
// every method of a level is run in order with Do, and must succeed unless
// it is BestEffort; at least one must succeed. For an off or a reboot a level
// succeeds only if some method confirmed the node off, so that TopologyResult
// reports Fenced only on the device's word. When a level fails, the next
// is tried. The result tells which level succeeded and why the others
// failed.
func DoLevels(ctx context.Context, node string, levels []Level, a Action) (*TopologyResult, error) {
	res := &TopologyResult{Node: node, Action: a, Level: -1, Start: time.Now()}
	defer func() { res.Duration = time.Since(res.Start) }()
	for i, l := range levels {
		lr := doLevel(ctx, i, l, a)
		res.Levels = append(res.Levels, lr)
		if lr.Err == nil {
			res.Level = i
			res.Fenced = (a == ActionOff || a == ActionReboot) && anyOffConfirmed(lr.Results)
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

func doLevel(ctx context.Context, i int, l Level, a Action) LevelResult {
	lr := LevelResult{Index: i}
	if len(l.Methods) == 0 {
		lr.Err = NotDone(fmt.Errorf("%w: level %d has no methods", ErrConfig, i+1))
		return lr
	}
	ok := 0
	var bestEffortErrs []error
	for _, m := range l.Methods {
		r, err := Do(ctx, m, a)
		lr.Results = append(lr.Results, r)
		if err != nil {
			if m.BestEffort {
				bestEffortErrs = append(bestEffortErrs, err)
				continue
			}
			lr.Err = err
			return lr
		}
		ok++
	}
	switch {
	case ok == 0:
		lr.Err = errors.Join(bestEffortErrs...)
	case (a == ActionOff || a == ActionReboot) && !anyOffConfirmed(lr.Results):
		lr.Err = &Error{Node: l.Methods[0].Node, Action: a, Op: "verify", Err: OutcomeUnknown(errNoOffConfirmed)}
	}
	return lr
}

func anyOffConfirmed(rs []*Result) bool {
	for _, r := range rs {
		if r != nil && r.OffConfirmed {
			return true
		}
	}
	return false
}
