package ipmi

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// Round trips are counted as the datagrams the BMC received: each request
// gets one reply, and go-ipmi resends only requests left unanswered.
func TestRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v15   bool
		setup int64 // datagrams to set a session up
	}{
		// Get Channel Authentication Capabilities, Open Session, RAKP 1,
		// RAKP 3, Set Session Privilege Level.
		{"lanplus", false, 5},
		// Get Channel Authentication Capabilities, Get Session Challenge,
		// Activate Session, Set Session Privilege Level.
		{"lan", true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
			d := p.open(t, func(o *Options) { o.V15 = tc.v15 })

			// A verified off on a fresh device: the session, then status,
			// power down, status.
			res, err := fence.Do(ctx(t), method(d, "off"), fence.ActionOff)
			require.NoError(t, err)
			require.True(t, res.Fenced())
			assert.Equal(t, tc.setup+3, g.Packets(), "fresh device: session set-up and three commands")
			assert.Equal(t, map[string]int{"Get Chassis Status": 2, "Chassis Control": 1},
				without(g.Commands(), "Get Channel Authentication Capabilities", "Get Session Challenge", "Activate Session", "Set Session Privilege Level"))

			// On the reused session: three round trips per verified action.
			for _, a := range []fence.Action{fence.ActionOn, fence.ActionOff, fence.ActionOn} {
				g.ResetCounts()
				res, err := fence.Do(ctx(t), method(d, "m"), a)
				require.NoError(t, err)
				assert.False(t, res.Already)
				assert.EqualValues(t, 3, g.Packets(), "%v on a reused session: status, control, status", a)
				assert.Equal(t, map[string]int{"Get Chassis Status": 2, "Chassis Control": 1}, g.Commands())
			}

			// An off of a node already off: one read.
			g.SetTruth(fence.StateOff)
			g.ResetCounts()
			res, err = fence.Do(ctx(t), method(d, "m"), fence.ActionOff)
			require.NoError(t, err)
			assert.True(t, res.Already)
			assert.EqualValues(t, 1, g.Packets())

			// Monitor: Get Device ID.
			g.ResetCounts()
			require.NoError(t, d.Monitor(ctx(t)))
			assert.EqualValues(t, 1, g.Packets())
			assert.Equal(t, map[string]int{"Get Device ID": 1}, g.Commands())

			assert.Equal(t, 1, d.Sessions(), "one session for every call")

			// Close: Close Session.
			g.ResetCounts()
			require.NoError(t, d.Close())
			assert.EqualValues(t, 1, g.Packets())
			assert.Equal(t, map[string]int{"Close Session": 1}, g.Commands())
		})
	}
}

func without(m map[string]int, keys ...string) map[string]int {
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

// A BMC that reboots forgets its sessions: the next read gets no answer on
// the old session and is run again on a new one.
func TestSessionReestablished(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, func(o *Options) { o.Timeout, o.Retries = 100*time.Millisecond, 1 })
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	require.Equal(t, 1, d.Sessions())

	require.NoError(t, g.Restart())
	st, err = d.Status(ctx(t), "")
	require.NoError(t, err, "a read is run again on a new session")
	assert.Equal(t, fence.StateOn, st)
	assert.Equal(t, 2, d.Sessions())

	// A command is not run again: its outcome is unknown, and the next
	// call sets a new session up.
	require.NoError(t, g.Restart())
	err = d.Set(ctx(t), "", fence.StateOff)
	require.Error(t, err)
	assert.True(t, fence.IsOutcomeUnknown(err), "%v", err)
	assert.ErrorIs(t, err, ErrNoReply)
	assert.Equal(t, fence.StateOn, g.Truth(), "the BMC dropped the command of the forgotten session")
	require.NoError(t, d.Set(ctx(t), "", fence.StateOff))
	assert.Equal(t, fence.StateOff, g.Truth())
	assert.Equal(t, 3, d.Sessions())

	// Through the engine: the first read sets a new session up, and the
	// off is verified.
	g.SetTruth(fence.StateOn)
	require.NoError(t, g.Restart())
	res, err := fence.Do(ctx(t), method(d, "m"), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 4, d.Sessions())
}

// A failed set-up leaves no session behind, and the next call tries again.
func TestSessionSetupRetried(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, func(o *Options) { o.Timeout, o.Retries = 100*time.Millisecond, NoRetry })
	g.SetFault(ipmisim.FaultSilent)
	_, err := d.Status(ctx(t), "")
	require.ErrorIs(t, err, ErrNoReply)
	assert.Equal(t, 0, d.Sessions())
	g.SetFault(ipmisim.FaultNone)
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	assert.Equal(t, 1, d.Sessions())
}

// Calls from many goroutines take turns on the one session.
func TestConcurrentCalls(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				switch (w + i) % 4 {
				case 0:
					errs <- d.Set(ctx(t), "", fence.StateOff)
				case 1:
					errs <- d.Set(ctx(t), "", fence.StateOn)
				case 2:
					_, err := d.Status(ctx(t), "")
					errs <- err
				case 3:
					errs <- d.Monitor(ctx(t))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, d.Sessions())
	assert.EqualValues(t, 5+80, g.Packets(), "one session, one round trip per call")
}

// Close ends a call in progress, and does not wait long for it.
func TestCloseDuringCall(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, func(o *Options) { o.Timeout, o.Retries = 2*time.Second, 1 })
	_, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	g.SetFault(ipmisim.FaultSilent)
	done := make(chan error, 1)
	go func() {
		_, err := d.Status(ctx(t), "")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := d.Close(); err != nil {
		// The BMC is silent: the goodbye goes unanswered.
		assert.ErrorIs(t, err, ErrNoReply)
		assert.Contains(t, err.Error(), "Close Session")
		t.Log(err)
	}
	assert.Less(t, time.Since(start), 3*time.Second)
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not end the call in progress")
	}
}

// The cycle and the soft off, which the conformance suite runs through
// the engine, act as the BMC's commands do.
func TestCycleSoftOffReset(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{CycleOffTime: 30 * time.Millisecond})
	d := p.open(t, nil)
	require.NoError(t, d.Cycle(ctx(t), ""))
	assert.Equal(t, 1, g.PowerCycles())
	require.Eventually(t, func() bool { return g.Truth() == fence.StateOn }, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, d.SoftOff(ctx(t), ""))
	assert.Equal(t, fence.StateOff, g.Truth())
	assert.Equal(t, 1, g.SoftOffs())

	g.SetTruth(fence.StateOn)
	require.NoError(t, d.Reset(ctx(t)))
	assert.Equal(t, 1, g.HardResets())
	assert.Equal(t, fence.StateOn, g.Truth(), "a hard reset keeps the power on")

	// A soft off the operating system ignores: the engine falls back to a
	// hard off after the soft timeout.
	g2, p2 := goBMCPeer(t, ipmisim.GoBMCOptions{IgnoreSoftOff: true})
	d2 := p2.open(t, nil)
	m := method(d2, "soft")
	m.Options.Soft, m.Options.SoftTimeout = true, 100*time.Millisecond
	res, err := fence.Do(ctx(t), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 1, g2.SoftOffs())
	assert.Equal(t, fence.StateOff, g2.Truth())
}

// A BMC may refuse to cycle a chassis that is off (completion code D5h):
// the device powers it up instead.
func TestCycleRefusedWhenOff(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	g.SetTruth(fence.StateOff)
	g.SetFault(ipmisim.FaultRefuseCycleWhenOff)
	require.NoError(t, d.Cycle(ctx(t), ""))
	assert.Equal(t, fence.StateOn, g.Truth())
	assert.Equal(t, 0, g.PowerCycles())
}
