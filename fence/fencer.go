package fence

import (
	"context"
	"errors"
	"fmt"
)

// Fencer is the node-level operation a host application programs against:
// fence a node through its levels, unfence it, read its power state. A host
// controller depends on this interface and fakes it in its tests; the
// configuration (fence/config's Config.Fencer) and NewFencer implement it
// over real devices, opened for each call and closed after it.
type Fencer interface {
	// Fence switches node off (ActionOff) or reboots it (ActionReboot)
	// through its levels, as DoLevels does: the result says which level
	// fenced it, and an error that the node is not fenced (LevelsError) or
	// that its configuration could not be opened (NotDone).
	Fence(ctx context.Context, node string, a Action) (*TopologyResult, error)
	// Unfence switches node on through its levels (ActionOn).
	Unfence(ctx context.Context, node string) (*TopologyResult, error)
	// Status reads node's power state: the levels are read in order, and
	// the first level whose every method answers gives the state, StateOff
	// only when every one of them reads off (a node fed by two PDUs is off
	// only with both outlets off). With no level answering, the state is
	// StateUnknown and the error says why each failed.
	Status(ctx context.Context, node string) (State, error)
}

// LevelsFunc opens the levels of node for one Fencer call; the Fencer
// closes every method after the call.
type LevelsFunc func(ctx context.Context, node string) ([]Level, error)

// NewFencer returns a Fencer over the levels open gives for each call.
func NewFencer(open LevelsFunc) Fencer { return &levelsFencer{open: open} }

type levelsFencer struct{ open LevelsFunc }

func (f *levelsFencer) with(ctx context.Context, node string, run func([]Level) error) error {
	levels, err := f.open(ctx, node)
	if err != nil {
		return err
	}
	defer func() {
		for _, l := range levels {
			for _, m := range l.Methods {
				_ = m.Close()
			}
		}
	}()
	if len(levels) == 0 {
		return NotDone(fmt.Errorf("%w: node %s has no fence levels", ErrConfig, node))
	}
	return run(levels)
}

func (f *levelsFencer) Fence(ctx context.Context, node string, a Action) (*TopologyResult, error) {
	if !a.Fences() {
		return nil, NotDone(fmt.Errorf("%w: %v does not fence a node (off or reboot)", ErrConfig, a))
	}
	return f.do(ctx, node, a)
}

func (f *levelsFencer) Unfence(ctx context.Context, node string) (*TopologyResult, error) {
	return f.do(ctx, node, ActionOn)
}

func (f *levelsFencer) do(ctx context.Context, node string, a Action) (res *TopologyResult, err error) {
	err = f.with(ctx, node, func(levels []Level) error {
		res, err = DoLevels(ctx, node, levels, a)
		return err
	})
	return res, err
}

func (f *levelsFencer) Status(ctx context.Context, node string) (st State, err error) {
	st = StateUnknown
	err = f.with(ctx, node, func(levels []Level) error {
		var errs []error
		for _, l := range levels {
			off, read := 0, 0
			for _, m := range l.Methods {
				r, err := Do(ctx, m, ActionStatus)
				if err != nil {
					errs = append(errs, err)
					break
				}
				read++
				if r.State == StateOff {
					off++
				}
			}
			if read == len(l.Methods) && read > 0 {
				st = StateOn
				if off == read {
					st = StateOff
				}
				return nil
			}
		}
		return errors.Join(errs...)
	})
	return st, err
}
