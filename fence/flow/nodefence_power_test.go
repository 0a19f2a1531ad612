package flow_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// driver drives Advance as a controller does, over plugs switched by the
// jobs: it answers the gate (admit), the pod treatment (release, check) and
// runs each job against its plug, and logs every command.
type driver struct {
	t     *testing.T
	nf    *flow.NodeFence
	now   time.Time
	o     flow.Observation
	opts  flow.Options
	plugs map[string]fence.State // by method name
	fail  map[string]error       // a method's job fails with this error
	best  map[string]bool        // best-effort methods
	gone  func() flow.PodsCheck
	// byTime are methods whose off is proven by elapsed time (SBD).
	byTime map[string]bool
	log    []string
	evs    []string
	holds  []string // the holds and unholds of the node, in order
}

func newFlow(t *testing.T, steps map[fence.Step][][]string, actions map[string]fence.Action) *driver {
	f := &driver{t: t, now: t0, plugs: map[string]fence.State{}, fail: map[string]error{}, best: map[string]bool{},
		gone: func() flow.PodsCheck { return flow.PodsCheck{Gone: true} },
		// The hold of a reboot's off (MinOff) has a test of its own; the
		// others look at the order of the switches, at one time.
		opts: flow.Options{PodsTimeout: time.Minute, MinOff: -1}}
	f.o = flow.Observation{Steps: steps, Actions: actions, Unresponsive: true, Owner: "me"}
	return f
}

// advance makes one Advance with its commands carried out; it reports
// whether the record changed.
func (f *driver) advance() bool {
	o := f.o
	o.Now = f.now
	next, cmds := flow.Advance(f.nf, "n1", o, f.opts)
	for _, c := range cmds {
		switch c.Kind {
		case flow.CmdAdmit:
			o.Admission = &flow.Admission{Admit: true}
			next, cmds = flow.Advance(f.nf, "n1", o, f.opts)
		case flow.CmdCheckPods:
			g := f.gone()
			o.Pods = &g
			f.log = append(f.log, fmt.Sprintf("pods gone=%v", g.Gone))
			next, cmds = flow.Advance(f.nf, "n1", o, f.opts)
		}
	}
	changed := f.nf == nil || !reflect.DeepEqual(f.nf, next)
	f.nf = next
	for _, c := range cmds {
		switch c.Kind {
		case flow.CmdEvent:
			f.evs = append(f.evs, c.Reason)
		case flow.CmdRunJob:
			j := f.nf.Jobs[c.Job]
			f.log = append(f.log, j.Method+" "+j.Phase.String())
			f.nf.FinishJob(c.Job, f.run(j), f.now)
			changed = true
		case flow.CmdReleasePods:
			f.log = append(f.log, "release "+string(c.Release))
			f.nf.ReleasedPods(c.Release)
			changed = true
		case flow.CmdRestorePods:
			f.log = append(f.log, "restore")
			f.nf.RestoredPods()
			changed = true
		case flow.CmdHold, flow.CmdUnhold:
			f.holds = append(f.holds, map[flow.CommandKind]string{flow.CmdHold: "hold", flow.CmdUnhold: "unhold"}[c.Kind])
			f.nf.HeldNode(c.Kind == flow.CmdHold)
			changed = true
		}
	}
	return changed
}

func (f *driver) run(j flow.Job) flow.JobOutcome {
	if err := f.fail[j.Method]; err != nil {
		return flow.JobOutcome{Err: err, BestEffort: f.best[j.Method]}
	}
	st := f.plugs[j.Method]
	if st == fence.StateUnknown {
		st = fence.StateOn
	}
	r := &fence.Result{Action: j.Action, OffConfirmed: st == fence.StateOff, ByTime: f.byTime[j.Method]}
	want := j.Phase.Target()
	r.Already = st == want
	f.plugs[j.Method] = want
	r.State = want
	if want == fence.StateOff {
		r.OffConfirmed = true
	}
	return flow.JobOutcome{Result: r, BestEffort: f.best[j.Method]}
}

// settle advances until nothing changes (bounded).
func (f *driver) settle() {
	for range 50 {
		if !f.advance() {
			return
		}
	}
	f.t.Fatal("the flow does not settle")
}

func powerOnly(levels ...[]string) map[fence.Step][][]string {
	return map[fence.Step][][]string{fence.StepPowerManagement: levels}
}

// A node fed by two PDUs, methods without action= (the step's reboot): both
// off, the pods released and gone, then both on.
func TestFlowTwoPDUsReboot(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu-a", "pdu-b"}), nil)
	f.settle()
	assert.Equal(t, []string{"pdu-a off", "pdu-b off", "release Power", "pods gone=true", "pdu-a on", "pdu-b on"}, f.log)
	assert.Equal(t, fence.StepPowerManagement, f.nf.Step)
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.True(t, f.nf.PoweredOff)
	assert.Equal(t, t0, f.nf.FencedAt)
	assert.Empty(t, f.nf.OnError)
	assert.Subset(t, f.evs, []string{"FencePowerFenced", "FencePoweredOn"})
	for _, j := range f.nf.Jobs {
		assert.Equal(t, fence.ActionReboot, j.Action)
	}
}

// A fenced level's devices stay off at least MinOff (2 s by default) before
// its first on, even when the pods are gone at once.
func TestFlowHoldsTheOffBeforeTheOn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		minOff time.Duration
		hold   time.Duration
	}{{"default", 0, fence.DefaultMinOff}, {"5 s", 5 * time.Second, 5 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlow(t, powerOnly([]string{"pdu-a", "pdu-b"}), nil)
			f.opts.MinOff = tc.minOff
			f.settle()
			assert.Equal(t, []string{"pdu-a off", "pdu-b off", "release Power"}, f.log[:3])
			assert.NotContains(t, f.log, "pdu-a on", "no on at once, though the pods are gone")
			f.now = f.now.Add(tc.hold - time.Millisecond)
			f.settle()
			assert.NotContains(t, f.log, "pdu-a on")
			f.now = f.now.Add(time.Millisecond)
			f.settle()
			assert.Equal(t, []string{"pdu-a on", "pdu-b on"}, f.log[len(f.log)-2:])
			assert.Equal(t, flow.StatusDone, f.nf.Status)
		})
	}
}

// A node configured with power management only (no recovery methods, as
// a BMC alone gives): once it is ready again it is recovered and its pods
// restored, so that the out-of-service taint does not stay for ever.
func TestFlowRecoveryWithoutMethodsRestoresPods(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"bmc"}), nil)
	f.settle()
	assert.Equal(t, []string{"bmc off", "release Power", "pods gone=true", "bmc on"}, f.log)
	assert.Equal(t, flow.ReleasePower, f.nf.Released)

	f.o.Ready, f.o.Unresponsive = true, false
	f.now = f.now.Add(time.Second)
	f.settle()
	assert.Equal(t, "restore", f.log[len(f.log)-1])
	assert.True(t, f.nf.Closed(), "%+v", f.nf)
	assert.False(t, f.nf.PoweredOff)
	assert.Equal(t, flow.ReleaseNone, f.nf.Released)
	assert.Contains(t, f.evs, "FenceRecovered")
}

// The pods are not gone yet: the node stays off; once they are, the ons
// run. A wait past PodsTimeout switches the node on all the same, with a
// warning.
func TestFlowWaitsForPodsWhileOff(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu-off", "pdu-on"}), map[string]fence.Action{"pdu-off": fence.ActionOff, "pdu-on": fence.ActionOn})
	left := 2
	f.gone = func() flow.PodsCheck {
		return flow.PodsCheck{Gone: left == 0, Detail: fmt.Sprintf("%d pods left", left)}
	}
	f.settle()
	assert.Equal(t, []string{"pdu-off off", "release Power", "pods gone=false"}, f.log[:3])
	assert.NotContains(t, f.log, "pdu-on on")
	assert.True(t, f.nf.WaitingForPods())
	assert.Contains(t, f.nf.Message, "2 pods left")
	assert.Equal(t, fence.StateOff, f.plugs["pdu-off"])
	assert.Contains(t, f.evs, "FencePodsWait")

	f.now = f.now.Add(10 * time.Second)
	left = 1
	f.settle()
	assert.Equal(t, flow.StatusRunning, f.nf.Status)
	assert.Contains(t, f.nf.Message, "2 pods left", "the message is written once")

	left = 0
	f.now = f.now.Add(10 * time.Second)
	f.settle()
	assert.Equal(t, "pdu-on on", f.log[len(f.log)-1])
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.False(t, f.nf.WaitingForPods())

	// Never gone: PodsTimeout (1 min) bounds the wait.
	g := newFlow(t, powerOnly([]string{"pdu"}), nil)
	g.gone = func() flow.PodsCheck { return flow.PodsCheck{Detail: "1 pod left"} }
	g.settle()
	assert.Equal(t, flow.StatusRunning, g.nf.Status)
	g.now = g.now.Add(59 * time.Second)
	g.settle()
	assert.Equal(t, flow.StatusRunning, g.nf.Status)
	g.now = g.now.Add(time.Second)
	g.settle()
	assert.Equal(t, flow.StatusDone, g.nf.Status)
	assert.Contains(t, g.evs, "FencePodsWaitTimeout")
	assert.Equal(t, fence.StateOn, g.plugs["pdu"])
}

// power_management=eaton-off eaton-on and the on fails after the verified
// off: a fence with an on error, the pods stay released, the node off.
func TestFlowOnFailsAfterVerifiedOff(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"eaton-off", "eaton-on"}), map[string]fence.Action{"eaton-off": fence.ActionOff, "eaton-on": fence.ActionOn})
	f.fail["eaton-on"] = fence.NotDone(errors.New("outlet refused"))
	f.settle()
	assert.Equal(t, []string{"eaton-off off", "release Power", "pods gone=true", "eaton-on on"}, f.log)
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.True(t, f.nf.PoweredOff)
	assert.Equal(t, flow.ReleasePower, f.nf.Released)
	assert.Contains(t, f.nf.OnError, "eaton-on: ")
	assert.Contains(t, f.nf.OnError, "outlet refused")
	assert.Contains(t, f.nf.Message, "stays off")
	assert.Contains(t, f.evs, "FencePowerOnFailed")
	assert.NotContains(t, f.evs, "FencePoweredOn")
	assert.Equal(t, 1, countOf(f.evs, "FencePowerOnFailed"))
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// One of two PDUs cannot confirm its off: the level is no fence, nothing is
// switched on, nothing released; the next level runs.
func TestFlowOneOfTwoOffsFails(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu-a", "pdu-b"}, []string{"bmc"}), nil)
	f.fail["pdu-b"] = fence.OutcomeUnknown(errors.New("no answer"))
	f.settle()
	assert.Equal(t, []string{"pdu-a off", "pdu-b off", "bmc off", "release Power", "pods gone=true", "bmc on"}, f.log)
	assert.Equal(t, fence.StateOff, f.plugs["pdu-a"], "A stays off")
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.Contains(t, f.evs, "FenceLevelFailed")
}

// A best-effort method whose off failed is not switched on; the level is a
// fence on the other device's word.
func TestFlowBestEffortOffFailed(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"notify", "pdu"}), nil)
	f.fail["notify"] = fence.NotDone(errors.New("down"))
	f.settle()
	assert.Equal(t, flow.StatusError, f.nf.Status, "a required method failed")

	g := newFlow(t, powerOnly([]string{"notify", "pdu"}), nil)
	g.fail["notify"] = fence.NotDone(errors.New("down"))
	g.best["notify"] = true
	g.settle()
	assert.Equal(t, flow.StatusDone, g.nf.Status)
	assert.Equal(t, []string{"notify off", "pdu off", "release Power", "pods gone=true", "pdu on"}, g.log)
}

// A level of on methods only cannot fence.
func TestFlowOnlyOnsIsNoFence(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu-on"}), map[string]fence.Action{"pdu-on": fence.ActionOn})
	f.settle()
	assert.Equal(t, flow.StatusError, f.nf.Status)
	assert.Contains(t, f.nf.Message, "switches the node off")
	assert.Empty(t, f.log, "nothing switched")
	assert.False(t, f.nf.PoweredOff)
	assert.Equal(t, flow.ReleaseNone, f.nf.Released)
}

// The request for the fencing is withdrawn after level 1 failed: level 2
// never starts; the step fails as withdrawn, with a FenceWithdrawn event.
// Once the node is fenced, a withdrawal changes nothing.
func TestFlowWithdrawnStartsNoFurtherSwitch(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu-a"}, []string{"pdu-b"}), nil)
	f.fail["pdu-a"] = fence.NotDone(errors.New("connection refused"))
	for range 20 {
		if slices.Contains(f.log, "pdu-a off") {
			break
		}
		f.advance()
	}
	require.Contains(t, f.log, "pdu-a off")
	f.o.Withdrawn = true
	f.settle()
	assert.NotContains(t, f.log, "pdu-b off")
	assert.Equal(t, flow.StatusFailed, f.nf.Status)
	assert.Contains(t, f.nf.Message, "withdrawn")
	assert.Contains(t, f.evs, flow.ReasonWithdrawn)

	g := newFlow(t, powerOnly([]string{"pdu-a"}), map[string]fence.Action{"pdu-a": fence.ActionOff})
	g.settle()
	require.False(t, g.nf.FencedAt.IsZero())
	g.o.Withdrawn = true
	g.settle()
	assert.NotEqual(t, flow.StatusFailed, g.nf.Status, "fenced already: nothing to withdraw")
}

// A node that flaps after its recovery: held (a NoSchedule taint) from the
// admission of its first fencing step; at its recovery, its pods' treatment
// (the out-of-service taint) is undone at once, but with a healthy delay
// of 30 s it stays held while it has been ready for less; it goes away
// again and is fenced again, still held; once it has been ready for 30 s,
// the hold ends and the record closes.
func TestFlowHealthyDelay(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"bmc"}), nil)
	f.opts.HealthyDelay = 30 * time.Second
	f.settle()
	require.Equal(t, flow.ReleasePower, f.nf.Released)
	assert.Equal(t, []string{"hold"}, f.holds)
	assert.True(t, f.nf.Held)

	// Ready for 10 s: recovered, the taint gone, still held.
	f.o.Ready, f.o.Unresponsive = true, false
	f.o.ReadySince = f.now
	f.now = f.now.Add(10 * time.Second)
	f.settle()
	assert.Equal(t, fence.StepRecovery, f.nf.Step)
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.Contains(t, f.nf.Message, "it takes pods again once it has been ready for 30s")
	assert.Equal(t, "restore", f.log[len(f.log)-1], "the out-of-service taint off: the node is ready")
	assert.Equal(t, []string{"hold"}, f.holds, "still held")
	assert.False(t, f.nf.Closed())

	// Gone again: fenced again, still held (no second hold).
	f.o.Ready, f.o.Unresponsive, f.o.ReadySince = false, true, time.Time{}
	f.now = f.now.Add(time.Minute)
	f.settle()
	assert.Equal(t, fence.StepPowerManagement, f.nf.Step)
	assert.Equal(t, flow.ReleasePower, f.nf.Released)
	assert.Equal(t, []string{"hold"}, f.holds)

	// Back, and ready for 30 s: the hold ends.
	f.o.Ready, f.o.Unresponsive = true, false
	f.o.ReadySince = f.now
	f.settle()
	assert.Equal(t, []string{"hold"}, f.holds)
	f.now = f.now.Add(30 * time.Second)
	f.settle()
	assert.Equal(t, []string{"hold", "unhold"}, f.holds)
	assert.Contains(t, f.nf.Message, "recovered, and ready for 30s: it takes pods again")
	assert.True(t, f.nf.Closed(), "%+v", f.nf)
}

// A negative healthy delay: the recovered node stays held until a person
// marks it healthy; a mark made before this recovery does not count.
func TestFlowHealthyOnlyWhenMarked(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"bmc"}), nil)
	f.opts.HealthyDelay = -1
	f.settle()
	f.nf.MarkedHealthy = f.now.Add(-time.Hour) // an old mark
	f.o.Ready, f.o.Unresponsive, f.o.ReadySince = true, false, f.now
	f.now = f.now.Add(time.Minute)
	f.settle()
	assert.Contains(t, f.nf.Message, "it takes pods again once a person marks it healthy (kubectl fence healthy n1)")
	for range 10 {
		f.now = f.now.Add(time.Hour)
		f.settle()
	}
	assert.Equal(t, []string{"hold"}, f.holds, "held, hours later")
	assert.False(t, f.nf.Closed())

	f.nf.MarkedHealthy = f.now
	f.settle()
	assert.Equal(t, []string{"hold", "unhold"}, f.holds)
	assert.Contains(t, f.nf.Message, "marked healthy by a person")
	assert.True(t, f.nf.Closed())
}

// A level whose off is proven by elapsed time (SBD, the node agents' word)
// says so in the record and its event.
func TestFlowSaysTheProofIsTime(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pill"}), map[string]fence.Action{"pill": fence.ActionOff})
	f.byTime = map[string]bool{"pill": true}
	f.settle()
	require.True(t, f.nf.PoweredOff)
	assert.Contains(t, f.nf.Message, "the proof is time: pill (no switch read back")
	assert.True(t, f.nf.Jobs[0].ByTime)
}
