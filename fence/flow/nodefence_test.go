package flow_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var steps = map[fence.Step][][]string{
	fence.StepIsolation:       {{"fc-off"}, {"fc2-off"}},
	fence.StepPowerManagement: {{"pdu-off", "pdu-on"}},
	fence.StepRecovery:        {{"fc-on"}},
}

// actions are the methods' own actions (action= in their ConfigMaps).
var actions = map[string]fence.Action{"fc-off": fence.ActionOff, "fc2-off": fence.ActionOff,
	"pdu-off": fence.ActionOff, "pdu-on": fence.ActionOn, "fc-on": fence.ActionOn}

func obs(at time.Duration, ready bool) flow.Observation {
	return flow.Observation{Now: t0.Add(at), Ready: ready, Unresponsive: !ready, Steps: steps, Actions: actions, Owner: "me"}
}

func kinds(cmds []flow.Command) []flow.CommandKind {
	var out []flow.CommandKind
	for _, c := range cmds {
		if c.Kind != flow.CmdEvent {
			out = append(out, c.Kind)
		}
	}
	return out
}

func admitted(o flow.Observation) flow.Observation {
	o.Admission = &flow.Admission{Admit: true}
	return o
}

var offOK = flow.JobOutcome{Result: &fence.Result{OffConfirmed: true, State: fence.StateOff}}

func TestAdvanceStartsAndAsksTheGate(t *testing.T) {
	nf, cmds := flow.Advance(nil, "n1", obs(0, false), flow.Options{})
	assert.Equal(t, fence.StepIsolation, nf.Step)
	assert.Equal(t, flow.StatusNew, nf.Status)
	assert.Equal(t, []flow.CommandKind{flow.CmdAdmit}, kinds(cmds))

	o := obs(0, false)
	o.Admission = &flow.Admission{Reason: "storm"}
	nf2, cmds := flow.Advance(nf, "n1", o, flow.Options{})
	assert.Equal(t, flow.StatusNew, nf2.Status)
	assert.Contains(t, nf2.Message, "storm")
	require.Len(t, cmds, 1)
	assert.True(t, cmds[0].Warning)
	// The same refusal again changes nothing and tells nothing new.
	nf3, cmds := flow.Advance(nf2, "n1", o, flow.Options{})
	assert.Equal(t, nf2, nf3)
	assert.Empty(t, cmds)

	nf4, cmds := flow.Advance(nf3, "n1", admitted(obs(time.Second, false)), flow.Options{})
	assert.Equal(t, flow.StatusRunning, nf4.Status)
	require.Equal(t, []flow.CommandKind{flow.CmdHold, flow.CmdRunJob}, kinds(cmds), "the node held before the first switch")
	assert.Equal(t, "fc-off", nf4.Jobs[0].Method)
	assert.Equal(t, "me", nf4.Jobs[0].Owner)
	assert.Equal(t, flow.StatusNew, nf3.Status, "Advance does not change its input")
}

func running(t *testing.T) *flow.NodeFence {
	nf, cmds := flow.Advance(nil, "n1", admitted(obs(0, false)), flow.Options{})
	require.Equal(t, flow.StatusRunning, nf.Status)
	require.Equal(t, []flow.CommandKind{flow.CmdHold, flow.CmdRunJob}, kinds(cmds), "held before the first switch")
	nf.HeldNode(true)
	return nf
}

func TestAdvanceLevelsFallBack(t *testing.T) {
	nf := running(t)
	nf.FinishJob(0, flow.JobOutcome{Err: fence.NotDone(errors.New("switch refused"))}, t0)
	nf, cmds := flow.Advance(nf, "n1", obs(time.Second, false), flow.Options{})
	assert.Equal(t, flow.StatusRunning, nf.Status)
	require.Equal(t, []flow.CommandKind{flow.CmdRunJob}, kinds(cmds))
	assert.Equal(t, "fc2-off", nf.Jobs[1].Method)
	assert.Equal(t, 1, nf.Jobs[1].Level)

	nf.FinishJob(1, offOK, t0)
	nf, cmds = flow.Advance(nf, "n1", obs(2*time.Second, false), flow.Options{})
	assert.Equal(t, flow.StatusRunning, nf.Status, "done once the pods are released")
	assert.True(t, nf.Isolated)
	assert.Equal(t, t0.Add(2*time.Second), nf.FencedAt)
	assert.Equal(t, []flow.CommandKind{flow.CmdReleasePods}, kinds(cmds))
	assert.Equal(t, flow.ReleaseStorage, cmds[len(cmds)-1].Release)
	nf.ReleasedPods(flow.ReleaseStorage)
	nf, _ = flow.Advance(nf, "n1", obs(3*time.Second, false), flow.Options{})
	assert.Equal(t, flow.StatusDone, nf.Status)
}

func TestAdvanceUnconfirmedIsNotFenced(t *testing.T) {
	nf := running(t)
	// The method "succeeded" but no device confirmed the off (a cycle).
	nf.FinishJob(0, flow.JobOutcome{Result: &fence.Result{State: fence.StateOn}}, t0)
	nf, _ = flow.Advance(nf, "n1", obs(time.Second, false), flow.Options{})
	require.Len(t, nf.Jobs, 2, "level 2 tried")
	nf.FinishJob(1, flow.JobOutcome{Err: fence.OutcomeUnknown(errors.New("timeout"))}, t0)
	nf, cmds := flow.Advance(nf, "n1", obs(2*time.Second, false), flow.Options{})
	assert.Equal(t, flow.StatusError, nf.Status)
	assert.False(t, nf.Isolated)
	assert.True(t, nf.Jobs[1].Unknown)
	assert.Empty(t, kinds(cmds), "nothing released")
}

func TestAdvanceBestEffort(t *testing.T) {
	s := map[fence.Step][][]string{fence.StepIsolation: {{"a", "b"}}}
	o := flow.Observation{Now: t0, Steps: s, Owner: "me", Admission: &flow.Admission{Admit: true}}
	nf, _ := flow.Advance(nil, "n1", o, flow.Options{})
	nf.HeldNode(true)
	nf.FinishJob(0, flow.JobOutcome{Err: errors.New("down"), BestEffort: true}, t0)
	nf, cmds := flow.Advance(nf, "n1", o, flow.Options{})
	require.Equal(t, []flow.CommandKind{flow.CmdRunJob}, kinds(cmds), "best effort: the level goes on")
	nf.FinishJob(1, offOK, t0)
	nf, cmds = flow.Advance(nf, "n1", o, flow.Options{})
	require.Equal(t, []flow.CommandKind{flow.CmdReleasePods}, kinds(cmds))
	nf.ReleasedPods(flow.ReleaseStorage)
	nf, _ = flow.Advance(nf, "n1", o, flow.Options{})
	assert.Equal(t, flow.StatusDone, nf.Status)
}

func TestAdvanceTakeover(t *testing.T) {
	nf := running(t)
	other := obs(time.Minute, false)
	other.Owner = "other"
	_, cmds := flow.Advance(nf, "n1", other, flow.Options{JobTimeout: 10 * time.Minute})
	assert.Empty(t, kinds(cmds), "another instance's job is left alone")

	other.Now = t0.Add(11 * time.Minute)
	nf2, cmds := flow.Advance(nf, "n1", other, flow.Options{JobTimeout: 10 * time.Minute})
	assert.Equal(t, []flow.CommandKind{flow.CmdRunJob}, kinds(cmds), "taken over after the job timeout")
	assert.Equal(t, "other", nf2.Jobs[0].Owner)

	me := obs(time.Minute, false)
	_, cmds = flow.Advance(nf, "n1", me, flow.Options{})
	assert.Equal(t, []flow.CommandKind{flow.CmdRunJob}, kinds(cmds), "own job of a restarted instance: run again")
	me.Busy = true
	_, cmds = flow.Advance(nf, "n1", me, flow.Options{})
	assert.Empty(t, kinds(cmds), "never run twice at once")
}

func TestAdvanceNoUnfenceWhileNotReady(t *testing.T) {
	nf := running(t)
	nf.FinishJob(0, offOK, t0)
	nf, _ = flow.Advance(nf, "n1", obs(time.Second, false), flow.Options{})
	nf.ReleasedPods(flow.ReleaseStorage)
	// Ready: recovery.
	nf, cmds := flow.Advance(nf, "n1", obs(2*time.Second, true), flow.Options{})
	assert.Equal(t, fence.StepRecovery, nf.Step)
	assert.Equal(t, flow.StatusRunning, nf.Status)
	assert.Equal(t, []flow.CommandKind{flow.CmdRunJob}, kinds(cmds))

	// A recovery that errors while the node is not ready again does not
	// retry the unfence: the fencing starts over.
	nf.FinishJob(0, flow.JobOutcome{Err: errors.New("port stuck")}, t0)
	nf, _ = flow.Advance(nf, "n1", obs(3*time.Second, false), flow.Options{})
	assert.Equal(t, fence.StepIsolation, nf.Step)
	assert.Equal(t, flow.StatusNew, nf.Status)
	assert.True(t, nf.Isolated, "still isolated")
}

func TestAdvanceRetriesThenFails(t *testing.T) {
	opts := flow.Options{MaxRetries: 2, RetryBackoff: time.Second}
	nf := running(t)
	at := time.Duration(0)
	for i := range 3 {
		nf.FinishJob(len(nf.Jobs)-1, flow.JobOutcome{Err: errors.New("refused")}, t0)
		for range 4 { // level 2, error, back-off, retry
			at += time.Second
			var cmds []flow.Command
			nf, cmds = flow.Advance(nf, "n1", admitted(obs(at, false)), opts)
			if hasRun(cmds) {
				nf.FinishJob(len(nf.Jobs)-1, flow.JobOutcome{Err: errors.New("refused")}, t0)
			}
		}
		t.Logf("round %d: %s retries=%d %s", i, nf.Status, nf.Retries, nf.Message)
	}
	assert.Equal(t, flow.StatusFailed, nf.Status)
	assert.Contains(t, nf.Message, "clear the NodeFence to retry")

	nf.Clear = true
	nf, cmds := flow.Advance(nf, "n1", admitted(obs(at+time.Second, false)), opts)
	assert.Equal(t, flow.StatusRunning, nf.Status)
	assert.Equal(t, 0, nf.Retries)
	assert.True(t, hasRun(cmds))
}

// No retry (MaxRetries negative) holds through Defaults, as the controller
// applies it before Advance does again: the first error fails the step.
func TestAdvanceNoRetry(t *testing.T) {
	opts := flow.Options{MaxRetries: -1}.Defaults().Defaults()
	nf := running(t)
	nf.FinishJob(0, flow.JobOutcome{Err: errors.New("refused")}, t0)
	at := time.Duration(0)
	for range 4 {
		at += time.Second
		var cmds []flow.Command
		nf, cmds = flow.Advance(nf, "n1", admitted(obs(at, false)), opts)
		if hasRun(cmds) {
			nf.FinishJob(len(nf.Jobs)-1, flow.JobOutcome{Err: errors.New("refused")}, t0)
		}
	}
	assert.Equal(t, flow.StatusFailed, nf.Status, nf.Message)
	assert.Equal(t, 0, nf.Retries)
}

func hasRun(cmds []flow.Command) bool {
	for _, c := range cmds {
		if c.Kind == flow.CmdRunJob {
			return true
		}
	}
	return false
}

func TestAdvanceConfigChangedMidStep(t *testing.T) {
	nf := running(t)
	nf.FinishJob(0, offOK, t0)
	o := obs(time.Second, false)
	o.Steps = map[fence.Step][][]string{fence.StepIsolation: {{"other-off"}}}
	nf, _ = flow.Advance(nf, "n1", o, flow.Options{})
	assert.Equal(t, flow.StatusError, nf.Status)
	assert.Contains(t, nf.Message, "configuration")
}

func TestAdvanceHistoryBounded(t *testing.T) {
	nf, _ := flow.Advance(nil, "n1", obs(0, false), flow.Options{})
	for i := range 3 * flow.MaxHistory {
		o := obs(time.Duration(i)*time.Second, i%2 == 0)
		nf, _ = flow.Advance(nf, "n1", o, flow.Options{})
	}
	assert.LessOrEqual(t, len(nf.History), flow.MaxHistory)
}

func TestAdvanceNoMethods(t *testing.T) {
	o := flow.Observation{Now: t0, Steps: map[fence.Step][][]string{}, Owner: "me"}
	nf, cmds := flow.Advance(nil, "n1", o, flow.Options{})
	assert.Equal(t, flow.StatusNew, nf.Status)
	assert.Contains(t, nf.Message, "nothing can fence it")
	assert.Empty(t, kinds(cmds))

	o.Steps = map[fence.Step][][]string{fence.StepPowerManagement: {{"bmc"}}}
	o.Admission = &flow.Admission{Admit: true}
	nf, _ = flow.Advance(nil, "n1", o, flow.Options{})
	assert.Equal(t, fence.StepPowerManagement, nf.Step, "no isolation: straight to power")
	assert.Equal(t, flow.StatusRunning, nf.Status)
}

func TestParseFenceStatus(t *testing.T) {
	for _, s := range []string{"new", "Running", "DONE", "error", "Failed"} {
		_, err := flow.ParseStatus(s)
		assert.NoError(t, err, s)
	}
	_, err := flow.ParseStatus("sleeping")
	assert.ErrorContains(t, err, `"sleeping"`)
}

// Advance in a loop with FinishJob, as a controller runs it, on a node that
// never comes back: isolation, then power management after the delay.
func ExampleAdvance() {
	steps := map[fence.Step][][]string{
		fence.StepIsolation:       {{"fc-off"}},
		fence.StepPowerManagement: {{"pdu-off", "pdu-on"}},
		fence.StepRecovery:        {{"fc-on"}},
	}
	actions := map[string]fence.Action{"fc-off": fence.ActionOff, "pdu-off": fence.ActionOff,
		"pdu-on": fence.ActionOn, "fc-on": fence.ActionOn}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var nf *flow.NodeFence
	for i := 0; i < 12; i++ {
		o := flow.Observation{Now: now, Steps: steps, Actions: actions, Unresponsive: true, Owner: "example",
			Admission: &flow.Admission{Admit: true}}
		var cmds []flow.Command
		nf, cmds = flow.Advance(nf, "node-2", o, flow.Options{})
		for _, c := range cmds {
			switch c.Kind {
			case flow.CmdHold:
				fmt.Println("hold the node (no new pods)")
				nf.HeldNode(true)
			case flow.CmdRunJob:
				j := nf.Jobs[c.Job]
				fmt.Printf("run %s (%s)\n", j.Method, j.Phase)
				nf.FinishJob(c.Job, flow.JobOutcome{Result: &fence.Result{OffConfirmed: j.Phase == fence.ActionOff}}, now)
			case flow.CmdReleasePods:
				fmt.Println("release pods:", c.Release)
				nf.ReleasedPods(c.Release)
			case flow.CmdCheckPods:
				// A controller asks its pod treatment, then advances with
				// the answer.
				fmt.Println("pods gone: yes")
				o.Pods = &flow.PodsCheck{Gone: true}
				nf, _ = flow.Advance(nf, "node-2", o, flow.Options{})
				j := nf.Jobs[len(nf.Jobs)-1]
				fmt.Printf("run %s (%s)\n", j.Method, j.Phase)
				nf.FinishJob(len(nf.Jobs)-1, flow.JobOutcome{Result: &fence.Result{State: fence.StateOn}}, now)
			}
		}
		now = now.Add(time.Minute)
	}
	fmt.Println(nf.Step, nf.Status, nf.Message)
	// Output:
	// hold the node (no new pods)
	// run fc-off (off)
	// release pods: Storage
	// run pdu-off (off)
	// release pods: Power
	// pods gone: yes
	// run pdu-on (on)
	// power_management Done power fenced by level 1
}

// A kdump's detail changes with every read; the record changes once, when
// the wait begins, so that a controller does not rewrite it on every pass.
func TestAdvanceKdumpWaitWrittenOnce(t *testing.T) {
	o := obs(0, false)
	nf := &flow.NodeFence{Node: "n1", Step: fence.StepPowerManagement, Status: flow.StatusNew, Isolated: true}
	o.Dumping, o.DumpDetail = true, "last 1s ago"
	nf1, cmds := flow.Advance(nf, "n1", o, flow.Options{})
	assert.Contains(t, nf1.Message, "kdump")
	assert.Len(t, cmds, 1, "one event")
	o.DumpDetail = "last 2s ago"
	nf2, cmds := flow.Advance(nf1, "n1", o, flow.Options{})
	assert.Equal(t, nf1, nf2, "nothing to write")
	assert.Empty(t, cmds)
}
