package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fencekit/fencekit/internal/ctxsleep"
)

// Method is one way to act on one node: a device, the plug that feeds or
// connects the node, and how to act. It is what the Kubernetes node-fencing
// design calls a fence method (fence-method-<name>-<node>), resolved and
// opened.
type Method struct {
	Name   string // the method's name, for errors and events ("eaton-off")
	Node   string // the node it fences
	Driver string // the driver's name, for errors and events
	// Host names the device (host or host:port), for errors; Registry.Open
	// sets it from the address, which never holds credentials.
	Host   string
	Device Device
	Plug   string
	// Action, when set, is the action this method always performs, whatever
	// the caller asks (the node-fencing design's action=off). Methods in a
	// step such as "power_management=eaton-off eaton-on" carry one.
	Action Action
	// SystemUUID, when set, is the system UUID of the node's machine
	// (Node.status.nodeInfo.systemUUID): before every switch (an off, either
	// half of a reboot, a native cycle, an on) and before an off already
	// there is trusted, a device that can read its machine's identity
	// (Identifier) must name the same machine, or nothing is switched
	// (ErrWrongMachine, not done).
	SystemUUID string
	// BestEffort marks a method whose failure does not fail its level (the
	// node-fencing design's must_sucess=no). A level still needs one method
	// to succeed.
	BestEffort bool
	// Options tune the verification of this method's actions.
	Options Options
}

// Close releases the method's device (its session, connection or process)
// when the device holds one (an io.Closer), and does nothing otherwise. A
// Method opened by Open owns its device: close it once, when done; a
// device's Close must not block for ever (see Device).
func (m *Method) Close() error {
	if c, ok := m.Device.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Attempt is one try at one phase of an action.
type Attempt struct {
	Phase    Action // ActionOn or ActionOff (within a reboot too), ActionReboot for a native cycle
	N        int    // 1-based within the phase
	Outcome  Outcome
	State    State // last state read, StateUnknown if none
	Polls    int
	Start    time.Time
	Duration time.Duration
	Err      error
}

// Result tells what a verified action did.
type Result struct {
	Node, Method, Driver, Plug string
	Action                     Action
	// State is the last state the device reported. It is the confirmed
	// state only when the action's error is nil.
	State State
	// Already is true when the plug was already in the wanted state and
	// nothing was set.
	Already bool
	// ByTime is set when the device's off is proven by elapsed time (SBD),
	// not read back from a switch (TimeProver).
	ByTime bool
	// OffConfirmed is true when the device confirmed the plug off during
	// this action (an off, the off phase of a reboot, or a first read that
	// found it off). It is what proves a node fenced; a native cycle never
	// sets it.
	OffConfirmed bool
	// Attempts lists every attempt, in order.
	Attempts []Attempt
	// OnErr is set when a reboot fenced the node (verified off) but the
	// power on afterwards failed, or, in a level (DoLevels), when this
	// method's on after the level's verified offs failed. As with the
	// agents, the reboot still succeeds: the node is fenced; the caller
	// should still look at it.
	OnErr error
	// Plugs is the device's plug list for ActionList.
	Plugs    []Plug
	Start    time.Time
	Duration time.Duration
}

// Fenced reports whether the result proves the plug off or isolated: the
// device confirmed the off state.
func (r *Result) Fenced() bool { return r.OffConfirmed }

// run carries one action's state.
type run struct {
	m   *Method
	o   Options
	res *Result

	// An I/O window: a context with a deadline at most IOTimeout away,
	// shared by consecutive device calls while at least half of IOTimeout
	// (or all the time up to the attempt's limit) is left in it. It saves
	// a context per call on the fast path, where calls take microseconds.
	win       context.Context
	winCancel context.CancelFunc
	winParent context.Context
	winEnd    time.Time

	// identified is set once the device named the node's machine
	// (checkIdentity): the off it confirms is trusted only when it still
	// does after (identityAfterOff).
	identified bool
}

// Do carries out action a on method m, verified as the ClusterLabs fence
// agents do (lib/fencing.py):
//
//   - off and reboot first sleep Options.Delay;
//   - the plug's state is read first; when it already is the wanted state, Do
//     succeeds at once without acting (Result.Already);
//   - otherwise each attempt sets the state, sleeps PowerWait, and reads the
//     state until it matches or PowerTimeout passes, the first read right
//     away and PollInterval only between reads;
//   - an on gets 1+RetryOn attempts, an off 1+RetryOff;
//   - a reboot is a verified off then a verified on (RebootOnOff), or the
//     device's native cycle then a verified on (RebootCycle).
//
// If m.Action is set, it is done instead of a power action (on, off,
// reboot); reads (status, list, monitor) are done as asked. A nil error always means the
// device confirmed the result; any doubt is an error wrapping
// ErrOutcomeUnknown, and a failure that surely did not act wraps ErrNotDone.
// Every error is an *Error naming node, method, driver and plug.
//
// Each attempt gets a deadline carved from ctx's: its natural length
// (PowerWait + PowerTimeout + IOTimeout) or an equal share of the time left
// for the attempts still to come, whichever is shorter; each call to the
// device gets at most IOTimeout.
func Do(ctx context.Context, m *Method, a Action) (*Result, error) {
	if m.Action != ActionNone && a.Switches() {
		// The method's own action replaces a power action only: a status,
		// list or monitor asked of an "off" method must never switch anything.
		a = m.Action
	}
	return execute(ctx, m, a, a)
}

// DoPhase carries out one switch of a level's plan (see PlanLevel) on
// method m: action is the method's action as the plan gives it (the
// method's own action is not consulted), phase the half of it to do.
//
//   - action ActionReboot, phase ActionOff: the first half of a reboot: the
//     delay, a first read, and a verified off unless the plug is off
//     already (1+RetryOff attempts). Result.OffConfirmed proves the plug off.
//   - action ActionReboot, phase ActionOn: the second half: a first read,
//     and a verified on unless the plug is on already (RetryOn attempts, at
//     least one, as the on of the agents' reboot).
//   - phase equal to action: the action itself, as Do does it.
//
// A reboot in halves never uses the device's native cycle (RebootCycle): a
// cycle cannot be split, and cannot prove the plug was off. Both halves read
// the device first, so a half run again (after a crash before its result was
// saved) switches nothing that is switched already.
func DoPhase(ctx context.Context, m *Method, action, phase Action) (*Result, error) {
	return execute(ctx, m, action, phase)
}

// execute runs action a (or one phase of it) on m and wraps and logs its
// error.
func execute(ctx context.Context, m *Method, a, phase Action) (*Result, error) {
	r := &run{m: m, o: m.Options.withDefaults()}
	r.res = &Result{Node: m.Node, Method: m.Name, Driver: m.Driver, Plug: m.Plug, Action: a, Start: time.Now()}
	if tp, ok := m.Device.(TimeProver); ok && tp.ProofByTime() {
		r.res.ByTime = true
	}
	var err error
	switch {
	case phase == a:
		err = r.do(ctx, a)
	case a == ActionReboot && phase == ActionOff:
		err = r.precheck(a)
		if err == nil {
			err = r.offHalf(ctx, a)
		}
	case a == ActionReboot && phase == ActionOn:
		err = r.precheck(a)
		if err == nil {
			err = r.onHalf(ctx, a)
		}
	default:
		err = r.wrap(a, "", NotDone(fmt.Errorf("%w: phase %v of action %v", ErrConfig, phase, a)))
	}
	r.closeWindow()
	r.res.Duration = time.Since(r.res.Start)
	if err != nil {
		var fe *Error
		if !errors.As(err, &fe) {
			err = r.wrap(a, "", err)
		}
		if r.o.Logger.Enabled(ctx, slog.LevelError) {
			r.o.Logger.LogAttrs(ctx, slog.LevelError, "fence action failed",
				slog.String("node", m.Node), slog.String("method", m.Name), slog.String("action", a.String()),
				slog.String("phase", phase.String()),
				slog.String("plug", m.Plug), slog.Duration("duration", r.res.Duration), slog.String("error", err.Error()))
		}
	}
	return r.res, err
}

func (r *run) wrap(a Action, op string, err error) error {
	return &Error{Node: r.m.Node, Method: r.m.Name, Driver: r.m.Driver, Host: r.m.Host, Plug: r.m.Plug, Action: a, Op: op, Err: err}
}

// precheck refuses a method without a device.
func (r *run) precheck(a Action) error {
	if r.m.Device == nil {
		return r.wrap(a, "open", NotDone(errors.New("method has no device")))
	}
	return nil
}

func (r *run) do(ctx context.Context, a Action) error {
	if err := r.precheck(a); err != nil {
		return err
	}
	switch a {
	case ActionStatus:
		st, err := r.read(ctx, a)
		r.res.State = st
		return err
	case ActionList:
		return r.list(ctx)
	case ActionMonitor:
		return r.monitor(ctx)
	case ActionOn:
		// An on through the wrong address would switch another machine
		// on, perhaps one fenced.
		st, err := r.firstRead(ctx, a)
		if err != nil {
			return err
		}
		if st == StateOn {
			r.already(a, st)
			return nil
		}
		return r.phase(ctx, a, ActionOn, r.attempts(ActionOn))
	case ActionOff:
		return r.offHalf(ctx, a)
	case ActionReboot:
		if r.o.RebootMethod == RebootCycle {
			if err := r.delay(ctx, a); err != nil {
				return err
			}
			if err := r.checkIdentity(ctx, a); err != nil {
				return err
			}
			return r.cycle(ctx)
		}
		if err := r.offHalf(ctx, a); err != nil {
			return err
		}
		if err := holdOff(ctx, time.Now(), max(r.o.MinOff, 0)); err != nil {
			// The node is fenced (its plug confirmed off); the on never
			// came: reported as a failed on, as the agents' reboot does.
			r.onFailed(ctx, r.wrap(a, "hold off", NotDone(err)))
			return nil
		}
		// The plug was just read or confirmed off: switch it on without
		// another read.
		if err := r.phase(ctx, a, ActionOn, max(r.o.RetryOn, 1)); err != nil {
			r.onFailed(ctx, err)
		}
		return nil
	}
	return r.wrap(a, "", NotDone(fmt.Errorf("action %v is not supported", a)))
}

// firstRead checks the machine's identity, then reads the plug: the read
// an on, an off and an off-then-on reboot start with. A plug read off
// confirms the off.
func (r *run) firstRead(ctx context.Context, a Action) (State, error) {
	if err := r.checkIdentity(ctx, a); err != nil {
		return StateUnknown, err
	}
	st, err := r.read(ctx, a)
	if err == nil && st == StateOff {
		r.res.OffConfirmed = true
	}
	return st, err
}

// already records that the plug was found in the state a asks for:
// nothing is switched.
func (r *run) already(a Action, st State) {
	r.res.Already = true
	r.notify(a, a, 0, OutcomeAlready, st, 0, time.Now(), 0, nil)
}

// delay sleeps Options.Delay before an off or a reboot.
func (r *run) delay(ctx context.Context, a Action) error {
	if r.o.Delay > 0 {
		if err := sleep(ctx, r.o.Delay); err != nil {
			return r.wrap(a, "delay", NotDone(err))
		}
	}
	return nil
}

// offHalf is an off, or the first half of a reboot: the delay, a first read,
// and a verified off unless the plug is off already.
func (r *run) offHalf(ctx context.Context, a Action) error {
	if err := r.delay(ctx, a); err != nil {
		return err
	}
	// Before the plug's off is switched or trusted: the wrong machine's
	// off would report the node fenced.
	st, err := r.firstRead(ctx, a)
	if err != nil {
		return err
	}
	if st == StateOff {
		if err := r.identityAfterOff(ctx, a); err != nil {
			return err
		}
		if a == ActionOff {
			r.already(a, st)
		}
		return nil
	}
	if err := r.phase(ctx, a, ActionOff, r.attempts(ActionOff)); err != nil {
		return err
	}
	return r.identityAfterOff(ctx, a)
}

// onHalf is the second half of a reboot run on its own: a first read, and a
// verified on in RetryOn attempts (at least one) unless the plug is on
// already. Its error is returned and also kept in Result.OnErr: the caller
// decides, as the first half may have fenced the node.
// It does not go through firstRead: a read of off here must not set
// Result.OffConfirmed, which only the off half's verified off may.
func (r *run) onHalf(ctx context.Context, a Action) error {
	if err := r.checkIdentity(ctx, a); err != nil {
		r.onFailed(ctx, err)
		return err
	}
	st, err := r.read(ctx, a)
	if err == nil && st == StateOn {
		r.res.Already = true
		r.notify(a, ActionOn, 0, OutcomeAlready, st, 0, time.Now(), 0, nil)
		return nil
	}
	if err == nil {
		err = r.phase(ctx, a, ActionOn, max(r.o.RetryOn, 1))
	}
	if err != nil {
		r.onFailed(ctx, err)
	}
	return err
}

// onFailed records a failed power on after a verified off: as the agents
// do, a reboot whose off was verified has fenced the node; the failed on is
// reported beside it.
func (r *run) onFailed(ctx context.Context, err error) {
	r.res.OnErr = err
	if r.o.Logger.Enabled(ctx, slog.LevelError) {
		r.o.Logger.LogAttrs(ctx, slog.LevelError, "reboot: plug verified off, but power on failed",
			slog.String("node", r.m.Node), slog.String("method", r.m.Name), slog.String("error", err.Error()))
	}
}

// attempts is the number of attempts of an on or an off: 1+RetryOn or
// 1+RetryOff (withDefaults bounds both by MaxRetry, so this never
// overflows).
func (r *run) attempts(a Action) int {
	if a == ActionOn {
		return 1 + r.o.RetryOn
	}
	return 1 + r.o.RetryOff
}

// read reads the state once, as the first step of an action.
func (r *run) read(ctx context.Context, a Action) (State, error) {
	start := time.Now()
	st, err := r.m.Device.Status(r.ioContext(ctx, time.Time{}), r.m.Plug)
	if err == nil && !st.Known() {
		err = ErrBadState
	}
	if err != nil {
		// Nothing was set yet: the action surely did not happen.
		err = r.wrap(a, "status", NotDone(err))
		st = StateUnknown
		r.notify(a, ActionStatus, 0, OutcomeNotDone, st, 1, start, time.Since(start), err)
		return st, err
	}
	r.res.State = st
	if a == ActionStatus {
		r.notify(a, ActionStatus, 0, OutcomeRead, st, 1, start, time.Since(start), nil)
	}
	return st, nil
}

// phase sets the plug to phase.Target() and verifies it, in up to n attempts.
func (r *run) phase(ctx context.Context, a, phase Action, n int) error {
	// However n was reached, an action is tried at least once: a loop that
	// runs zero times would return success without acting.
	n = max(n, 1)
	var last error
	unknown := false
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			if last == nil {
				last = r.wrap(a, "set", NotDone(err))
			}
			break
		}
		if i > 1 && unknown {
			// The last attempt may have acted: re-read before acting again.
			st, err := r.read(ctx, a)
			if err == nil && st == phase.Target() {
				r.confirm(phase)
				return nil
			}
		}
		err := r.attempt(ctx, a, phase, i, n-i+1)
		if err == nil {
			return nil
		}
		last = err
		if IsOutcomeUnknown(err) {
			unknown = true
		}
	}
	if last == nil {
		// Never reached: the loop returns on every success. Kept so that no
		// change to it can turn "nothing happened" into a success.
		return r.wrap(a, "set", OutcomeUnknown(errors.New("no attempt was made")))
	}
	if unknown && !errors.Is(last, ErrOutcomeUnknown) {
		// An earlier attempt may have acted even if the last surely did not.
		last = OutcomeUnknown(last)
	}
	return last
}

func (r *run) confirm(phase Action) {
	r.res.State = phase.Target()
	if phase.Target() == StateOff {
		r.res.OffConfirmed = true
	}
}

// attemptLimit carves one attempt's deadline from ctx's: its natural
// length, or an equal share of the time left for the attempts still to come,
// whichever is shorter.
func (r *run) attemptLimit(ctx context.Context, natural time.Duration, left int) time.Time {
	now := time.Now()
	budget := natural
	if dl, ok := ctx.Deadline(); ok && left > 1 {
		if share := dl.Sub(now) / time.Duration(left); share < budget {
			budget = share
		}
	}
	return now.Add(budget)
}

// ioContext returns the context for one device call: it ends at most
// IOTimeout from now, and never after limit (unless limit is zero).
func (r *run) ioContext(ctx context.Context, limit time.Time) context.Context {
	now := time.Now()
	end := now.Add(r.o.IOTimeout)
	if !limit.IsZero() && limit.Before(end) {
		end = limit
	}
	if r.win != nil && r.winParent == ctx && !r.winEnd.After(end) &&
		(r.winEnd.Sub(now) >= r.o.IOTimeout/2 || r.winEnd.Equal(end)) {
		return r.win
	}
	r.closeWindow()
	r.win, r.winCancel = context.WithDeadline(ctx, end)
	r.winParent, r.winEnd = ctx, end
	return r.win
}

func (r *run) closeWindow() {
	if r.winCancel != nil {
		r.winCancel()
		r.win, r.winCancel, r.winParent = nil, nil, nil
	}
}

// attempt is one set-and-verify.
func (r *run) attempt(ctx context.Context, a, phase Action, n, left int) error {
	want := phase.Target()
	start := time.Now()
	limit := r.attemptLimit(ctx, r.o.PowerWait+r.o.PowerTimeout+r.o.IOTimeout, left)

	op := "set"
	var setErr error
	soft := false
	if phase == ActionOff && r.o.Soft {
		if so, ok := r.m.Device.(SoftOffer); ok {
			soft = true
			op = "soft-off"
			setErr = so.SoftOff(r.ioContext(ctx, limit), r.m.Plug)
		}
	}
	if !soft {
		setErr = r.m.Device.Set(r.ioContext(ctx, limit), r.m.Plug, want)
	}
	if setErr != nil && IsNotDone(setErr) {
		if soft {
			return r.hardAfterSoft(ctx, a, n, left, start, setErr)
		}
		err := r.wrap(a, op, setErr)
		r.notify(a, phase, n, OutcomeNotDone, StateUnknown, 0, start, time.Since(start), err)
		r.res.Attempts = append(r.res.Attempts, Attempt{Phase: phase, N: n, Outcome: OutcomeNotDone, Start: start, Duration: time.Since(start), Err: err})
		return err
	}
	// The set was accepted, or may have been: verify.
	timeout := r.o.PowerTimeout
	if soft {
		timeout = r.o.SoftTimeout
	}
	st, polls, verr := r.verify(ctx, limit, want, timeout)
	if verr == nil {
		r.confirm(phase)
		r.notify(a, phase, n, OutcomeConfirmed, st, polls, start, time.Since(start), nil)
		r.res.Attempts = append(r.res.Attempts, Attempt{Phase: phase, N: n, Outcome: OutcomeConfirmed, State: st, Polls: polls, Start: start, Duration: time.Since(start)})
		return nil
	}
	if setErr != nil {
		verr = errors.Join(setErr, verr)
	}
	err := r.wrap(a, op, OutcomeUnknown(verr))
	if st.Known() {
		r.res.State = st
	}
	r.notify(a, phase, n, OutcomeUncertain, st, polls, start, time.Since(start), err)
	r.res.Attempts = append(r.res.Attempts, Attempt{Phase: phase, N: n, Outcome: OutcomeUncertain, State: st, Polls: polls, Start: start, Duration: time.Since(start), Err: err})
	if soft {
		return r.hardAfterSoft(ctx, a, n, left, start, err)
	}
	return err
}

// hardAfterSoft records a failed soft off and does a hard off in its place.
func (r *run) hardAfterSoft(ctx context.Context, a Action, n, left int, start time.Time, softErr error) error {
	if IsNotDone(softErr) {
		err := r.wrap(a, "soft-off", softErr)
		r.notify(a, ActionOff, n, OutcomeNotDone, StateUnknown, 0, start, time.Since(start), err)
		r.res.Attempts = append(r.res.Attempts, Attempt{Phase: ActionOff, N: n, Outcome: OutcomeNotDone, Start: start, Duration: time.Since(start), Err: err})
	}
	hard := *r
	hard.o.Soft = false
	err := hard.attempt(ctx, a, ActionOff, n, left)
	r.win, r.winCancel, r.winParent, r.winEnd = hard.win, hard.winCancel, hard.winParent, hard.winEnd
	if err != nil && IsOutcomeUnknown(softErr) && IsNotDone(err) {
		// The soft off may have acted even though the hard one surely did not.
		err = OutcomeUnknown(err)
	}
	return err
}

// call runs one device call with at most IOTimeout.
func (r *run) call(ctx context.Context, f func(context.Context) error) error {
	return f(r.ioContext(ctx, time.Time{}))
}

// verify sleeps PowerWait, then reads the state until it is want or timeout
// passes, never past limit. It returns the last state read and the number of
// reads.
func (r *run) verify(ctx context.Context, limit time.Time, want State, timeout time.Duration) (State, int, error) {
	if r.o.PowerWait > 0 {
		if err := sleep(ctx, min(r.o.PowerWait, time.Until(limit))); err != nil {
			return StateUnknown, 0, err
		}
	}
	deadline := time.Now().Add(timeout)
	if limit.Before(deadline) {
		deadline = limit
	}
	st := StateUnknown
	var lastErr error
	for polls := 1; ; polls++ {
		s, err := r.m.Device.Status(r.ioContext(ctx, limit), r.m.Plug)
		switch {
		case err == nil && s == want:
			return s, polls, nil
		case err == nil:
			st, lastErr = s, nil
		default:
			st, lastErr = StateUnknown, err
		}
		if ctx.Err() != nil {
			return st, polls, r.timeoutErr(want, st, polls, lastErr, ctx.Err())
		}
		left := time.Until(deadline)
		if left <= 0 {
			return st, polls, r.timeoutErr(want, st, polls, lastErr, nil)
		}
		if err := sleep(ctx, min(r.o.PollInterval, left)); err != nil {
			return st, polls, r.timeoutErr(want, st, polls, lastErr, err)
		}
	}
}

func (r *run) timeoutErr(want, st State, polls int, lastErr, ctxErr error) error {
	msg := fmt.Errorf("%w: want %v, last read %v after %d reads", ErrTimeout, want, st, polls)
	return errors.Join(msg, lastErr, ctxErr)
}

// cycle is a reboot by the device's native cycle, verified on.
func (r *run) cycle(ctx context.Context) error {
	a := ActionReboot
	c, ok := r.m.Device.(Cycler)
	if !ok {
		return r.wrap(a, "cycle", NotDone(fmt.Errorf("%w: native power cycle", ErrUnsupported)))
	}
	n := 1 + r.o.RetryOn
	last := error(r.wrap(a, "cycle", OutcomeUnknown(errors.New("no attempt was made"))))
	for i := 1; i <= n; i++ {
		start := time.Now()
		limit := r.attemptLimit(ctx, r.o.PowerWait+r.o.PowerTimeout+r.o.IOTimeout, n-i+1)
		err := c.Cycle(r.ioContext(ctx, limit), r.m.Plug)
		if err != nil && IsNotDone(err) {
			last = r.wrap(a, "cycle", err)
			r.notify(a, ActionReboot, i, OutcomeNotDone, StateUnknown, 0, start, time.Since(start), last)
			r.res.Attempts = append(r.res.Attempts, Attempt{Phase: ActionReboot, N: i, Outcome: OutcomeNotDone, Start: start, Duration: time.Since(start), Err: last})
			continue
		}
		st, polls, verr := r.verify(ctx, limit, StateOn, r.o.PowerTimeout)
		r.res.State = st
		if err != nil {
			// The cycle's outcome is unknown (no answer, or the device
			// says it failed after it may have acted): the plug reading on
			// proves nothing, as the cycle may never have run. The agents
			// fail such a cycle too.
			verr = errors.Join(err, verr)
		}
		if verr == nil {
			r.notify(a, ActionReboot, i, OutcomeConfirmed, st, polls, start, time.Since(start), nil)
			r.res.Attempts = append(r.res.Attempts, Attempt{Phase: ActionReboot, N: i, Outcome: OutcomeConfirmed, State: st, Polls: polls, Start: start, Duration: time.Since(start)})
			return nil
		}
		last = r.wrap(a, "cycle", OutcomeUnknown(verr))
		r.notify(a, ActionReboot, i, OutcomeUncertain, st, polls, start, time.Since(start), last)
		r.res.Attempts = append(r.res.Attempts, Attempt{Phase: ActionReboot, N: i, Outcome: OutcomeUncertain, State: st, Polls: polls, Start: start, Duration: time.Since(start), Err: last})
		// A cycle that may have run is not repeated: a second cycle could
		// cut a node that is already booting again.
		break
	}
	return last
}

func (r *run) list(ctx context.Context) error {
	start := time.Now()
	l, ok := r.m.Device.(Lister)
	if !ok {
		return r.wrap(ActionList, "list", NotDone(fmt.Errorf("%w: plug list", ErrUnsupported)))
	}
	var plugs []Plug
	err := r.call(ctx, func(c context.Context) error {
		var err error
		plugs, err = l.List(c)
		return err
	})
	if err != nil {
		err = r.wrap(ActionList, "list", NotDone(err))
		r.notify(ActionList, ActionList, 1, OutcomeNotDone, StateUnknown, 0, start, time.Since(start), err)
		return err
	}
	r.res.Plugs = plugs
	r.notify(ActionList, ActionList, 1, OutcomeRead, StateUnknown, 0, start, time.Since(start), nil)
	return nil
}

// monitor checks the device's health: its Monitor capability, else a plug
// list (as the agents do for devices with plugs), else a status read.
func (r *run) monitor(ctx context.Context) error {
	start := time.Now()
	var err error
	switch d := r.m.Device.(type) {
	case Monitor:
		err = r.call(ctx, d.Monitor)
	case Lister:
		err = r.call(ctx, func(c context.Context) error { _, err := d.List(c); return err })
	default:
		var st State
		err = r.call(ctx, func(c context.Context) error {
			var err error
			st, err = r.m.Device.Status(c, r.m.Plug)
			return err
		})
		if err == nil && !st.Known() {
			err = ErrBadState
		}
	}
	if err != nil {
		err = r.wrap(ActionMonitor, "monitor", NotDone(err))
		r.notify(ActionMonitor, ActionMonitor, 1, OutcomeNotDone, StateUnknown, 0, start, time.Since(start), err)
		return err
	}
	r.notify(ActionMonitor, ActionMonitor, 1, OutcomeRead, StateUnknown, 0, start, time.Since(start), nil)
	return nil
}

func (r *run) notify(a, phase Action, n int, out Outcome, st State, polls int, start time.Time, d time.Duration, err error) {
	if r.o.Observer == nil {
		return
	}
	r.o.Observer.Observe(Event{
		Node: r.m.Node, Method: r.m.Name, Driver: r.m.Driver, Plug: r.m.Plug,
		Action: a, Phase: phase, Attempt: n, Outcome: out, State: st, Polls: polls,
		Start: start, Duration: d, Err: err,
	})
}

// holdOff waits until minOff has passed since off, the time the plug (or
// every plug of a level) was confirmed off: a reboot's on comes no sooner.
func holdOff(ctx context.Context, off time.Time, minOff time.Duration) error {
	if d := time.Until(off.Add(minOff)); d > 0 {
		return sleep(ctx, d)
	}
	return nil
}

// sleep waits d or until ctx ends (see ctxsleep.Sleep).
func sleep(ctx context.Context, d time.Duration) error { return ctxsleep.Sleep(ctx, d) }
