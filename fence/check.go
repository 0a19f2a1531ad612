package fence

import (
	"context"
	"errors"
	"time"
)

// Check is a method's health check, as a controller runs it on a schedule
// before any incident (a broken credential or an unreachable device found
// then, not at the first real failure): the identity of the method's
// machine, where its driver reads one and m.SystemUUID is given (a
// mismatch is an error wrapping ErrWrongMachine), then the plug's status,
// or, for a method without a plug, the device's health (its Monitor, else
// a plug list). It never switches anything. Result.State is the plug's
// state. An error is a *Error, NotDone: nothing was switched.
func Check(ctx context.Context, m *Method) (*Result, error) {
	return check(ctx, m, true)
}

// ReadState reads the state of m's plug (for a method without a plug, such
// as a BMC's, the machine's power), switching nothing: the machine's
// identity first, as Check does. Result.State is the state read. A
// controller reads again, with it, the devices that fenced a node, to find
// one switched on behind it. An error is a *Error, NotDone.
func ReadState(ctx context.Context, m *Method) (*Result, error) {
	return check(ctx, m, false)
}

func check(ctx context.Context, m *Method, monitorPlugless bool) (*Result, error) {
	r := &run{m: m, o: m.Options.withDefaults()}
	r.res = &Result{Node: m.Node, Method: m.Name, Driver: m.Driver, Plug: m.Plug, Action: ActionStatus, Start: time.Now()}
	err := r.precheck(ActionStatus)
	if err == nil {
		err = r.checkIdentity(ctx, ActionStatus)
	}
	if err == nil {
		if m.Plug == "" && monitorPlugless {
			r.res.Action = ActionMonitor
			err = r.monitor(ctx)
		} else {
			_, err = r.read(ctx, ActionStatus)
		}
	}
	r.closeWindow()
	r.res.Duration = time.Since(r.res.Start)
	if err != nil {
		var fe *Error
		if !errors.As(err, &fe) {
			err = r.wrap(r.res.Action, "", err)
		}
	}
	return r.res, err
}
