package fake_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
)

const (
	on  = fence.StateOn
	off = fence.StateOff
)

// Every capability of the fence package is implemented.
var (
	_ fence.Device    = (*fake.Device)(nil)
	_ fence.Cycler    = (*fake.Device)(nil)
	_ fence.SoftOffer = (*fake.Device)(nil)
	_ fence.Lister    = (*fake.Device)(nil)
	_ fence.Monitor   = (*fake.Device)(nil)
)

func truthOf(d *fake.Device) func(context.Context, string) (fence.State, error) {
	return func(_ context.Context, plug string) (fence.State, error) { return d.Truth(plug), nil }
}

// fileTruth reads a state file as fence_dummy does, without the fake.
func fileTruth(path string) func(context.Context, string) (fence.State, error) {
	return func(context.Context, string) (fence.State, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return off, nil
		}
		if err != nil {
			return fence.StateUnknown, err
		}
		switch strings.ToLower(string(b)) {
		case "on":
			return on, nil
		case "off":
			return off, nil
		}
		return fence.StateUnknown, fmt.Errorf("state file holds %q", b)
	}
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		o    fake.Options
	}{
		{"memory", fake.Options{}},
		{"memory-initial-off", fake.Options{Initial: off, Plugs: []string{"a", "b", "c"}}},
		{"switch-delay", fake.Options{SwitchDelay: 20 * time.Millisecond}},
		{"bmc", fake.Options{Plugs: []string{""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
				d := fake.New(c.o)
				t.Cleanup(func() { d.Close() })
				return &fencetest.Fixture{
					Device: d, Plugs: d.Plugs(), MissingPlug: "99",
					Truth: truthOf(d), Settle: c.o.SwitchDelay,
				}
			})
		})
	}
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprintf("state-file-delay-%v", delay), func(t *testing.T) {
			fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
				path := filepath.Join(t.TempDir(), "status")
				d := fake.New(fake.Options{StateFile: path, SwitchDelay: delay})
				t.Cleanup(func() { d.Close() })
				return &fencetest.Fixture{
					Device: d, Plugs: []string{"1"}, MissingPlug: "2",
					Truth: fileTruth(path), Settle: delay,
				}
			})
		})
	}
	t.Run("named-through-registry", func(t *testing.T) {
		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
			name := strings.NewReplacer("/", "-").Replace(t.Name())
			t.Cleanup(func() { fake.Forget(name) })
			p := fence.NewParams("address", "fake://"+name, "plugs", "a,b", "switch_delay", "0.01")
			m, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "node", Name: "pdu", Params: p})
			require.NoError(t, err)
			d := fake.Named(name)
			require.NotNil(t, d)
			return &fencetest.Fixture{
				Device: m.Device, Plugs: []string{"a", "b"}, MissingPlug: "c",
				Truth: truthOf(d), Settle: 10 * time.Millisecond,
			}
		})
	})
	// The state file's plug answers to "" too (see TestStateFile), but
	// List reports it as "1": the suite, which wants every fixture plug
	// listed, runs with "1".
}

func TestDefaults(t *testing.T) {
	d := fake.New(fake.Options{})
	assert.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7", "8"}, d.Plugs())
	plugs, err := d.List(t.Context())
	require.NoError(t, err)
	require.Len(t, plugs, 8)
	for i, p := range plugs {
		assert.Equal(t, fence.Plug{ID: fmt.Sprint(i + 1), Name: fmt.Sprint("node", i+1), State: on}, p)
	}
	require.NoError(t, d.Monitor(t.Context()))
	assert.Equal(t, "", d.StateFile())
	assert.Equal(t, "fake(8 plugs)", d.String())

	d = fake.New(fake.Options{Plugs: []string{"a", "b"}, Names: map[string]string{"a": "worker-1"}, Initial: off})
	plugs, err = d.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []fence.Plug{{ID: "a", Name: "worker-1", State: off}, {ID: "b", Name: "nodeb", State: off}}, plugs)
	assert.Equal(t, []fence.State{off}, d.History("a"))

	assert.PanicsWithValue(t, `fake: New: plug "a" listed twice`, func() { fake.New(fake.Options{Plugs: []string{"a", "a"}}) })
	assert.Panics(t, func() { fake.New(fake.Options{Initial: 7}) })
}

func TestStatusSetCycleSoftOff(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	st, err := d.Status(ctx, "3")
	require.NoError(t, err)
	assert.Equal(t, on, st)

	require.NoError(t, d.Set(ctx, "3", off))
	st, err = d.Status(ctx, "3")
	require.NoError(t, err)
	assert.Equal(t, off, st)
	assert.Equal(t, off, d.Truth("3"))
	assert.Equal(t, on, d.Truth("4"), "other plugs are left alone")

	require.NoError(t, d.Set(ctx, "3", off), "idempotent")
	require.NoError(t, d.Set(ctx, "3", on))
	assert.Equal(t, []fence.State{on, off, on}, d.History("3"), "a switch to the same state is not history")

	require.NoError(t, d.SoftOff(ctx, "5"))
	assert.Equal(t, off, d.Truth("5"))
	require.NoError(t, d.Cycle(ctx, "5"))
	assert.Equal(t, on, d.Truth("5"), "a cycle ends on, whatever the state before")
	require.NoError(t, d.Cycle(ctx, "5"))
	assert.Equal(t, []fence.State{on, off, on, off, on}, d.History("5"))

	err = d.Set(ctx, "3", fence.StateUnknown)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	assert.Equal(t, on, d.Truth("3"))

	assert.Equal(t, 2, d.Calls(fake.OpStatus))
	assert.Equal(t, 4, d.Calls(fake.OpSet))
	assert.Equal(t, 2, d.Calls(fake.OpCycle))
	assert.Equal(t, 1, d.Calls(fake.OpSoftOff))
	assert.Equal(t, 9, d.Calls(fake.OpAny))
	d.ResetCalls()
	assert.Equal(t, 0, d.Calls(fake.OpAny))

	d.SetTruth("3", off)
	assert.Equal(t, off, d.Truth("3"))
	assert.Equal(t, 0, d.Calls(fake.OpAny), "SetTruth and Truth are not calls")
	assert.PanicsWithValue(t, `fake: SetTruth: unknown plug "9"`, func() { d.SetTruth("9", off) })
	assert.Panics(t, func() { d.SetTruth("3", fence.StateUnknown) })
	assert.Equal(t, fence.StateUnknown, d.Truth("9"))
	assert.Nil(t, d.History("9"))
}

func TestUnknownPlug(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	st, err := d.Status(ctx, "9")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.Equal(t, fence.StateUnknown, st)
	for name, act := range map[string]func() error{
		"set":      func() error { return d.Set(ctx, "9", off) },
		"cycle":    func() error { return d.Cycle(ctx, "9") },
		"soft-off": func() error { return d.SoftOff(ctx, "9") },
		"empty":    func() error { return d.Set(ctx, "", off) },
	} {
		err := act()
		assert.ErrorIs(t, err, fence.ErrUnknownPlug, name)
		assert.True(t, fence.IsNotDone(err), name)
	}
}

func TestContextDone(t *testing.T) {
	d := fake.New(fake.Options{})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		st, err := d.Status(c.ctx, "1")
		assert.ErrorIs(t, err, c.want)
		assert.Equal(t, fence.StateUnknown, st)
		for name, err := range map[string]error{
			"set":      d.Set(c.ctx, "1", off),
			"cycle":    d.Cycle(c.ctx, "1"),
			"soft-off": d.SoftOff(c.ctx, "1"),
		} {
			assert.ErrorIs(t, err, c.want, name)
			assert.True(t, fence.IsNotDone(err), "%s: nothing was done", name)
		}
		_, err = d.List(c.ctx)
		assert.ErrorIs(t, err, c.want)
		assert.ErrorIs(t, d.Monitor(c.ctx), c.want)
	}
	assert.Equal(t, on, d.Truth("1"))
	assert.Equal(t, []fence.State{on}, d.History("1"))
	assert.Equal(t, 12, d.Calls(fake.OpAny), "calls are counted even when they fail")
}

func TestSwitchDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		d := fake.New(fake.Options{SwitchDelay: time.Second})
		start := time.Now()
		require.NoError(t, d.Set(ctx, "1", off))
		assert.Equal(t, time.Duration(0), time.Since(start), "Set returns at once")
		assert.True(t, d.Pending("1"))
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, on, d.Truth("1"))
		st, err := d.Status(ctx, "1")
		require.NoError(t, err)
		assert.Equal(t, on, st)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, off, d.Truth("1"))
		assert.False(t, d.Pending("1"))

		// A later request supersedes a pending one.
		require.NoError(t, d.Set(ctx, "1", on))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, d.Set(ctx, "1", off))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, off, d.Truth("1"))
		assert.Equal(t, []fence.State{on, off}, d.History("1"), "the superseded on never happened")

		// SetTruth cancels a pending switch.
		require.NoError(t, d.Set(ctx, "2", off))
		d.SetTruth("2", on)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, on, d.Truth("2"))

		// A cycle: off at once, on half the delay later.
		require.NoError(t, d.Cycle(ctx, "3"))
		assert.Equal(t, off, d.Truth("3"))
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, on, d.Truth("3"))

		// A soft off takes the delay too.
		require.NoError(t, d.SoftOff(ctx, "4"))
		assert.Equal(t, on, d.Truth("4"))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, off, d.Truth("4"))

		// Close carries out pending switches at once.
		require.NoError(t, d.Set(ctx, "5", off))
		require.NoError(t, d.Close())
		assert.Equal(t, off, d.Truth("5"))
		assert.False(t, d.Pending("5"))
		assert.Equal(t, 1, d.Calls(fake.OpClose))
	})
}

func TestVerifiedActionsWithDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{SwitchDelay: 1500 * time.Millisecond})
		m := &fence.Method{Device: d, Plug: "2"}
		start := time.Now()
		res, err := fence.Do(t.Context(), m, fence.ActionReboot)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, 4*time.Second+fence.DefaultMinOff, time.Since(start), "off read at 0, 1, 2 s; held off 2 s; on read at 4, 5, 6 s")
		assert.Equal(t, []fence.State{on, off, on}, d.History("2"))

		m.Options.RebootMethod = fence.RebootCycle
		res, err = fence.Do(t.Context(), m, fence.ActionReboot)
		require.NoError(t, err)
		assert.Equal(t, on, res.State)
		assert.Equal(t, []fence.State{on, off, on, off, on}, d.History("2"))
	})
}

func TestFaultFail(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	cause := errors.New("outlet locked")
	d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail, Plugs: []string{"2"}, Err: cause, Times: 2})
	for range 2 {
		err := d.Set(ctx, "2", off)
		require.Error(t, err)
		assert.True(t, fence.IsNotDone(err))
		assert.ErrorIs(t, err, cause)
		assert.Equal(t, on, d.Truth("2"))
	}
	require.NoError(t, d.Set(ctx, "2", off), "the fault is used up")
	assert.Equal(t, off, d.Truth("2"))
	assert.Empty(t, d.Faults())

	remove := d.Inject(fake.Fault{Kind: fake.Fail})
	for name, err := range map[string]error{
		"status":   second(d.Status(ctx, "1")),
		"set":      d.Set(ctx, "1", off),
		"cycle":    d.Cycle(ctx, "1"),
		"soft-off": d.SoftOff(ctx, "1"),
		"list":     second(d.List(ctx)),
		"monitor":  d.Monitor(ctx),
	} {
		assert.True(t, fence.IsNotDone(err), name)
		assert.Contains(t, err.Error(), "injected failure", name)
	}
	assert.Equal(t, on, d.Truth("1"))
	assert.NoError(t, d.Close(), "Close is never faulted")
	remove()
	remove()
	require.NoError(t, d.Set(ctx, "1", off))
}

func second[T any](_ T, err error) error { return err }

func TestFaultHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Kind: fake.Hang})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		st, err := d.Status(ctx, "1")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, fence.StateUnknown, st)
		assert.Equal(t, 3*time.Second, time.Since(start))

		for name, act := range map[string]func(context.Context) error{
			"set":      func(ctx context.Context) error { return d.Set(ctx, "1", off) },
			"cycle":    func(ctx context.Context) error { return d.Cycle(ctx, "1") },
			"soft-off": func(ctx context.Context) error { return d.SoftOff(ctx, "1") },
		} {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			start := time.Now()
			err := act(ctx)
			cancel()
			assert.Equal(t, 2*time.Second, time.Since(start), name)
			assert.ErrorIs(t, err, context.DeadlineExceeded, name)
			assert.False(t, fence.IsNotDone(err), "%s: a hung request may have acted", name)
			assert.ErrorIs(t, err, fence.ErrOutcomeUnknown, name)
		}
		assert.Equal(t, on, d.Truth("1"))

		// Cancelled while hanging.
		ctx, cancel = context.WithCancel(t.Context())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		_, err = d.List(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestFaultDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Kind: fake.Delay, Delay: 2 * time.Second, Op: fake.OpSet})
		start := time.Now()
		require.NoError(t, d.Set(t.Context(), "1", off))
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, off, d.Truth("1"))

		// The context ends during the delay: nothing is done.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		err := d.Set(ctx, "1", on)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, fence.IsNotDone(err))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, off, d.Truth("1"))

		// Delays add up, and later faults still apply: a failure after 3 s.
		d.Inject(fake.Fault{Kind: fake.Fail, Delay: time.Second, Op: fake.OpSet})
		start = time.Now()
		err = d.Set(t.Context(), "1", on)
		assert.True(t, fence.IsNotDone(err))
		assert.Equal(t, 3*time.Second, time.Since(start))

		// Status is not delayed.
		start = time.Now()
		_, err = d.Status(t.Context(), "1")
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(start))
	})
}

func TestFaultLie(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	d.SetTruth("1", off)
	d.SetTruth("2", off)
	remove := d.Inject(fake.Fault{Kind: fake.Lie, State: on, Plugs: []string{"1"}})
	st, err := d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, on, st)
	st, err = d.Status(ctx, "2")
	require.NoError(t, err)
	assert.Equal(t, off, st, "the lie is limited to plug 1")
	require.NoError(t, d.Set(ctx, "1", off), "a lie does not touch Set")
	plugs, err := d.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, off, plugs[0].State, "a fault limited to plugs does not touch List")
	remove()

	d.Inject(fake.Fault{Op: fake.OpList, Kind: fake.Lie, State: on})
	plugs, err = d.List(ctx)
	require.NoError(t, err)
	for _, p := range plugs {
		assert.Equal(t, on, p.State)
	}
	st, err = d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, off, st)
}

func TestFaultFlap(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Flap})
	var got []fence.State
	for range 4 {
		st, err := d.Status(ctx, "1")
		require.NoError(t, err)
		got = append(got, st)
	}
	assert.Equal(t, []fence.State{on, off, on, off}, got)
	st, err := d.Status(ctx, "2")
	require.NoError(t, err)
	assert.Equal(t, on, st, "each plug flaps on its own")
	d.SetTruth("1", off)
	st, err = d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, on, st, "whatever the truth")
}

func TestFaultUnknown(t *testing.T) {
	ctx := t.Context()
	for _, acted := range []bool{false, true} {
		d := fake.New(fake.Options{})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Acted: acted})
		err := d.Set(ctx, "1", off)
		require.Error(t, err)
		assert.False(t, fence.IsNotDone(err))
		assert.True(t, fence.IsOutcomeUnknown(err))
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
		want := on
		if acted {
			want = off
		}
		assert.Equal(t, want, d.Truth("1"), "acted=%v", acted)
	}

	d := fake.New(fake.Options{})
	cause := errors.New("connection reset")
	d.Inject(fake.Fault{Kind: fake.Unknown, Err: cause, Acted: true})
	err := d.Cycle(ctx, "1")
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, []fence.State{on, off, on}, d.History("1"))
	err = d.SoftOff(ctx, "1")
	assert.True(t, fence.IsOutcomeUnknown(err))
	assert.Equal(t, off, d.Truth("1"))
	st, err := d.Status(ctx, "1")
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, fence.StateUnknown, st)
}

func TestFaultDown(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Kind: fake.Down})
	st, err := d.Status(ctx, "1")
	assert.Equal(t, fence.StateUnknown, st)
	for name, err := range map[string]error{
		"status":       err,
		"unknown plug": second(d.Status(ctx, "99")),
		"set":          d.Set(ctx, "1", off),
		"cycle":        d.Cycle(ctx, "1"),
		"soft-off":     d.SoftOff(ctx, "1"),
		"list":         second(d.List(ctx)),
		"monitor":      d.Monitor(ctx),
	} {
		assert.ErrorIs(t, err, fence.ErrUnreachable, name)
		assert.True(t, fence.IsNotDone(err), name)
	}
	assert.Equal(t, on, d.Truth("1"))
	assert.NoError(t, d.Close())
}

func TestFaultIgnore(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Kind: fake.Ignore})
	require.NoError(t, d.Set(ctx, "1", off))
	require.NoError(t, d.SoftOff(ctx, "1"))
	d.SetTruth("2", off)
	require.NoError(t, d.Cycle(ctx, "2"))
	assert.Equal(t, on, d.Truth("1"))
	assert.Equal(t, off, d.Truth("2"))
	st, err := d.Status(ctx, "1")
	require.NoError(t, err, "Ignore does not touch Status")
	assert.Equal(t, on, st)
}

func TestFaultBadState(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{})
	d.Inject(fake.Fault{Kind: fake.BadState})
	st, err := d.Status(ctx, "1")
	assert.ErrorIs(t, err, fence.ErrBadState)
	assert.Equal(t, fence.StateUnknown, st)
	plugs, err := d.List(ctx)
	require.NoError(t, err)
	for _, p := range plugs {
		assert.Equal(t, fence.StateUnknown, p.State)
	}
	assert.ErrorIs(t, d.Monitor(ctx), fence.ErrBadState)
	require.NoError(t, d.Set(ctx, "1", off), "BadState does not touch Set")
	assert.Equal(t, off, d.Truth("1"))
}

func TestFaultOrder(t *testing.T) {
	ctx := t.Context()
	d := fake.New(fake.Options{Initial: off})
	// The first fault injected takes effect; Times counts only the calls a
	// fault took effect on.
	d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Unknown, Times: 1})
	d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
	err := d.Set(ctx, "1", on)
	assert.True(t, fence.IsOutcomeUnknown(err))
	err = d.Set(ctx, "1", on)
	assert.True(t, fence.IsNotDone(err))
	require.Len(t, d.Faults(), 1)
	assert.Equal(t, fake.Fail, d.Faults()[0].Kind)
	d.ClearFaults()

	// A fault with no effect on a call neither matches it nor uses a Time.
	d.Inject(fake.Fault{Kind: fake.Lie, State: on, Times: 1})
	require.NoError(t, d.Set(ctx, "1", off))
	require.Len(t, d.Faults(), 1, "a lie has no effect on Set")
	st, err := d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, on, st)
	st, err = d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, off, st, "used up")

	// Faults limited to plugs do not match List and Monitor.
	d.Inject(fake.Fault{Kind: fake.Down, Plugs: []string{"1"}})
	_, err = d.List(ctx)
	require.NoError(t, err)
	require.NoError(t, d.Monitor(ctx))
	_, err = d.Status(ctx, "2")
	require.NoError(t, err)
	_, err = d.Status(ctx, "1")
	assert.ErrorIs(t, err, fence.ErrUnreachable)

	assert.Panics(t, func() { d.Inject(fake.Fault{}) }, "a fault needs a kind")
	assert.Panics(t, func() { d.Inject(fake.Fault{Kind: fake.Fail, Op: fake.OpClose}) })
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "soft-off", fake.OpSoftOff.String())
	assert.Equal(t, "any", fake.OpAny.String())
	assert.Equal(t, "op(99)", fake.Op(99).String())
	assert.Equal(t, "bad-state", fake.BadState.String())
	assert.Equal(t, "kind(0)", fake.Kind(0).String())
}

// TestConcurrentUse hammers one device from many goroutines; run with
// -race.
func TestConcurrentUse(t *testing.T) {
	d := fake.New(fake.Options{SwitchDelay: time.Millisecond})
	ctx := t.Context()
	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			plug := d.Plugs()[w%8]
			for r := range rounds {
				s := []fence.State{on, off}[(w+r)%2]
				switch r % 10 {
				case 0:
					remove := d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Flap, Plugs: []string{plug}, Times: 3})
					defer remove()
				case 1:
					_ = d.Cycle(ctx, plug)
				case 2:
					_ = d.SoftOff(ctx, plug)
				case 3:
					_, _ = d.List(ctx)
					_ = d.Monitor(ctx)
				case 4:
					d.SetTruth(plug, s)
					_ = d.Truth(plug)
					_ = d.History(plug)
					_ = d.Faults()
					_ = d.Pending(plug)
				}
				_ = d.Set(ctx, plug, s)
				_, _ = d.Status(ctx, plug)
				_ = d.Calls(fake.OpAny)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, workers*rounds, d.Calls(fake.OpSet))
	assert.Equal(t, workers*rounds, d.Calls(fake.OpStatus))
	assert.Equal(t, workers*rounds/10, d.Calls(fake.OpCycle))
	require.NoError(t, d.Close())
	for _, p := range d.Plugs() {
		assert.True(t, d.Truth(p).Known())
		assert.False(t, d.Pending(p))
	}
}

// --- the state file ---

func TestStateFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "status")
	d := fake.New(fake.Options{StateFile: path, Plugs: []string{"a", "b"}, Names: map[string]string{"1": "worker-1"}})
	assert.Equal(t, []string{"1"}, d.Plugs(), "one plug")
	assert.Equal(t, path, d.StateFile())

	// Missing: off, as fence_dummy reads it.
	for _, plug := range []string{"", "1"} {
		st, err := d.Status(ctx, plug)
		require.NoError(t, err)
		assert.Equal(t, off, st)
	}
	_, err := d.Status(ctx, "2")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.ErrorIs(t, d.Set(ctx, "a", on), fence.ErrUnknownPlug)

	require.NoError(t, d.Set(ctx, "", on))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "on", string(b), "fence_dummy's format: no newline")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())

	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, d.Set(ctx, "1", off))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "off", string(b))
	fi, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "the file keeps its permissions")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	// Read on every Status: a change made by someone else shows at once.
	require.NoError(t, os.WriteFile(path, []byte("ON"), 0o644))
	st, err := d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, on, st, "any case")
	assert.Equal(t, on, d.Truth(""))
	plugs, err := d.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []fence.Plug{{ID: "1", Name: "worker-1", State: on}}, plugs)
	require.NoError(t, d.Monitor(ctx))

	// Anything but on or off: unknown, never a guess.
	for _, junk := range []string{"on\n", " off", "", "unknown", "1", "garbage", strings.Repeat("x", 1000)} {
		require.NoError(t, os.WriteFile(path, []byte(junk), 0o644))
		st, err := d.Status(ctx, "1")
		assert.ErrorIs(t, err, fence.ErrBadState, "%q", junk)
		assert.Equal(t, fence.StateUnknown, st, "%q", junk)
		assert.Equal(t, fence.StateUnknown, d.Truth("1"))
		plugs, err := d.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, fence.StateUnknown, plugs[0].State)
		assert.ErrorIs(t, d.Monitor(ctx), fence.ErrBadState)
	}
	// A set replaces junk.
	require.NoError(t, d.Set(ctx, "1", on))
	assert.Equal(t, on, d.Truth("1"))

	d.SetTruth("", off)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "off", string(b))

	// A file that cannot be read or written.
	bad := fake.New(fake.Options{StateFile: filepath.Join(dir, "no-such-dir", "status")})
	st, err = bad.Status(ctx, "1")
	require.NoError(t, err, "missing, as fence_dummy sees it")
	assert.Equal(t, off, st)
	err = bad.Set(ctx, "1", on)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err), "the file was not replaced")
	assert.Panics(t, func() { bad.SetTruth("1", on) })

	dirAsFile := fake.New(fake.Options{StateFile: dir})
	st, err = dirAsFile.Status(ctx, "1")
	require.Error(t, err)
	assert.Equal(t, fence.StateUnknown, st)
}

func TestStateFileParse(t *testing.T) {
	for in, want := range map[string]fence.State{"on": on, "off": off, "On": on, "OFF": off} {
		st, err := fake.ParseStateFile([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, st, in)
	}
	st, err := fake.ParseStateFile([]byte("off\n"))
	assert.ErrorIs(t, err, fence.ErrBadState)
	assert.Equal(t, fence.StateUnknown, st)
}

// Two devices on one file, as two processes would be, agree.
func TestStateFileShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	a := fake.New(fake.Options{StateFile: path})
	b := fake.New(fake.Options{StateFile: path})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for r := range 20 {
				d := []*fake.Device{a, b}[(i+r)%2]
				s := []fence.State{on, off}[r%2]
				assert.NoError(t, d.Set(t.Context(), "1", s))
				st, err := d.Status(t.Context(), "1")
				assert.NoError(t, err, "a reader never sees a partial write")
				assert.True(t, st.Known())
			}
		})
	}
	wg.Wait()
	assert.Equal(t, a.Truth("1"), b.Truth("1"))
}

// fenceDummy returns the path of the ClusterLabs agent fence_dummy, or
// skips the test (fails it when CI=true) when it is not installed.
func fenceDummy(t *testing.T) string {
	t.Helper()
	const path = "/usr/sbin/fence_dummy"
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if p, err := exec.LookPath("fence_dummy"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("fence_dummy is not installed (Debian package fence-agents); CI must run this test")
	}
	t.Skip("fence_dummy is not installed (Debian package fence-agents)")
	return ""
}

// dummy runs fence_dummy on the state file and returns its output and exit
// code (for status: 0 on, 2 off, 1 failure).
func dummy(t *testing.T, bin, file, action string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--type", "file", "--status-file", file, "--action", action)
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, "running fence_dummy: %s", out)
	return string(out), 0
}

func TestFenceDummyCompatible(t *testing.T) {
	bin := fenceDummy(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "status")
	d := fake.New(fake.Options{StateFile: path})

	// Missing file: both read off.
	out, code := dummy(t, bin, path, "status")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "Status: OFF")
	assert.Equal(t, off, d.Truth("1"))

	// fence_dummy writes, the fake reads.
	for _, s := range []fence.State{on, off, on} {
		out, code := dummy(t, bin, path, s.String())
		require.Equal(t, 0, code, out)
		st, err := d.Status(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, s, st, "after fence_dummy --action %v", s)
	}
	out, code = dummy(t, bin, path, "reboot")
	require.Equal(t, 0, code, out)
	st, err := d.Status(ctx, "1")
	require.NoError(t, err)
	assert.Equal(t, on, st)

	// The fake writes, fence_dummy reads.
	for _, c := range []struct {
		s    fence.State
		code int
		out  string
	}{{off, 2, "Status: OFF"}, {on, 0, "Status: ON"}, {off, 2, "Status: OFF"}} {
		require.NoError(t, d.Set(ctx, "1", c.s))
		out, code := dummy(t, bin, path, "status")
		assert.Equal(t, c.code, code, out)
		assert.Contains(t, out, c.out)
	}

	// Both refuse the same junk.
	for _, junk := range []string{"on\n", "garbage", ""} {
		require.NoError(t, os.WriteFile(path, []byte(junk), 0o644))
		_, code := dummy(t, bin, path, "status")
		assert.Equal(t, 1, code, "fence_dummy on %q", junk)
		_, err := d.Status(ctx, "1")
		assert.ErrorIs(t, err, fence.ErrBadState, "fake on %q", junk)
	}
	for _, ok := range []string{"ON", "Off"} {
		require.NoError(t, os.WriteFile(path, []byte(ok), 0o644))
		_, code := dummy(t, bin, path, "status")
		assert.NotEqual(t, 1, code, "fence_dummy on %q", ok)
		st, err := d.Status(ctx, "1")
		require.NoError(t, err, "fake on %q", ok)
		assert.Equal(t, code == 0, st == on, "both read %q alike", ok)
	}
}

// A verified action through the registry, standing in for fence_dummy, on
// the file fence_dummy reads.
func TestFenceDummyThroughRegistry(t *testing.T) {
	bin := fenceDummy(t)
	path := filepath.Join(t.TempDir(), "status")
	out, code := dummy(t, bin, path, "on")
	require.Equal(t, 0, code, out)

	p := fence.NewParams("state_file", path, "stonith_status_sleep", "0.01")
	m, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "dummy", Driver: "fence_dummy", Params: p})
	require.NoError(t, err)
	assert.Equal(t, "fake", m.Driver)
	res, err := fence.Do(t.Context(), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	out, code = dummy(t, bin, path, "status")
	assert.Equal(t, 2, code, out)

	res, err = fence.Do(t.Context(), m, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	out, code = dummy(t, bin, path, "status")
	assert.Equal(t, 0, code, out)
}

// --- the registered driver ---

func TestRegistered(t *testing.T) {
	r := fence.DefaultRegistry()
	for _, name := range []string{"fake", "FAKE", "fence_dummy"} {
		drv, ok := r.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "fake", drv.Name)
	}
	drv, _ := r.Lookup("fake")
	var keys []string
	for _, p := range drv.Params {
		keys = append(keys, p.Name)
		assert.NotEmpty(t, p.Description, p.Name)
	}
	assert.Subset(t, keys, []string{"plugs", "state_file", "switch_delay"})
}

func TestOpenParams(t *testing.T) {
	ctx := t.Context()
	open := func(kv ...string) (*fake.Device, error) {
		m, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "node", Name: "m", Driver: "fake", Params: fence.NewParams(kv...)})
		if err != nil {
			return nil, err
		}
		return m.Device.(*fake.Device), nil
	}
	d, err := open()
	require.NoError(t, err)
	assert.Len(t, d.Plugs(), 8)
	d2, err := open()
	require.NoError(t, err)
	assert.NotSame(t, d, d2, "no address: a new device each time")

	d, err = open("plugs", "4")
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2", "3", "4"}, d.Plugs())
	d, err = open("plugs", " a, b ,c", "initial", "off")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, d.Plugs())
	assert.Equal(t, off, d.Truth("b"))
	d, err = open("plugs", "pdu")
	require.NoError(t, err)
	assert.Equal(t, []string{"pdu"}, d.Plugs())

	synctest.Test(t, func(t *testing.T) {
		m, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "node", Name: "m", Driver: "fake", Params: fence.NewParams("switch-delay", "0.5", "plug", "2")})
		require.NoError(t, err)
		d := m.Device.(*fake.Device)
		require.NoError(t, d.Set(t.Context(), "2", off))
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, on, d.Truth("2"))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, off, d.Truth("2"))
	})

	for _, c := range []struct{ key, val string }{
		{"plugs", "0"}, {"plugs", "-3"}, {"plugs", "100000"}, {"plugs", "a,,b"}, {"plugs", "a,a"}, {"plugs", ""},
		{"switch_delay", "-1"}, {"switch_delay", "soon"}, {"initial", "maybe"}, {"initial", "unknown"},
		{"state_file", " "},
	} {
		_, err := open(c.key, c.val)
		require.Error(t, err, "%s=%q", c.key, c.val)
		assert.ErrorIs(t, err, fence.ErrConfig, "%s=%q", c.key, c.val)
		var fe *fence.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, c.key, fe.Field, "%s=%q", c.key, c.val)
	}
}

func TestNamed(t *testing.T) {
	const name = "test-rack"
	fake.Forget(name)
	t.Cleanup(func() { fake.Forget(name) })
	ctx := t.Context()
	assert.Nil(t, fake.Named(name))

	open := func(kv ...string) *fence.Method {
		m, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "node", Name: "m", Params: fence.NewParams(append(kv, "address", "fake://"+name)...)})
		require.NoError(t, err)
		return m
	}
	m1 := open("plugs", "2", "plug", "1")
	d := fake.Named(name)
	require.NotNil(t, d)
	assert.Same(t, d, m1.Device)
	assert.Same(t, d, fake.Named("TEST-RACK"), "names are not case-sensitive")
	assert.Equal(t, "fake://"+name, d.String())

	m2 := open("plugs", "6", "plug", "2")
	assert.Same(t, d, m2.Device, "the first open made it; later ones share it")
	assert.Equal(t, []string{"1", "2"}, d.Plugs())
	_, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "node", Name: "m", Params: fence.NewParams("address", "fake://"+name, "plugs", "x,x")})
	assert.ErrorIs(t, err, fence.ErrConfig, "parameters are still checked")

	_, err = fence.Do(ctx, m1, fence.ActionOff)
	require.NoError(t, err)
	assert.Equal(t, off, d.Truth("1"))
	d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
	_, err = fence.Do(ctx, m2, fence.ActionOff)
	assert.True(t, fence.IsNotDone(err), "a fault injected through Named reaches every opener")

	// Close on a shared device leaves it working for the others.
	d.ClearFaults()
	require.NoError(t, d.Close())
	_, err = fence.Do(ctx, m2, fence.ActionOff)
	require.NoError(t, err)

	fake.Forget(name)
	assert.Nil(t, fake.Named(name))
	m3 := open()
	assert.NotSame(t, d, m3.Device, "forgotten: a new device")

	d4 := fake.NewNamed(name, fake.Options{Plugs: []string{"x"}})
	assert.Same(t, d4, open().Device)
	assert.Same(t, d4, fake.Named(name))
}
