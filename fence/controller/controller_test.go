package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/controller/controllertest"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// The node-fencing design's whole flow on one node: not ready -> isolation
// (FC port off, pods that used the storage released) -> still not ready
// after the power delay -> power management (outlet off then on, all pods
// released with the taint) -> ready -> recovery (FC port on, taint
// removed).
func TestFullFlow(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)

	pass(t, c)
	assert.Nil(t, f.record("node-2"), "healthy nodes get no record")

	f.health.set("node-2", false, f.clock.Now())
	f.clock.Add(30 * time.Second)
	pass(t, c)
	assert.Nil(t, f.record("node-2"), "not ready for less than UnhealthyAfter")

	f.clock.Add(31 * time.Second)
	pass(t, c)
	r := f.record("node-2")
	require.NotNil(t, r)
	assert.Equal(t, fence.StepIsolation, r.Step)
	assert.Equal(t, flow.StatusDone, r.Status)
	assert.True(t, r.Isolated)
	assert.Equal(t, flow.ReleaseStorage, r.Released)
	assert.Equal(t, fence.StateOff, f.fc.Truth("2"))
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"), "other ports untouched")
	assert.Equal(t, flow.ReleaseStorage, f.pods.state("node-2"))

	f.clock.Add(4 * time.Minute)
	pass(t, c)
	assert.Equal(t, fence.StepIsolation, f.record("node-2").Step, "power delay not over")

	f.clock.Add(61 * time.Second)
	pass(t, c)
	r = f.record("node-2")
	assert.Equal(t, fence.StepPowerManagement, r.Step)
	assert.Equal(t, flow.StatusDone, r.Status)
	assert.True(t, r.PoweredOff)
	assert.Equal(t, flow.ReleasePower, f.pods.state("node-2"))
	assert.Equal(t, 1, sets(f.pdu, "2", fence.StateOff))
	assert.Equal(t, fence.StateOn, f.pdu.Truth("2"), "pdu-on powered it back")

	f.health.set("node-2", true, f.clock.Now())
	f.clock.Add(10 * time.Second)
	pass(t, c)
	r = f.record("node-2")
	assert.True(t, r.Closed(), "%+v", r)
	assert.False(t, r.Isolated)
	assert.Equal(t, fence.StateOn, f.fc.Truth("2"))
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-2"))
	assert.Equal(t, []string{"release node-2 Storage", "release node-2 Power", "restore node-2"}, f.pods.calls)
	assert.Subset(t, f.events.reasons(), []string{"node-2 FenceIsolation", "node-2 FenceIsolated",
		"node-2 FencePodsReleased", "node-2 FencePowerManagement", "node-2 FencePowerFenced",
		"node-2 FenceRecovery", "node-2 FenceRecovered", "node-2 FencePodsRestored"})
	assert.NotEmpty(t, r.History)

	// The node fails again later: the closed record reopens.
	f.down("node-2")
	pass(t, c)
	r = f.record("node-2")
	assert.Equal(t, fence.StepIsolation, r.Step)
	assert.Equal(t, flow.StatusDone, r.Status)
	assert.Equal(t, 2, sets(f.fc, "2", fence.StateOff))
}

// scenario drives node-1 through the whole flow with a controller made by
// mk (a new one per pass), and returns after recovery.
func scenario(t *testing.T, f *fixture, mk func() *controller.Controller) {
	t.Helper()
	f.down("node-1")
	for range 10 {
		pass(t, mk())
	}
	f.clock.Add(6 * time.Minute)
	for range 10 {
		pass(t, mk())
	}
	f.health.set("node-1", true, f.clock.Now())
	for range 10 {
		pass(t, mk())
	}
}

// The controller is killed at every write to its store, before or after
// the write: a new instance (same identity, as a restarted replica) goes on
// from the record. For every shape of the power management step (an off
// method then an on method; a node fed by two PDUs with action=reboot; the
// same without action=, taking the step's reboot) and both kinds of pod
// treatment (pods gone at once, as with deletion; pods gone some checks
// later, as with the out-of-service taint): the node ends recovered, each
// plug switched exactly off once and on once, the pods released while every
// PDU was off, the ons only after the pods were gone, and the taint never
// left behind.
func TestKilledAtEveryStepBoundary(t *testing.T) {
	for _, shape := range []string{shapeOffOn, shapeReboot, shapeNoAction} {
		for _, treatment := range []string{"delete", "taint"} {
			t.Run(shape+"/"+treatment, func(t *testing.T) {
				killedAtEveryWrite(t, shape, treatment)
			})
		}
	}
}

// killFixture is a fixture whose pod treatment checks the PDUs' state.
type killFixture struct {
	*fixture
	mu        sync.Mutex
	badOrder  []string // what broke the order: a release or an on while not all off
	podsGone  bool
	twoPDUs   bool
	treatment string
	waiting   *waitingPods
}

func newKillFixture(t *testing.T, shape, treatment string) *killFixture {
	k := &killFixture{fixture: newFixtureShaped(t, 1, false, shape), twoPDUs: shape != shapeOffOn, treatment: treatment}
	k.pods.hook = func(node string, r flow.Release) {
		if r == flow.ReleasePower && !k.allOff() {
			k.note("pods released while a PDU was on")
		}
	}
	return k
}

func (k *killFixture) pdus() []*fake.Device {
	if k.twoPDUs {
		return []*fake.Device{k.pdu, k.pdu2}
	}
	return []*fake.Device{k.pdu}
}

func (k *killFixture) allOff() bool {
	for _, d := range k.pdus() {
		if d.Truth("1") != fence.StateOff {
			return false
		}
	}
	return true
}

func (k *killFixture) note(s string) {
	k.mu.Lock()
	k.badOrder = append(k.badOrder, s)
	k.mu.Unlock()
}

// controller returns a controller over store with the fixture's pod
// treatment: plain pods (gone at once) or pods gone at the second check.
func (k *killFixture) controller(store controller.Store) *controller.Controller {
	c := k.fixture.controller(store)
	if k.treatment == "taint" {
		// The cluster's pods, shared by every controller instance.
		k.mu.Lock()
		if k.waiting == nil {
			k.waiting = &waitingPods{pods: k.pods, after: 2}
			k.waiting.hook = func(node string, gone bool) {
				if !k.allOff() {
					k.note("pods checked while a PDU was on")
				}
			}
		}
		c.Pods = k.waiting
		k.mu.Unlock()
	}
	return c
}

// history returns each plug's switch history.
func (k *killFixture) history() map[string][]fence.State {
	h := map[string][]fence.State{"fc": k.fc.History("1"), "pdu": k.pdu.History("1")}
	if k.twoPDUs {
		h["pdu2"] = k.pdu2.History("1")
	}
	return h
}

func killedAtEveryWrite(t *testing.T, shape, treatment string) {
	on, off := fence.StateOn, fence.StateOff
	once := []fence.State{on, off, on} // off once, on once
	want := map[string][]fence.State{"fc": once, "pdu": once}
	if shape != shapeOffOn {
		want["pdu2"] = once
	}

	// A run without a kill counts the writes.
	ref := newKillFixture(t, shape, treatment)
	counting := &controllertest.KillStore{Store: ref.store}
	scenario(t, ref.fixture, func() *controller.Controller { return ref.controller(counting) })
	require.True(t, ref.record("node-1").Closed(), "%+v", ref.record("node-1"))
	require.Equal(t, want, ref.history())
	require.Empty(t, ref.badOrder)
	total := counting.Writes()
	require.Greater(t, total, 8)

	for n := 1; n <= total; n++ {
		for _, before := range []bool{false, true} {
			t.Run(fmt.Sprintf("write%d/before=%v", n, before), func(t *testing.T) {
				k := newKillFixture(t, shape, treatment)
				fs := &controllertest.KillStore{Store: k.store, KillAt: n, Before: before}
				first := true
				mk := func() *controller.Controller {
					if first && !fs.Dead() {
						return k.controller(fs)
					}
					first = false
					return k.controller(nil) // the new instance
				}
				scenario(t, k.fixture, mk)
				require.True(t, fs.Dead(), "the kill happened")
				r := k.record("node-1")
				require.True(t, r.Closed(), "%+v", r)
				assert.Equal(t, want, k.history(), "each plug off once and on once")
				assert.Empty(t, k.badOrder)
				assert.Equal(t, flow.ReleaseNone, k.pods.state("node-1"), "taint never left behind")
				assert.Contains(t, k.pods.calls, "release node-1 Power")
			})
		}
	}
}

// Two controllers (different identities) race on one node with one store:
// exactly one fencing.
func TestTwoControllersRace(t *testing.T) {
	f := newFixture(t, 2)
	a, b := f.controller(nil), f.controller(nil)
	b.Options.Identity = "other"
	f.down("node-1")
	for range 5 {
		var wg sync.WaitGroup
		for _, c := range []*controller.Controller{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Pass(context.Background()); c.Wait() }()
		}
		wg.Wait()
	}
	assert.Equal(t, 1, sets(f.fc, "1", fence.StateOff))
	assert.Equal(t, flow.StatusDone, f.record("node-1").Status)
}

// A refused fencing stays New with the reason, and starts once the gate
// admits it.
func TestGateRefusalReevaluated(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)
	var mu sync.Mutex
	allow := false
	c.Gate = policy.GateFunc(func(ctx context.Context, cand policy.Candidate, cl policy.Cluster) policy.Decision {
		mu.Lock()
		defer mu.Unlock()
		if !allow {
			return policy.Refuse("test", "2 of 3 nodes unresponsive")
		}
		return policy.Admitted()
	})
	f.down("node-1")
	pass(t, c)
	pass(t, c)
	r := f.record("node-1")
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "refused by test: 2 of 3 nodes unresponsive")
	assert.Equal(t, 0, f.fc.Calls(fake.OpSet))
	assert.True(t, f.events.has("FenceRefused"))

	mu.Lock()
	allow = true
	mu.Unlock()
	pass(t, c)
	assert.Equal(t, flow.StatusDone, f.record("node-1").Status)
	assert.Equal(t, fence.StateOff, f.fc.Truth("1"))
}

// The gates see the fencings in flight: with at most one, the second
// unresponsive node waits until the first has recovered.
func TestMaxInFlightThroughController(t *testing.T) {
	f := newFixture(t, 4)
	c := f.controller(nil)
	c.Gate = oneInFlight
	f.down("node-1", "node-2")
	pass(t, c)
	pass(t, c)
	r1, r2 := f.record("node-1"), f.record("node-2")
	running := 0
	for _, r := range []*flow.NodeFence{r1, r2} {
		if r.Status != flow.StatusNew {
			running++
		}
	}
	assert.Equal(t, 1, running, "one admitted: %v / %v", r1.Message, r2.Message)
}

// Bad configuration: nothing fenced, the error is in the record and in an
// event, and fixing the configuration resumes.
func TestBadConfigFencesNothing(t *testing.T) {
	f := newFixture(t, 2)
	c := f.controller(nil)
	c.Config = controller.StaticConfig{C: mustConfig(t, configMaps(f.names, 1, false))} // node-2 missing
	f.down("node-2")
	pass(t, c)
	r := f.record("node-2")
	require.NotNil(t, r)
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "node-2")
	assert.Contains(t, r.Message, "fence-config-node-2")
	assert.True(t, f.events.has("FenceConfigError"))
	assert.Equal(t, 0, f.fc.Calls(fake.OpSet)+f.pdu.Calls(fake.OpSet))

	c.Config = controller.StaticConfig{C: f.cfg}
	pass(t, c)
	assert.Equal(t, flow.StatusDone, f.record("node-2").Status)
}

func mustConfig(t *testing.T, cms []config.ConfigMap) *config.Config {
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	return cfg
}

// A device that lies (reports on after the off) never counts as fenced:
// the step errors, is retried, then fails; the pods stay where they are.
func TestLyingDeviceNeverFenced(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.fc.Inject(fake.Fault{Kind: fake.Lie, Op: fake.OpStatus, State: fence.StateOn})
	f.down("node-1")
	for range 8 {
		pass(t, c)
		f.clock.Add(time.Minute)
	}
	r := f.record("node-1")
	assert.Equal(t, flow.StatusFailed, r.Status, r.Message)
	assert.False(t, r.Isolated)
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))
	assert.True(t, f.events.has("FenceFailed"))
	assert.False(t, f.events.has("fc-secret"), "no password in an event")
	for _, j := range r.Jobs {
		assert.NotContains(t, j.Error, "fc-secret")
	}
	assert.NotContains(t, r.Message, "fc-secret")

	// A user clears it once the switch is fixed.
	f.fc.ClearFaults()
	require.True(t, f.store.Clear("node-1"))
	pass(t, c)
	r = f.record("node-1")
	assert.Equal(t, flow.StatusDone, r.Status, r.Message)
	assert.True(t, r.Isolated)
}

// A node that flaps back to ready mid-fence: the running step ends, then
// recovery runs; nothing is left fenced.
func TestFlappingNode(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.fc.Inject(fake.Fault{Kind: fake.Delay, Op: fake.OpSet, Delay: 50 * time.Millisecond})
	f.down("node-1")
	require.NoError(t, c.Pass(context.Background()))
	f.health.set("node-1", true, f.clock.Now()) // ready while the off runs
	c.Wait()
	pass(t, c)
	r := f.record("node-1")
	assert.True(t, r.Closed(), "%+v", r)
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"))
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))
}

// A user deletes the record while the pods are released: the taint is
// removed before the record is forgotten.
func TestAbandonRestoresPods(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.down("node-1")
	pass(t, c)
	require.Equal(t, flow.ReleaseStorage, f.pods.state("node-1"))
	require.True(t, f.store.Delete("node-1"))
	pass(t, c)
	assert.Nil(t, f.record("node-1"))
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))
}

// kdump holds power management while the node dumps; isolation proceeds.
func TestKdumpHoldsPower(t *testing.T) {
	f := newFixtureWith(t, 1, true)
	c := f.controller(nil)
	var mu sync.Mutex
	dumping := true
	c.Kdump = kdumpFunc(func(node string, now time.Time) (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return dumping, "kdump messages from 127.0.0.1"
	})
	f.down("node-1")
	pass(t, c)
	assert.True(t, f.record("node-1").Isolated, "isolation proceeds during a dump")
	f.clock.Add(6 * time.Minute)
	pass(t, c)
	r := f.record("node-1")
	assert.Equal(t, fence.StepPowerManagement, r.Step)
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "kdump")
	assert.Equal(t, 0, f.pdu.Calls(fake.OpSet))

	mu.Lock()
	dumping = false
	mu.Unlock()
	pass(t, c)
	assert.True(t, f.record("node-1").PoweredOff)
}

// With ReleaseOnDump, a dumping node's pods are released once the gate
// admits it, before any device is switched; the device fence follows when
// the dump ends. A refusal of the gate releases nothing and says why.
func TestKdumpReleasesPodsWhenAsked(t *testing.T) {
	for _, admit := range []bool{true, false} {
		t.Run(fmt.Sprintf("admitted=%v", admit), func(t *testing.T) {
			f := newFixtureWith(t, 1, true)
			c := f.controller(nil)
			c.Options.Flow.ReleaseOnDump = true
			if !admit {
				c.Gate = policy.GateFunc(func(_ context.Context, cand policy.Candidate, _ policy.Cluster) policy.Decision {
					if cand.Step == "isolation" {
						return policy.Admitted()
					}
					return policy.Refuse("test", "no power fencing today")
				})
			}
			var mu sync.Mutex
			dumping := true
			c.Kdump = kdumpFunc(func(string, time.Time) (bool, string) {
				mu.Lock()
				defer mu.Unlock()
				return dumping, "kdump messages from 127.0.0.1"
			})
			f.down("node-1")
			pass(t, c)
			require.True(t, f.record("node-1").Isolated)
			f.clock.Add(6 * time.Minute)
			pass(t, c)
			pass(t, c)
			r := f.record("node-1")
			assert.Equal(t, 0, f.pdu.Calls(fake.OpSet), "no device switched during the dump")
			if !admit {
				assert.Equal(t, flow.ReleaseStorage, f.pods.state("node-1"), "the isolation's release only")
				assert.Contains(t, r.Message, "pods not released: refused by policy")
				assert.Contains(t, r.Message, "no power fencing today")
				return
			}
			assert.Equal(t, fence.StepPowerManagement, r.Step)
			assert.Equal(t, flow.ReleaseDump, r.Released)
			assert.Equal(t, flow.ReleaseDump, f.pods.state("node-1"))
			assert.True(t, f.events.has("FenceKdumpRelease"))

			mu.Lock()
			dumping = false
			mu.Unlock()
			pass(t, c)
			pass(t, c)
			r = f.record("node-1")
			assert.True(t, r.PoweredOff, "fenced by the device once the dump ended")
			assert.Equal(t, flow.ReleasePower, r.Released)
		})
	}
}

type kdumpFunc func(string, time.Time) (bool, string)

func (k kdumpFunc) Dumping(node string, now time.Time) (bool, string) { return k(node, now) }

// A pod release that fails is retried; the record says what is pending.
func TestPodReleaseRetried(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.pods.fail = errors.New("apiserver down")
	f.down("node-1")
	pass(t, c)
	r := f.record("node-1")
	assert.Equal(t, flow.ReleaseStorage, r.Releasing)
	assert.True(t, f.events.has("FencePodsNotReleased"))
	f.pods.mu.Lock()
	f.pods.fail = nil
	f.pods.mu.Unlock()
	pass(t, c)
	assert.Equal(t, flow.ReleaseStorage, f.record("node-1").Released)
}

// Power management done but the node stays not ready: after MaxPolls the
// step errors and is retried (the node-fencing design's flow).
func TestPowerPollsThenError(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.down("node-1")
	pass(t, c)
	f.clock.Add(6 * time.Minute)
	pass(t, c)
	require.Equal(t, fence.StepPowerManagement, f.record("node-1").Step)
	for range 5 {
		f.clock.Add(31 * time.Second)
		pass(t, c)
	}
	r := f.record("node-1")
	assert.Equal(t, fence.StepPowerManagement, r.Step)
	assert.Equal(t, 1, r.Retries, r.Message)
	assert.Equal(t, 2, sets(f.pdu, "1", fence.StateOff), "the retry powered it off again")
}

type partialConfig struct {
	cfg *config.Config
	err error
}

func (p partialConfig) Config(context.Context) (*config.Config, error) { return p.cfg, p.err }

// One broken ConfigMap stops the fencing of its node only.
func TestBrokenConfigOfOneNode(t *testing.T) {
	f := newFixture(t, 2)
	cms := configMaps(f.names, 2, false)
	for i := range cms {
		if cms[i].Name == "fence-config-node-2" {
			cms[i].Data["config.properties"] = "node_name=node-2\nisolation=fc-of\n" // a typo
		}
	}
	cfg, err := config.ParsePartial(cms)
	require.Error(t, err)
	c := f.controller(nil)
	c.Config = partialConfig{cfg, err}
	f.down("node-1", "node-2")
	pass(t, c)
	assert.Equal(t, flow.StatusDone, f.record("node-1").Status, "node-1 fenced")
	r := f.record("node-2")
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, `"fc-of"`)
	assert.NotContains(t, r.Message, "pdu-secret")
	assert.Equal(t, fence.StateOn, f.fc.Truth("2"))
}

// Two controllers (no leader election) share one store and its admission
// ledger: under "one fencing in flight", of two unresponsive nodes exactly
// one is admitted, whichever controller asks first; without the ledger each
// controller would count only its own.
func TestTwoControllersShareTheInFlightLimit(t *testing.T) {
	for round := range 20 {
		f := newFixture(t, 4)
		a, b := f.controller(nil), f.controller(nil)
		b.Options.Identity = "other"
		for _, c := range []*controller.Controller{a, b} {
			c.Gate = policy.MaxInFlight{N: 1}
		}
		f.down("node-1", "node-2")
		var wg sync.WaitGroup
		for _, c := range []*controller.Controller{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Pass(context.Background()); c.Wait() }()
		}
		wg.Wait()
		running := 0
		for _, n := range []string{"node-1", "node-2"} {
			if r := f.record(n); r != nil && r.Active() {
				running++
			}
		}
		require.Equal(t, 1, running, "round %d: %v / %v", round, f.record("node-1"), f.record("node-2"))
		l, err := f.store.Ledger(context.Background())
		require.NoError(t, err)
		assert.Len(t, l.Admitted, 1)
	}
}

// The nodes of one failure turn not ready spread over a heartbeat
// interval: when the first has been not ready for UnhealthyAfter, the
// others only for a moment. The storm guard counts them all, so the first
// is refused rather than fenced at the start of a storm.
func TestStormGuardCountsNodesJustNotReady(t *testing.T) {
	f := newFixture(t, 6)
	c := f.controller(nil)
	c.Gate = policy.Default()
	f.health.set("node-1", false, f.clock.Now())
	f.clock.Add(2 * time.Minute) // node-1 past UnhealthyAfter
	for _, n := range []string{"node-2", "node-3", "node-4"} {
		f.health.set(n, false, f.clock.Now().Add(-time.Second)) // a second ago
	}
	pass(t, c)
	pass(t, c)
	r := f.record("node-1")
	require.NotNil(t, r)
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "refused by")
	assert.Contains(t, r.Message, "4 of 6")
	assert.Equal(t, 0, f.fc.Calls(fake.OpSet))
	for _, n := range []string{"node-2", "node-3", "node-4"} {
		assert.Nil(t, f.record(n), "%s: not a candidate yet", n)
	}
}

// A fencing that ran and is over no longer counts as in flight, even when
// no pass saw its record active (the whole step ran between two passes):
// with at most one fencing in flight, the next node is admitted at once,
// not after the admission's bound (two intervals and a job timeout).
func TestFinishedFencingLeavesTheInFlightCount(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)
	c.Options.Flow.PowerDelay = time.Second
	c.Gate = oneInFlight
	f.down("node-1")
	pass(t, c)
	f.clock.Add(2 * time.Second)
	pass(t, c)
	pass(t, c)
	r := f.record("node-1")
	require.Equal(t, fence.StepPowerManagement, r.Step, r.Message)
	require.Equal(t, flow.StatusDone, r.Status, r.Message)

	f.health.set("node-2", false, f.clock.Now().Add(-2*time.Minute))
	f.clock.Add(time.Second)
	pass(t, c)
	pass(t, c)
	r2 := f.record("node-2")
	require.NotNil(t, r2)
	assert.NotContains(t, r2.Message, "refused", "node-1's fencing is over")
	assert.True(t, r2.Isolated, "%+v", r2)
}

// The storm a controller saw is kept in the admission ledger: a new
// leader, whose own storm guard saw nothing, honours the cooldown its
// predecessor started, and fences once it has passed.
func TestStormCooldownSurvivesALeaderChange(t *testing.T) {
	f := newFixture(t, 6)
	old := f.controller(nil)
	old.Gate = policy.Default() // 50 %, 5 min cooldown
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4"} {
		f.health.set(n, false, f.clock.Now())
	}
	f.clock.Add(2 * time.Minute)
	pass(t, old)
	r := f.record("node-1")
	require.NotNil(t, r)
	assert.Contains(t, r.Message, "4 of 6")
	stormAt := f.clock.Now()
	l, err := f.store.Ledger(context.Background())
	require.NoError(t, err)
	assert.Equal(t, stormAt, l.LastStorm, "the storm is in the ledger")

	// The old leader is gone; two nodes come back: no storm any more,
	// but its cooldown runs until stormAt + 5 min.
	f.health.set("node-3", true, f.clock.Now())
	f.health.set("node-4", true, f.clock.Now())
	f.clock.Add(time.Minute)
	leader := f.controller(nil)
	leader.Gate = policy.Default()
	pass(t, leader)
	r = f.record("node-1")
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "cooling down", "the new leader honours the cooldown")
	assert.Equal(t, 0, f.fc.Calls(fake.OpSet))

	f.clock.Add(5 * time.Minute)
	pass(t, leader)
	pass(t, leader)
	// One at a time (the default limit of one fencing in flight).
	started := 0
	for _, n := range []string{"node-1", "node-2"} {
		if f.record(n).Status != flow.StatusNew {
			started++
		}
	}
	assert.Equal(t, 1, started, "fencing resumed after the cooldown")
	assert.Positive(t, f.fc.Calls(fake.OpSet))
}

// kdumpForgets is a Kdump that records Forget.
type kdumpForgets struct {
	mu     sync.Mutex
	forgot []string
}

func (k *kdumpForgets) Dumping(string, time.Time) (bool, string) { return false, "no message" }

func (k *kdumpForgets) Forget(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forgot = append(k.forgot, node)
}

// Once a node's fencing is over (recovered, its record closed), the Kdump
// is told to forget the node's dump, so that its next dump starts a new
// hold; not before.
func TestKdumpForgottenWhenTheFencingIsOver(t *testing.T) {
	f := newFixtureWith(t, 2, true)
	c := f.controller(nil)
	k := &kdumpForgets{}
	c.Kdump = k
	f.down("node-1")
	pass(t, c)
	f.clock.Add(6 * time.Minute)
	pass(t, c)
	require.True(t, f.record("node-1").PoweredOff)
	assert.Empty(t, k.forgot, "not while the node is fenced")

	f.health.set("node-1", true, f.clock.Now())
	f.clock.Add(time.Second)
	pass(t, c)
	pass(t, c)
	require.True(t, f.record("node-1").Closed(), "%+v", f.record("node-1"))
	k.mu.Lock()
	defer k.mu.Unlock()
	assert.Contains(t, k.forgot, "node-1")
	assert.NotContains(t, k.forgot, "node-2")
}

// oneInFlight admits a fencing only when no other node is being fenced.
var oneInFlight = policy.GateFunc(func(ctx context.Context, cand policy.Candidate, cl policy.Cluster) policy.Decision {
	for _, n := range cl.Nodes {
		if n.Fencing && n.Name != cand.Node.Name {
			return policy.Refuse("max-in-flight", "%s is being fenced", n.Name)
		}
	}
	return policy.Admitted()
})

// In a storm every refused candidate sees the storm at every pass; the
// ledger keeps it with one write per stormPersistEvery (5 s), not one per
// refusal.
func TestStormKeptInTheLedgerSparingly(t *testing.T) {
	f := newFixture(t, 6)
	c := f.controller(nil)
	c.Gate = policy.Default()
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4"} {
		f.health.set(n, false, f.clock.Now())
	}
	f.clock.Add(2 * time.Minute)
	version := func() string {
		l, err := f.store.Ledger(context.Background())
		require.NoError(t, err)
		return l.Version
	}
	pass(t, c)
	first := version()
	require.NotEmpty(t, first, "the storm is kept")
	for range 4 {
		f.clock.Add(time.Second)
		pass(t, c)
	}
	assert.Equal(t, first, version(), "four refusing passes within 5 s: no more writes")
	f.clock.Add(2 * time.Second)
	pass(t, c)
	assert.NotEqual(t, first, version(), "6 s later: written again")
	l, err := f.store.Ledger(context.Background())
	require.NoError(t, err)
	assert.Equal(t, f.clock.Now(), l.LastStorm)
}

// requests is a Requests of a map: node -> since.
type requests struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (r *requests) Requested(node string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[node]
	return t, ok
}

func (r *requests) set(node string, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[node] = since
}

// With Requests, a node is fenced when it is asked for, not by the Ready
// timer; a request asks for one fencing: the node recovered, it is not
// fenced again until a newer request.
func TestRequestsTriggerFencing(t *testing.T) {
	f := newFixture(t, 2)
	c := f.controller(nil)
	req := &requests{m: map[string]time.Time{}}
	c.Requests = req
	f.health.set("node-1", false, f.clock.Now())
	f.health.set("node-2", false, f.clock.Now())
	f.clock.Add(10 * time.Minute)
	pass(t, c)
	assert.Nil(t, f.record("node-1"), "not asked for: the Ready timer is off")
	assert.Nil(t, f.record("node-2"))

	req.set("node-1", f.clock.Now())
	pass(t, c)
	require.NotNil(t, f.record("node-1"))
	assert.True(t, f.record("node-1").Isolated, "asked for: fenced")
	assert.Nil(t, f.record("node-2"))

	// Back and recovered; still asked for by the same request (the
	// checker has not seen it healthy yet): not fenced again.
	f.health.set("node-1", true, f.clock.Now())
	for range 3 {
		f.clock.Add(time.Minute)
		pass(t, c)
	}
	require.True(t, f.record("node-1").Closed())
	f.health.set("node-1", false, f.clock.Now())
	f.clock.Add(time.Minute)
	pass(t, c)
	assert.True(t, f.record("node-1").Closed(), "one request, one fencing")

	// A newer request: fenced again.
	req.set("node-1", f.clock.Now())
	pass(t, c)
	assert.False(t, f.record("node-1").Closed())
	assert.True(t, f.record("node-1").Isolated)

	// The request withdrawn mid-fencing (the checker timed it out and
	// moved to another remediator): no further step starts.
	req.set("node-2", f.clock.Now())
	pass(t, c)
	require.True(t, f.record("node-2").Isolated)
	req.mu.Lock()
	delete(req.m, "node-2")
	req.mu.Unlock()
	for range 5 {
		f.clock.Add(time.Minute)
		pass(t, c)
	}
	r := f.record("node-2")
	assert.False(t, r.PoweredOff, "no power management once nothing asks for it")
	assert.Contains(t, r.Message, "the request for this fencing was withdrawn")
	assert.Equal(t, flow.StatusFailed, r.Status)
}

// manualRequests are requests some of which a person made
// (controller.ManualRequests).
type manualRequests struct {
	requests
	manual map[string]bool
}

func (r *manualRequests) Manual(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manual[node]
}

// A health checker's request for a node that is Ready is not acted on (the
// node recovered); a person's request (Cluster API's remediate-machine
// annotation) fences a Ready node, its Ready condition read again once
// devices fenced it; one request, one fencing.
func TestManualRequestFencesAReadyNode(t *testing.T) {
	for _, delay := range []time.Duration{0, 5 * time.Minute} {
		t.Run("healthy delay "+delay.String(), func(t *testing.T) { testManualRequest(t, delay) })
	}
}

// testManualRequest is TestManualRequestFencesAReadyNode with a healthy
// delay: the recovered node, held for it, is not fenced again while the
// request stands.
func testManualRequest(t *testing.T, delay time.Duration) {
	f := newFixture(t, 2)
	c := f.controller(nil)
	c.Options.Flow.HealthyDelay = delay
	req := &manualRequests{requests: requests{m: map[string]time.Time{}}, manual: map[string]bool{"node-2": true}}
	c.Requests = req
	req.set("node-1", f.clock.Now())
	req.set("node-2", f.clock.Now())
	for range 3 {
		pass(t, c)
		f.clock.Add(6 * time.Minute)
	}
	assert.Equal(t, 0, sets(f.pdu, "1", fence.StateOff), "a checker's request for a Ready node: not fenced")
	assert.Equal(t, 0, sets(f.fc, "1", fence.StateOff))
	if r := f.record("node-1"); assert.NotNil(t, r) {
		assert.True(t, r.Closed(), "its record says it recovered (the remediation is over)")
		starts := 0
		for _, h := range r.History {
			if strings.Contains(h.Message, "fencing starts") {
				starts++
			}
		}
		assert.Equal(t, 1, starts, "once, not reopened while Ready: %+v", r.History)
	}
	r := f.record("node-2")
	require.NotNil(t, r)
	assert.Equal(t, 1, sets(f.fc, "2", fence.StateOff), "a person's request: isolated though Ready")
	assert.Equal(t, 1, sets(f.pdu, "2", fence.StateOff), "and powered off")
	assert.Equal(t, fence.StateOn, f.pdu.Truth("2"), "and on again")
	f.health.set("node-2", true, f.clock.Now()) // back after its reboot
	for range 7 {
		f.clock.Add(time.Minute)
		pass(t, c)
	}
	require.True(t, f.record("node-2").Closed(), f.record("node-2").Message)
	for range 3 {
		f.clock.Add(6 * time.Minute)
		pass(t, c)
	}
	assert.Equal(t, 1, sets(f.pdu, "2", fence.StateOff), "one request, one fencing")
}

// countingLedger is the fixture's ledger, its writes counted; its first
// read waits until the store was asked for every node of waitFor, so that
// the other candidates queue behind the first admission.
type countingLedger struct {
	controller.Admissions
	store   *gets
	waitFor int
	once    sync.Once
	writes  atomic.Int32
}

func (l *countingLedger) Ledger(ctx context.Context) (controller.Ledger, error) {
	l.once.Do(func() {
		deadline := time.Now().Add(5 * time.Second)
		for l.store.distinct() < l.waitFor && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // their workers reach the queue
	})
	return l.Admissions.Ledger(ctx)
}

func (l *countingLedger) SetLedger(ctx context.Context, v controller.Ledger) (controller.Ledger, error) {
	l.writes.Add(1)
	return l.Admissions.SetLedger(ctx, v)
}

// gets is a Store that notes the nodes it was asked for.
type gets struct {
	controller.Store
	mu    sync.Mutex
	nodes map[string]bool
}

func (g *gets) Get(ctx context.Context, node string) (*flow.NodeFence, error) {
	g.mu.Lock()
	if g.nodes == nil {
		g.nodes = map[string]bool{}
	}
	g.nodes[node] = true
	g.mu.Unlock()
	return g.Store.Get(ctx, node)
}

func (g *gets) distinct() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.nodes)
}

// Ten nodes of a rack fail together: their admissions are decided
// together, the ledger read and written once or twice for all of them
// rather than once each, and the gates applied to the batch (at most six
// in flight: six admitted, four refused with the reason).
func TestRackAdmittedInOneBatch(t *testing.T) {
	f := newFixture(t, 12)
	st := &gets{Store: f.store}
	c := f.controller(st)
	led := &countingLedger{Admissions: f.store, store: st, waitFor: 10}
	c.Admissions = led
	c.Gate = policy.MaxInFlight{N: 6}
	for i := 1; i <= 10; i++ {
		f.health.set(fmt.Sprintf("node-%d", i), false, f.clock.Now())
	}
	f.clock.Add(2 * time.Minute)
	pass(t, c)
	admitted, refused := 0, 0
	for i := 1; i <= 10; i++ {
		r := f.record(fmt.Sprintf("node-%d", i))
		require.NotNil(t, r)
		if r.Status == flow.StatusNew {
			refused++
			assert.Contains(t, r.Message, "refused by max-in-flight")
		} else {
			admitted++
		}
	}
	assert.Equal(t, 6, admitted)
	assert.Equal(t, 4, refused)
	l, err := f.store.Ledger(context.Background())
	require.NoError(t, err)
	assert.Len(t, l.Admitted, 6)
	assert.LessOrEqual(t, led.writes.Load(), int32(2), "one write for the first node, one for the nine queued behind it")
}

// A gate that panics while a batch of admissions is decided (the manager
// recovers a reconcile's panic) leaves nothing admitted: not in the
// ledger, and not for the candidates queued behind it; the next
// admission goes on.
func TestAdmissionBatchThatPanicsAdmitsNothing(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)
	c.Admissions = f.store
	var panicking atomic.Bool
	panicking.Store(true)
	c.Gate = policy.GateFunc(func(ctx context.Context, cand policy.Candidate, cl policy.Cluster) policy.Decision {
		if panicking.Load() {
			panic("gate")
		}
		return policy.Admitted()
	})
	f.down("node-1")
	func() {
		defer func() { assert.Equal(t, "gate", recover()) }()
		_, _ = c.Reconcile(context.Background(), "node-1")
	}()
	l, err := f.store.Ledger(context.Background())
	require.NoError(t, err)
	assert.Empty(t, l.Admitted)
	if r := f.record("node-1"); r != nil {
		assert.Equal(t, flow.StatusNew, r.Status)
	}
	assert.Equal(t, 0, f.fc.Calls(fake.OpSet))

	panicking.Store(false)
	_, err = c.Reconcile(context.Background(), "node-1")
	require.NoError(t, err)
	r := f.record("node-1")
	require.NotNil(t, r)
	assert.NotEqual(t, flow.StatusNew, r.Status, "admitted once the gate answers: %+v", r)
}
