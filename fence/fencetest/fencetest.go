// Package fencetest is a conformance suite for fence drivers: it checks
// that a fence.Device keeps the contract that the engine (fence.Do) relies
// on. Every driver's tests run it, against the driver talking to a
// simulator, a recorded device or the real thing. It also holds Clock, the
// fake clock the tests of fencekit's packages (and a host's) run on.
//
// A driver's test gives Run a Harness: a function that sets up a device for
// one subtest and describes it in a Fixture. The suite calls it once per
// subtest, so each subtest starts afresh; the harness releases what it
// made with t.Cleanup. The Fixture's Truth reads the plug's real state by a
// way other than the driver (the simulator's own state, a state file), so
// that the suite can tell a driver that reports a switch from one that
// makes it.
//
//	func TestConformance(t *testing.T) {
//		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
//			sim := pdusim.Start(t) // stopped by its own t.Cleanup
//			dev, err := mypdu.Open(t.Context(), sim.Addr())
//			require.NoError(t, err)
//			t.Cleanup(func() { dev.Close() })
//			return &fencetest.Fixture{
//				Device:      dev,
//				Plugs:       []string{"1", "2", "3"},
//				MissingPlug: "99",
//				Truth: func(ctx context.Context, plug string) (fence.State, error) {
//					return sim.Outlet(plug), nil
//				},
//				Settle: 200 * time.Millisecond, // the simulator's switching delay
//			}
//		})
//	}
//
// The subtests are:
//
//   - RoundTrip: Set off then on, and on then off; Truth and Status follow.
//   - Idempotent: Set off twice, then on twice, without error.
//   - Isolation: a Set switches its plug and no other.
//   - UnknownPlug: Status and Set of MissingPlug fail with an error wrapping
//     fence.ErrUnknownPlug, and Status returns no state.
//   - Context: an already cancelled context, and one past its deadline,
//     make Status and Set fail promptly; a Set refused that way and marked
//     fence.NotDone leaves the plug alone.
//   - Concurrent: Status and Set from several goroutines, on different plugs
//     and on one plug, end in a state that Truth and Status agree on, and
//     a Set on one plug leaves the others alone.
//   - Do: fence.Do turns plugs off, on and reboots them (and, where the
//     device can, reboots by native cycle and turns off softly), with
//     Truth agreeing.
//   - List, Monitor, Close: for devices with those capabilities
//     (fence.Lister, fence.Monitor, io.Closer); skipped for the others.
//
// The suite does not run its subtests in parallel: a harness may share one
// simulator between them. It switches only the fixture's Plugs, and leaves
// them in any state.
package fencetest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

// Fixture describes a device under test.
type Fixture struct {
	// Device is the driver's device, opened for the subtest.
	Device fence.Device
	// Plugs are plugs the suite may switch freely; at least one. The
	// concurrency subtest uses all of them, so they must be distinct
	// plugs of the device.
	Plugs []string
	// MissingPlug is a plug the device does not have. When empty, the
	// UnknownPlug subtest is skipped (for a device that takes any plug).
	MissingPlug string
	// Truth returns a plug's true state, observed outside the driver: the
	// simulator's state, the state file, the fake's Truth.
	Truth func(ctx context.Context, plug string) (fence.State, error)
	// Settle is how long after a Set returns the true state may take to
	// change; 0 means it has changed when Set returns. The suite polls
	// Truth and Status for up to 2×Settle + 5 s (or reads them once when
	// Settle is 0) for a plug to reach a state, and waits 2×Settle before
	// it takes a state as final.
	Settle time.Duration
}

// Harness sets up a device for one subtest. It is called once per subtest
// with that subtest's t; it registers its cleanup with t.Cleanup, and fails
// t if it cannot set up.
type Harness func(t *testing.T) *Fixture

// Bounds of the suite.
const (
	// callTimeout bounds every call the suite makes to the device, so that
	// a driver that hangs fails the suite instead of stalling it.
	callTimeout = 30 * time.Second
	// prompt is how fast a call with a context already done must return.
	prompt = 5 * time.Second
	// pollEvery is the pause between two reads while waiting for a state.
	pollEvery = 5 * time.Millisecond
)

// Run runs the conformance suite against the devices h sets up, each check
// in its own subtest.
func Run(t *testing.T, h Harness) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, *Fixture)
	}{
		{"RoundTrip", testRoundTrip},
		{"Idempotent", testIdempotent},
		{"Isolation", testIsolation},
		{"UnknownPlug", testUnknownPlug},
		{"Context", testContext},
		{"Concurrent", testConcurrent},
		{"Do", testDo},
		{"List", testList},
		{"Monitor", testMonitor},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := h(t)
			checkFixture(t, f)
			tc.fn(t, f)
		})
	}
}

func checkFixture(t *testing.T, f *Fixture) {
	t.Helper()
	require.NotNil(t, f, "the harness returned no fixture")
	require.NotNil(t, f.Device, "Fixture.Device is nil")
	require.NotEmpty(t, f.Plugs, "Fixture.Plugs is empty: the suite needs a plug to switch")
	require.NotNil(t, f.Truth, "Fixture.Truth is nil")
	require.GreaterOrEqual(t, f.Settle, time.Duration(0), "Fixture.Settle is negative")
	for i, p := range f.Plugs {
		require.NotContains(t, f.Plugs[:i], p, "Fixture.Plugs lists plug %q twice", p)
	}
	if f.MissingPlug != "" {
		require.NotContains(t, f.Plugs, f.MissingPlug, "Fixture.MissingPlug is one of Fixture.Plugs")
	}
}

// wait is how long the suite waits for a state to settle.
func (f *Fixture) wait() time.Duration {
	if f.Settle == 0 {
		return 0
	}
	// Generous: a loaded test machine can stall a process for a while,
	// and a driver that passes does not wait for it.
	return 2*f.Settle + 5*time.Second
}

// quiet is how long the suite waits before it takes a state as final (that
// a plug did not switch, or which way concurrent Sets left it).
func (f *Fixture) quiet() time.Duration { return 2 * f.Settle }

// callCtx returns a context for one call to the device, and its cancel.
func callCtx(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), callTimeout)
}

// readStatus reads the plug through the driver.
func readStatus(t *testing.T, f *Fixture, plug string) (fence.State, error) {
	c, cancel := callCtx(t)
	defer cancel()
	return f.Device.Status(c, plug)
}

// readTruth reads the plug's true state.
func readTruth(t *testing.T, f *Fixture, plug string) (fence.State, error) {
	c, cancel := callCtx(t)
	defer cancel()
	return f.Truth(c, plug)
}

// trySet switches the plug through the driver.
func trySet(t *testing.T, f *Fixture, plug string, s fence.State) error {
	c, cancel := callCtx(t)
	defer cancel()
	return f.Device.Set(c, plug, s)
}

// status reads the plug through the driver, failing t on an error.
func status(t *testing.T, f *Fixture, plug string) fence.State {
	t.Helper()
	st, err := readStatus(t, f, plug)
	require.NoError(t, err, "Status(%q)", plug)
	require.True(t, st.Known(), "Status(%q) returned %v with no error; want on or off", plug, st)
	return st
}

// truth reads the plug's true state, failing t on an error.
func truth(t *testing.T, f *Fixture, plug string) fence.State {
	t.Helper()
	st, err := readTruth(t, f, plug)
	require.NoError(t, err, "Fixture.Truth(%q)", plug)
	return st
}

// set switches the plug through the driver, failing t on an error.
func set(t *testing.T, f *Fixture, plug string, s fence.State) {
	t.Helper()
	require.NoError(t, trySet(t, f, plug, s), "Set(%q, %v)", plug, s)
}

// polled is the outcome of eventually.
type polled struct {
	ok  bool        // the state wanted was read
	st  fence.State // the last state read
	err error       // the last read's error
}

// eventually reads the plug with read until it returns want, for at most
// d (once when d is 0).
func eventually(t *testing.T, d time.Duration, want fence.State, read func() (fence.State, error)) polled {
	deadline := time.Now().Add(d)
	for {
		st, err := read()
		if err == nil && st == want {
			return polled{ok: true, st: st}
		}
		left := time.Until(deadline)
		if left <= 0 || t.Context().Err() != nil {
			return polled{st: st, err: err}
		}
		time.Sleep(min(pollEvery, left))
	}
}

// expect waits until both Truth and Status report want.
func expect(t *testing.T, f *Fixture, plug string, want fence.State, why string) {
	t.Helper()
	p := eventually(t, f.wait(), want, func() (fence.State, error) { return readTruth(t, f, plug) })
	require.True(t, p.ok, "%s: plug %q: Truth is %v (error %v), want %v within %v", why, plug, p.st, p.err, want, f.wait())
	p = eventually(t, f.wait(), want, func() (fence.State, error) { return readStatus(t, f, plug) })
	require.True(t, p.ok, "%s: plug %q: Status is %v (error %v) while Truth is %v", why, plug, p.st, p.err, want)
}

// setAndWait switches the plug and waits until Truth and Status agree.
func setAndWait(t *testing.T, f *Fixture, plug string, s fence.State) {
	t.Helper()
	set(t, f, plug, s)
	expect(t, f, plug, s, fmt.Sprintf("after Set(%q, %v)", plug, s))
}

func other(s fence.State) fence.State {
	if s == fence.StateOn {
		return fence.StateOff
	}
	return fence.StateOn
}

func testRoundTrip(t *testing.T, f *Fixture) {
	plug := f.Plugs[0]
	for _, first := range []fence.State{fence.StateOff, fence.StateOn} {
		t.Run(fmt.Sprintf("%v-%v", first, other(first)), func(t *testing.T) {
			setAndWait(t, f, plug, other(first))
			setAndWait(t, f, plug, first)
			setAndWait(t, f, plug, other(first))
		})
	}
}

func testIdempotent(t *testing.T, f *Fixture) {
	plug := f.Plugs[0]
	for _, s := range []fence.State{fence.StateOff, fence.StateOn} {
		set(t, f, plug, s)
		set(t, f, plug, s)
		expect(t, f, plug, s, fmt.Sprintf("after Set(%q, %v) twice", plug, s))
		set(t, f, plug, s)
		expect(t, f, plug, s, fmt.Sprintf("after a third Set(%q, %v) of a plug already %v", plug, s, s))
	}
}

func testIsolation(t *testing.T, f *Fixture) {
	if len(f.Plugs) < 2 {
		t.Skip("the fixture has one plug")
	}
	want := make(map[string]fence.State, len(f.Plugs))
	for i, plug := range f.Plugs {
		want[plug] = []fence.State{fence.StateOff, fence.StateOn}[i%2]
		set(t, f, plug, want[plug])
	}
	for _, plug := range f.Plugs {
		expect(t, f, plug, want[plug], "setting up")
	}
	for _, plug := range f.Plugs {
		set(t, f, plug, other(want[plug]))
		expect(t, f, plug, other(want[plug]), fmt.Sprintf("after Set(%q, %v)", plug, other(want[plug])))
		time.Sleep(f.quiet())
		for _, o := range f.Plugs {
			if o != plug {
				assert.Equal(t, want[o], truth(t, f, o), "Set(%q, %v) switched plug %q too", plug, other(want[plug]), o)
			}
		}
		setAndWait(t, f, plug, want[plug])
	}
}

func testUnknownPlug(t *testing.T, f *Fixture) {
	if f.MissingPlug == "" {
		t.Skip("Fixture.MissingPlug is empty: the device takes any plug")
	}
	st, err := readStatus(t, f, f.MissingPlug)
	require.Error(t, err, "Status of the missing plug %q returned %v and no error", f.MissingPlug, st)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug, "Status of the missing plug %q", f.MissingPlug)
	assert.Equal(t, fence.StateUnknown, st, "Status of the missing plug %q returned a state with its error", f.MissingPlug)

	for _, s := range []fence.State{fence.StateOff, fence.StateOn} {
		err := trySet(t, f, f.MissingPlug, s)
		require.Error(t, err, "Set(%q, %v) of the missing plug succeeded", f.MissingPlug, s)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug, "Set(%q, %v) of the missing plug", f.MissingPlug, s)
	}
	// The fixture's plugs are untouched and still work.
	status(t, f, f.Plugs[0])
}

func testContext(t *testing.T, f *Fixture) {
	plug := f.Plugs[0]
	done := map[string]func() (context.Context, context.CancelFunc){
		"Canceled": func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(context.Background())
			cancel()
			return c, cancel
		},
		"DeadlineExceeded": func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		},
	}
	for _, name := range []string{"Canceled", "DeadlineExceeded"} {
		t.Run(name, func(t *testing.T) {
			setAndWait(t, f, plug, fence.StateOn)

			c, cancel := done[name]()
			defer cancel()
			var st fence.State
			var err error
			returned := within(prompt, func() { st, err = f.Device.Status(c, plug) })
			require.True(t, returned, "Status with a context already done did not return within %v", prompt)
			require.Error(t, err, "Status with a context already done returned %v and no error", st)

			returned = within(prompt, func() { err = f.Device.Set(c, plug, fence.StateOff) })
			require.True(t, returned, "Set with a context already done did not return within %v", prompt)
			require.Error(t, err, "Set with a context already done succeeded")
			if fence.IsNotDone(err) {
				// The driver says it did not act: hold it to its word.
				time.Sleep(f.quiet())
				assert.Equal(t, fence.StateOn, truth(t, f, plug), "Set failed with a NotDone error, yet the plug switched: %v", err)
			}
			// The device still works with a live context.
			setAndWait(t, f, plug, fence.StateOn)
		})
	}
}

// within runs fn and reports whether it returned within d. When it did
// not, fn keeps running in the background.
func within(d time.Duration, fn func()) bool {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func testConcurrent(t *testing.T, f *Fixture) {
	const rounds = 4

	t.Run("DifferentPlugs", func(t *testing.T) {
		// Each plug gets its own goroutine, and ends in a state of its own
		// (alternating across plugs), so that a Set that leaks to another
		// plug shows.
		final := make(map[string]fence.State, len(f.Plugs))
		for i, plug := range f.Plugs {
			final[plug] = []fence.State{fence.StateOff, fence.StateOn}[i%2]
		}
		hammer(t, f, "different plugs", len(f.Plugs), rounds, func(w, r int) (string, fence.State) {
			plug := f.Plugs[w]
			if r%2 == 0 {
				return plug, other(final[plug])
			}
			return plug, final[plug]
		})
		for _, plug := range f.Plugs {
			expect(t, f, plug, final[plug], fmt.Sprintf("after concurrent Sets, the last one to %v", final[plug]))
		}
	})

	t.Run("SamePlug", func(t *testing.T) {
		plug := f.Plugs[0]
		hammer(t, f, "one plug", 4, rounds, func(w, r int) (string, fence.State) {
			return plug, []fence.State{fence.StateOn, fence.StateOff}[(w+r)%2]
		})
		// Whichever Set came last, the plug settles in one state that
		// Truth and Status agree on.
		time.Sleep(f.quiet())
		want := truth(t, f, plug)
		require.True(t, want.Known(), "after concurrent Sets, Truth of plug %q is %v", plug, want)
		expect(t, f, plug, want, "after concurrent Sets on one plug")
		// And the plug still switches.
		setAndWait(t, f, plug, other(want))
	})
}

// hammer runs workers goroutines of rounds rounds each; in round r, worker
// w sets the plug and state that set(w, r) gives and reads that plug's
// status. Every error fails t, named by what.
func hammer(t *testing.T, f *Fixture, what string, workers, rounds int, set func(w, r int) (string, fence.State)) {
	t.Helper()
	errs := make(chan error, workers*rounds*2)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				plug, s := set(w, r)
				if err := trySet(t, f, plug, s); err != nil {
					errs <- fmt.Errorf("Set(%q, %v): %w", plug, s, err)
				}
				if _, err := readStatus(t, f, plug); err != nil {
					errs <- fmt.Errorf("Status(%q): %w", plug, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent calls on %s: %v", what, err)
	}
}

// method wraps the fixture's device for fence.Do.
func (f *Fixture) method(plug string, o fence.Options) *fence.Method {
	if o.PollInterval == 0 {
		o.PollInterval = 10 * time.Millisecond
	}
	if o.PowerTimeout == 0 {
		o.PowerTimeout = 3*time.Second + f.wait()
	}
	return &fence.Method{Name: "fencetest", Node: "fencetest-node", Driver: "fencetest", Device: f.Device, Plug: plug, Options: o}
}

// truthIs waits until Truth reports want.
func truthIs(t *testing.T, f *Fixture, plug string, want fence.State, why string) {
	t.Helper()
	p := eventually(t, f.wait(), want, func() (fence.State, error) { return readTruth(t, f, plug) })
	assert.True(t, p.ok, "%s: Truth of plug %q is %v (error %v), want %v", why, plug, p.st, p.err, want)
}

func testDo(t *testing.T, f *Fixture) {
	plug := f.Plugs[0]
	do := func(t *testing.T, a fence.Action, o fence.Options) *fence.Result {
		t.Helper()
		res, err := fence.Do(t.Context(), f.method(plug, o), a)
		require.NoError(t, err, "fence.Do(%v)", a)
		require.NotNil(t, res)
		return res
	}

	t.Run("Off", func(t *testing.T) {
		setAndWait(t, f, plug, fence.StateOn)
		res := do(t, fence.ActionOff, fence.Options{})
		assert.True(t, res.OffConfirmed, "off: OffConfirmed")
		assert.False(t, res.Already)
		assert.Equal(t, fence.StateOff, res.State)
		truthIs(t, f, plug, fence.StateOff, "after a verified off")

		res = do(t, fence.ActionOff, fence.Options{})
		assert.True(t, res.Already, "off of a plug already off")
		assert.True(t, res.OffConfirmed)
	})

	t.Run("On", func(t *testing.T) {
		setAndWait(t, f, plug, fence.StateOff)
		res := do(t, fence.ActionOn, fence.Options{})
		assert.False(t, res.Already)
		assert.Equal(t, fence.StateOn, res.State)
		truthIs(t, f, plug, fence.StateOn, "after a verified on")

		res = do(t, fence.ActionOn, fence.Options{})
		assert.True(t, res.Already, "on of a plug already on")
	})

	t.Run("Reboot", func(t *testing.T) {
		setAndWait(t, f, plug, fence.StateOn)
		res := do(t, fence.ActionReboot, fence.Options{})
		assert.True(t, res.OffConfirmed, "a reboot by off and on confirms the off")
		assert.NoError(t, res.OnErr, "power on after the off")
		assert.Equal(t, fence.StateOn, res.State)
		truthIs(t, f, plug, fence.StateOn, "after a reboot")
	})

	t.Run("Status", func(t *testing.T) {
		setAndWait(t, f, plug, fence.StateOff)
		res := do(t, fence.ActionStatus, fence.Options{})
		assert.Equal(t, fence.StateOff, res.State)
	})

	t.Run("RebootCycle", func(t *testing.T) {
		if _, ok := f.Device.(fence.Cycler); !ok {
			t.Skip("the device has no native cycle (fence.Cycler)")
		}
		setAndWait(t, f, plug, fence.StateOn)
		res := do(t, fence.ActionReboot, fence.Options{RebootMethod: fence.RebootCycle})
		assert.Equal(t, fence.StateOn, res.State)
		truthIs(t, f, plug, fence.StateOn, "after a native cycle")
	})

	t.Run("SoftOff", func(t *testing.T) {
		if _, ok := f.Device.(fence.SoftOffer); !ok {
			t.Skip("the device has no soft off (fence.SoftOffer)")
		}
		setAndWait(t, f, plug, fence.StateOn)
		res := do(t, fence.ActionOff, fence.Options{Soft: true})
		assert.True(t, res.OffConfirmed, "soft off: OffConfirmed")
		truthIs(t, f, plug, fence.StateOff, "after a soft off")
	})
}

func testList(t *testing.T, f *Fixture) {
	l, ok := f.Device.(fence.Lister)
	if !ok {
		t.Skip("the device cannot list its plugs (fence.Lister)")
	}
	// A mix of states, so that a list that reports one state for all
	// plugs shows.
	want := make(map[string]fence.State, len(f.Plugs))
	for i, plug := range f.Plugs {
		want[plug] = []fence.State{fence.StateOff, fence.StateOn}[i%2]
		set(t, f, plug, want[plug])
	}
	for _, plug := range f.Plugs {
		expect(t, f, plug, want[plug], "before List")
	}
	c, cancel := callCtx(t)
	defer cancel()
	plugs, err := l.List(c)
	require.NoError(t, err, "List")
	seen := map[string]bool{}
	for _, p := range plugs {
		assert.False(t, seen[p.ID], "List reports plug %q twice", p.ID)
		seen[p.ID] = true
	}
	for _, plug := range f.Plugs {
		i := slices.IndexFunc(plugs, func(p fence.Plug) bool { return p.ID == plug })
		if !assert.GreaterOrEqual(t, i, 0, "List lacks plug %q", plug) {
			continue
		}
		// StateUnknown: the device does not report states in its list.
		if st := plugs[i].State; st != fence.StateUnknown {
			assert.Equal(t, truth(t, f, plug), st, "List's state of plug %q", plug)
		}
	}
	if f.MissingPlug != "" {
		assert.False(t, seen[f.MissingPlug], "List reports the missing plug %q", f.MissingPlug)
	}
}

func testMonitor(t *testing.T, f *Fixture) {
	m, ok := f.Device.(fence.Monitor)
	if !ok {
		t.Skip("the device cannot check its health (fence.Monitor)")
	}
	c, cancel := callCtx(t)
	defer cancel()
	require.NoError(t, m.Monitor(c), "Monitor of a healthy device")
	res, err := fence.Do(t.Context(), f.method(f.Plugs[0], fence.Options{}), fence.ActionMonitor)
	require.NoError(t, err, "fence.Do(monitor)")
	require.NotNil(t, res)
}

func testClose(t *testing.T, f *Fixture) {
	c, ok := f.Device.(io.Closer)
	if !ok {
		t.Skip("the device holds nothing to close (io.Closer)")
	}
	// Use the device first, so that a driver that connects lazily has
	// something to close.
	status(t, f, f.Plugs[0])
	var err error
	require.True(t, within(prompt, func() { err = c.Close() }), "Close did not return within %v", prompt)
	assert.NoError(t, err, "Close")
	var panicked any
	require.True(t, within(prompt, func() {
		defer func() { panicked = recover() }()
		_ = c.Close() // may fail, must not panic
	}), "a second Close did not return within %v", prompt)
	assert.Nil(t, panicked, "a second Close panicked")
}
