package fence_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// fastOpts are options for tests that run in a synctest bubble, where time
// is simulated: the agents' defaults, but for an observer that records.
func method(d fence.Device, o fence.Options) *fence.Method {
	return &fence.Method{Name: "pdu-off", Node: "node-2", Driver: "fake", Device: d, Plug: "1", Options: o}
}

type recorder struct {
	mu     sync.Mutex
	events []fence.Event
}

func (r *recorder) Observe(e fence.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) outcomes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Phase.String()+":"+e.Outcome.String())
	}
	return out
}

func TestOffVerifiedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		rec := &recorder{}
		start := time.Now()
		res, err := fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionOff)
		require.NoError(t, err)
		assert.Equal(t, fence.StateOff, res.State)
		assert.True(t, res.Fenced())
		assert.False(t, res.Already)
		require.Len(t, res.Attempts, 1)
		assert.Equal(t, 1, res.Attempts[0].Polls, "a device that switches at once is confirmed by the first read")
		assert.Equal(t, time.Duration(0), time.Since(start), "no sleep when the device switches at once")
		assert.Equal(t, fence.StateOff, d.Truth("1"))
		assert.Equal(t, []string{"off:confirmed"}, rec.outcomes())
		assert.Equal(t, 1, d.Calls(fake.OpSet))
	})
}

func TestAlreadyInStateDoesNotAct(t *testing.T) {
	d := fake.New(fake.Options{Initial: fence.StateOff})
	res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Already)
	assert.True(t, res.Fenced(), "a plug read off is confirmed off")
	assert.Equal(t, 0, d.Calls(fake.OpSet))

	res, err = fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOn)
	require.NoError(t, err)
	assert.False(t, res.Already)
	res, err = fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOn)
	require.NoError(t, err)
	assert.True(t, res.Already)
	assert.False(t, res.Fenced())
}

func TestPollingWaitsIntervalOnlyBetweenReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{SwitchDelay: 2500 * time.Millisecond})
		start := time.Now()
		res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
		require.NoError(t, err)
		// Reads at 0, 1, 2 and 3 s; the plug switched at 2.5 s.
		assert.Equal(t, 4, res.Attempts[0].Polls)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestPowerWaitBeforeFirstRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		start := time.Now()
		res, err := fence.Do(t.Context(), method(d, fence.Options{PowerWait: 2 * time.Second}), fence.ActionOff)
		require.NoError(t, err)
		assert.Equal(t, 1, res.Attempts[0].Polls)
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestDelayBeforeOffAndRebootOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		o := fence.Options{Delay: 5 * time.Second}
		start := time.Now()
		_, err := fence.Do(t.Context(), method(d, o), fence.ActionOff)
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second, time.Since(start))

		start = time.Now()
		_, err = fence.Do(t.Context(), method(d, o), fence.ActionOn)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(start), "no delay before on")

		start = time.Now()
		_, err = fence.Do(t.Context(), method(d, o), fence.ActionReboot)
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second+fence.DefaultMinOff, time.Since(start), "the delay, then the off held")
	})
}

// A reboot holds the plug off for MinOff (2 s by default, min_off=N
// seconds, none with min_off=0) between the confirmed off and the on; a
// hold cut short by the context leaves the node fenced and the on failed
// as not done.
func TestRebootHoldsTheOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params fence.Params
		want   time.Duration
	}{
		{"default", nil, fence.DefaultMinOff},
		{"min_off=5", fence.Params{"min_off": "5"}, 5 * time.Second},
		{"min_off=0.5", fence.Params{"min_off": "0.5"}, 500 * time.Millisecond},
		{"min_off=0: none", fence.Params{"min_off": "0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o, err := fence.OptionsFromParams(fence.Options{}, tc.params)
				require.NoError(t, err)
				d := fake.New(fake.Options{})
				start := time.Now()
				res, err := fence.Do(t.Context(), method(d, o), fence.ActionReboot)
				require.NoError(t, err)
				assert.True(t, res.OffConfirmed)
				assert.Equal(t, tc.want, time.Since(start))
				assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, d.History("1"))
			})
		})
	}
	_, err := fence.OptionsFromParams(fence.Options{}, fence.Params{"min_off": "7200"})
	assert.ErrorContains(t, err, "min_off")

	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		res, err := fence.Do(ctx, method(d, fence.Options{MinOff: 10 * time.Second}), fence.ActionReboot)
		require.NoError(t, err, "the node is fenced: its off was confirmed")
		assert.True(t, res.OffConfirmed)
		require.Error(t, res.OnErr)
		assert.ErrorIs(t, res.OnErr, fence.ErrNotDone)
		assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff}, d.History("1"), "never switched on")
	})
}

func TestDelayCancelledIsNotDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := fence.Do(ctx, method(d, fence.Options{Delay: 5 * time.Second}), fence.ActionOff)
		require.Error(t, err)
		assert.True(t, fence.IsNotDone(err))
		assert.Equal(t, 0, d.Calls(fake.OpStatus))
	})
}

func TestDeviceLiesTimesOutAsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Lie, State: fence.StateOn})
		start := time.Now()
		res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
		require.Error(t, err)
		assert.ErrorIs(t, err, fence.ErrTimeout)
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
		assert.True(t, fence.IsOutcomeUnknown(err))
		assert.False(t, fence.IsNotDone(err))
		assert.False(t, res.Fenced(), "never fenced without the device's word")
		assert.Equal(t, fence.StateOn, res.State)
		assert.Equal(t, fence.DefaultPowerTimeout, time.Since(start))
		assert.Equal(t, 21, res.Attempts[0].Polls, "reads at 0..20 s")
		assert.Equal(t, fence.StateOff, d.Truth("1"), "the device did switch; only its word is missing")
	})
}

func TestIgnoredSetTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
		res, err := fence.Do(t.Context(), method(d, fence.Options{PowerTimeout: 3 * time.Second}), fence.ActionOff)
		require.Error(t, err)
		assert.ErrorIs(t, err, fence.ErrTimeout)
		assert.False(t, res.Fenced())
		var fe *fence.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "node-2", fe.Node)
		assert.Equal(t, "pdu-off", fe.Method)
		assert.Equal(t, "1", fe.Plug)
		assert.Equal(t, fence.ActionOff, fe.Action)
		assert.Contains(t, err.Error(), "node node-2")
		assert.Contains(t, err.Error(), "method pdu-off")
	})
}

func TestStatusFailureIsNotDone(t *testing.T) {
	for name, kind := range map[string]fake.Kind{"down": fake.Down, "fail": fake.Fail, "bad state": fake.BadState} {
		t.Run(name, func(t *testing.T) {
			d := fake.New(fake.Options{})
			d.Inject(fake.Fault{Op: fake.OpStatus, Kind: kind})
			res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
			require.Error(t, err)
			assert.True(t, fence.IsNotDone(err))
			assert.False(t, res.Fenced())
			assert.Equal(t, 0, d.Calls(fake.OpSet), "nothing is set without a first read")
			assert.Equal(t, fence.StateOn, d.Truth("1"))
		})
	}
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.BadState})
	_, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionStatus)
	assert.ErrorIs(t, err, fence.ErrBadState)
}

func TestUnknownPlugFails(t *testing.T) {
	d := fake.New(fake.Options{})
	m := method(d, fence.Options{})
	m.Plug = "99"
	for _, a := range []fence.Action{fence.ActionOff, fence.ActionOn, fence.ActionReboot, fence.ActionStatus} {
		res, err := fence.Do(t.Context(), m, a)
		require.Error(t, err, a)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
		assert.False(t, res.Fenced())
	}
}

func TestOnRetriesAfterNotDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{Initial: fence.StateOff})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail, Times: 1})
		rec := &recorder{}
		res, err := fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionOn)
		require.NoError(t, err)
		require.Len(t, res.Attempts, 2)
		assert.Equal(t, fence.OutcomeNotDone, res.Attempts[0].Outcome)
		assert.Equal(t, fence.OutcomeConfirmed, res.Attempts[1].Outcome)
		assert.Equal(t, []string{"on:not-done", "on:confirmed"}, rec.outcomes())
	})
}

func TestRetryCounts(t *testing.T) {
	cases := []struct {
		name   string
		action fence.Action
		opts   fence.Options
		sets   int
	}{
		{"on default: 1+1", fence.ActionOn, fence.Options{}, 2},
		{"on retry-on 3", fence.ActionOn, fence.Options{RetryOn: 3}, 4},
		{"on no retry", fence.ActionOn, fence.Options{RetryOn: fence.NoRetry}, 1},
		{"off default: never retried, as the agents", fence.ActionOff, fence.Options{}, 1},
		{"off retry-off 2", fence.ActionOff, fence.Options{RetryOff: 2}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			initial := fence.StateOn
			if c.action == fence.ActionOn {
				initial = fence.StateOff
			}
			d := fake.New(fake.Options{Initial: initial})
			d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
			res, err := fence.Do(t.Context(), method(d, c.opts), c.action)
			require.Error(t, err)
			assert.True(t, fence.IsNotDone(err), "every attempt was refused: surely not done")
			assert.Equal(t, c.sets, d.Calls(fake.OpSet))
			assert.Len(t, res.Attempts, c.sets)
		})
	}
}

func TestUnknownSetOutcomeIsVerified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The set returned an error, but did act: the read confirms it.
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Acted: true})
		res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())

		// The set returned an error and did not act: unknown, after the
		// power timeout; an on is then retried only after a fresh read.
		d = fake.New(fake.Options{Initial: fence.StateOff})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Acted: false, Times: 1})
		res, err = fence.Do(t.Context(), method(d, fence.Options{PowerTimeout: 2 * time.Second}), fence.ActionOn)
		require.NoError(t, err)
		require.Len(t, res.Attempts, 2)
		assert.Equal(t, fence.OutcomeUncertain, res.Attempts[0].Outcome)
		assert.Equal(t, 2, d.Calls(fake.OpSet))

		d = fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Acted: false})
		_, err = fence.Do(t.Context(), method(d, fence.Options{PowerTimeout: 2 * time.Second}), fence.ActionOff)
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err))
	})
}

func TestUnknownThenNotDoneStaysUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{Initial: fence.StateOff})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Acted: false, Times: 1})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
		_, err := fence.Do(t.Context(), method(d, fence.Options{PowerTimeout: time.Second}), fence.ActionOn)
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err), "an earlier attempt may have acted")
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
	})
}

func TestHangingSetHonoursDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Hang})
		ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second)
		defer cancel()
		start := time.Now()
		res, err := fence.Do(ctx, method(d, fence.Options{}), fence.ActionOff)
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err), "a hung set may have acted")
		assert.False(t, res.Fenced())
		assert.LessOrEqual(t, time.Since(start), 7*time.Second)
	})
}

func TestHangingStatusBoundedByIOTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Hang})
		start := time.Now()
		_, err := fence.Do(t.Context(), method(d, fence.Options{IOTimeout: 3 * time.Second}), fence.ActionOff)
		require.Error(t, err)
		assert.True(t, fence.IsNotDone(err))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestAttemptsShareTheCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{Initial: fence.StateOff})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := fence.Do(ctx, method(d, fence.Options{}), fence.ActionOn)
		require.Error(t, err)
		require.Len(t, res.Attempts, 2, "both attempts run within the caller's deadline")
		assert.LessOrEqual(t, res.Attempts[0].Duration, 5*time.Second)
		assert.LessOrEqual(t, res.Duration, 10*time.Second)
	})
}

func TestRebootOnOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{SwitchDelay: 1500 * time.Millisecond})
		rec := &recorder{}
		res, err := fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionReboot)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, fence.StateOn, res.State)
		assert.Nil(t, res.OnErr)
		assert.Equal(t, []string{"off:confirmed", "on:confirmed"}, rec.outcomes())
		assert.Equal(t, fence.StateOn, d.Truth("1"))
	})
}

func TestRebootFromOffSkipsOff(t *testing.T) {
	d := fake.New(fake.Options{Initial: fence.StateOff})
	res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 1, d.Calls(fake.OpSet))
}

func TestRebootFailedOnStillFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		// Once the off is confirmed, the device stops switching.
		obs := fence.ObserverFunc(func(e fence.Event) {
			if e.Phase == fence.ActionOff && e.Outcome == fence.OutcomeConfirmed {
				d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
			}
		})
		res, err := fence.Do(t.Context(), method(d, fence.Options{Observer: obs, PowerTimeout: 2 * time.Second}), fence.ActionReboot)
		require.NoError(t, err, "as the agents: the node was fenced, so the reboot succeeded")
		assert.True(t, res.Fenced())
		require.Error(t, res.OnErr)
		assert.ErrorIs(t, res.OnErr, fence.ErrTimeout)
		assert.Equal(t, fence.StateOff, res.State)
	})
}

func TestRebootFailedOffFails(t *testing.T) {
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
	res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionReboot)
	require.Error(t, err)
	assert.False(t, res.Fenced())
	assert.True(t, fence.IsNotDone(err))
}

// plain hides a device's optional capabilities.
type plain struct{ fence.Device }

func TestRebootCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{SwitchDelay: time.Second})
		res, err := fence.Do(t.Context(), method(d, fence.Options{RebootMethod: fence.RebootCycle}), fence.ActionReboot)
		require.NoError(t, err)
		assert.Equal(t, 1, d.Calls(fake.OpCycle))
		assert.Equal(t, 0, d.Calls(fake.OpSet))
		assert.Equal(t, fence.StateOn, res.State)
		assert.False(t, res.Fenced(), "a native cycle never shows the off")

		_, err = fence.Do(t.Context(), method(plain{d}, fence.Options{RebootMethod: fence.RebootCycle}), fence.ActionReboot)
		assert.ErrorIs(t, err, fence.ErrUnsupported)
		assert.True(t, fence.IsNotDone(err))

		d.Inject(fake.Fault{Op: fake.OpCycle, Kind: fake.Fail, Times: 1})
		res, err = fence.Do(t.Context(), method(d, fence.Options{RebootMethod: fence.RebootCycle}), fence.ActionReboot)
		require.NoError(t, err, "a refused cycle is retried")
		assert.Len(t, res.Attempts, 2)

		// A cycle whose outcome is unknown fails, though the plug reads
		// on: the cycle may never have run. It is not sent again.
		d.Inject(fake.Fault{Op: fake.OpCycle, Kind: fake.Unknown, Acted: false})
		res, err = fence.Do(t.Context(), method(d, fence.Options{RebootMethod: fence.RebootCycle}), fence.ActionReboot)
		require.Error(t, err, "an unknown cycle is no reboot")
		assert.False(t, fence.IsNotDone(err))
		assert.Equal(t, fence.StateOn, res.State)
		assert.Len(t, res.Attempts, 1)
		assert.Equal(t, fence.OutcomeUncertain, res.Attempts[0].Outcome)
	})
}

func TestSoftOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		res, err := fence.Do(t.Context(), method(d, fence.Options{Soft: true}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, 1, d.Calls(fake.OpSoftOff))
		assert.Equal(t, 0, d.Calls(fake.OpSet))

		// A refused soft off falls back to a hard one.
		d = fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})
		res, err = fence.Do(t.Context(), method(d, fence.Options{Soft: true}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, 1, d.Calls(fake.OpSet))
		require.Len(t, res.Attempts, 2)

		// A soft off that never takes falls back after SoftTimeout.
		d = fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore})
		start := time.Now()
		res, err = fence.Do(t.Context(), method(d, fence.Options{Soft: true, SoftTimeout: 5 * time.Second}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, 5*time.Second, time.Since(start))

		// No SoftOffer: a hard off.
		d = fake.New(fake.Options{})
		_, err = fence.Do(t.Context(), method(plain{d}, fence.Options{Soft: true}), fence.ActionOff)
		require.NoError(t, err)
		assert.Equal(t, 1, d.Calls(fake.OpSet))
	})
}

func TestFlappingDeviceNeedsAMatchingRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Flap})
		res, err := fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionOff)
		// A flapping device is read on or off; whichever way, a success
		// only ever follows a read of off.
		if err == nil {
			assert.Equal(t, fence.StateOff, res.State)
			assert.True(t, res.Fenced())
		}
	})
}

func TestStatusListMonitor(t *testing.T) {
	d := fake.New(fake.Options{Plugs: []string{"1", "2"}, Initial: fence.StateOff})
	rec := &recorder{}
	res, err := fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionStatus)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, res.State)
	assert.Equal(t, 0, d.Calls(fake.OpSet))

	res, err = fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionList)
	require.NoError(t, err)
	assert.Len(t, res.Plugs, 2)

	_, err = fence.Do(t.Context(), method(d, fence.Options{Observer: rec}), fence.ActionMonitor)
	require.NoError(t, err)
	assert.Equal(t, []string{"status:read", "list:read", "monitor:read"}, rec.outcomes())

	d.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
	_, err = fence.Do(t.Context(), method(d, fence.Options{}), fence.ActionMonitor)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	_, err = fence.Do(t.Context(), method(plain{d}, fence.Options{}), fence.ActionList)
	assert.ErrorIs(t, err, fence.ErrUnsupported)
}

func TestMethodActionOverridesCaller(t *testing.T) {
	d := fake.New(fake.Options{})
	m := method(d, fence.Options{})
	m.Action = fence.ActionOff
	res, err := fence.Do(t.Context(), m, fence.ActionOn)
	require.NoError(t, err)
	assert.Equal(t, fence.ActionOff, res.Action)
	assert.Equal(t, fence.StateOff, d.Truth("1"))
}

func TestMethodActionNeverTurnsAReadIntoAnAct(t *testing.T) {
	d := fake.New(fake.Options{})
	m := method(d, fence.Options{})
	m.Action = fence.ActionOff
	for _, a := range []fence.Action{fence.ActionStatus, fence.ActionList, fence.ActionMonitor} {
		res, err := fence.Do(t.Context(), m, a)
		require.NoError(t, err, a)
		assert.Equal(t, a, res.Action)
	}
	assert.Equal(t, 0, d.Calls(fake.OpSet), "a read of an off method switched nothing")
	assert.Equal(t, fence.StateOn, d.Truth("1"))
}

func TestNoDevice(t *testing.T) {
	_, err := fence.Do(t.Context(), &fence.Method{Name: "x"}, fence.ActionOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
}

func TestErrorNamesNodeMethodPlugNeverSecrets(t *testing.T) {
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Down})
	m := method(d, fence.Options{})
	m.Node = "worker 7"
	_, err := fence.Do(t.Context(), m, fence.ActionOff)
	require.Error(t, err)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, `fence: node "worker 7", method pdu-off, driver fake, plug 1: off: status:`), msg)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.True(t, errors.Is(err, fence.ErrNotDone))
}

func TestUnknownSoftOffThenRefusedHardOffIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Unknown})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
		res, err := fence.Do(t.Context(), method(d, fence.Options{Soft: true, SoftTimeout: time.Second}), fence.ActionOff)
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err), "the soft off may have acted")
		assert.False(t, res.Fenced())
	})
}
