package fencekube_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// The conditions through a fencing: started, powered off with its pods
// released, recovered; and a failure.
func TestConditions(t *testing.T) {
	type want map[string]string // type -> "Status/Reason"
	get := func(cs []metav1.Condition) want {
		w := want{}
		for _, c := range cs {
			w[c.Type] = string(c.Status) + "/" + c.Reason
		}
		return w
	}
	nf := &flow.NodeFence{Node: "w1", Step: fence.StepIsolation, Status: flow.StatusRunning, Changed: t0}
	cs := fencekube.Conditions(nf, nil, 1, t0)
	assert.Equal(t, want{"Processing": "True/Isolation", "Fenced": "False/NotFenced", "PodsReleased": "False/NotReleased", "Succeeded": "Unknown/InProgress"}, get(cs))
	for _, c := range cs {
		assert.EqualValues(t, 1, c.ObservedGeneration)
	}

	nf.Step, nf.Status, nf.PoweredOff, nf.Released, nf.Changed = fence.StepPowerManagement, flow.StatusDone, true, flow.ReleasePower, t0.Add(time.Minute)
	cs = fencekube.Conditions(nf, cs, 1, t0)
	assert.Equal(t, want{"Processing": "False/NodeFencedPodsReleased", "Fenced": "True/PoweredOff", "PodsReleased": "True/OutOfService", "Succeeded": "True/NodeFencedPodsReleased"}, get(cs),
		"processing is over once the node is fenced and its pods released")
	podsReleased := meta.FindStatusCondition(cs, v1alpha1.ConditionPodsReleased)
	// Switched on behind the controller: not fenced now, and it says so;
	// the remediation's work was done.
	nf.FoundOn = "pdu-off read the node on at 2026-03-01T12:01:30Z"
	found := fencekube.Conditions(nf, cs, 1, t0.Add(90*time.Second))
	assert.Equal(t, "False/FoundOn", get(found)["Fenced"])
	assert.Equal(t, "True/NodeFencedPodsReleased", get(found)["Succeeded"])
	assert.Contains(t, meta.FindStatusCondition(found, v1alpha1.ConditionFenced).Message, nf.FoundOn)
	nf.FoundOn = ""
	nf.Status, nf.Changed = flow.StatusRunning, t0.Add(90*time.Second) // the reboot's on
	cs = fencekube.Conditions(nf, cs, 1, t0)
	assert.Equal(t, "False", string(meta.FindStatusCondition(cs, v1alpha1.ConditionProcessing).Status), "the on after the fence is not the remediation's work")
	assert.Equal(t, podsReleased.LastTransitionTime, meta.FindStatusCondition(cs, v1alpha1.ConditionPodsReleased).LastTransitionTime, "a condition whose status stays keeps its transition time")
	assert.Equal(t, t0.Add(time.Minute), meta.FindStatusCondition(cs, v1alpha1.ConditionFenced).LastTransitionTime.Time.UTC())

	nf.Step, nf.Status, nf.PoweredOff, nf.Released, nf.Changed = fence.StepRecovery, flow.StatusDone, false, flow.ReleaseNone, t0.Add(2*time.Minute)
	cs = fencekube.Conditions(nf, cs, 1, t0)
	assert.Equal(t, want{"Processing": "False/Recovered", "Fenced": "False/Recovered", "PodsReleased": "False/NotReleased", "Succeeded": "True/NodeFencedPodsReleased"}, get(cs),
		"a recovery after a success is still a success")

	// Every level failed once: Succeeded False at once, the retries go on.
	erred := &flow.NodeFence{Node: "w3", Step: fence.StepPowerManagement, Status: flow.StatusError, Message: "level 1 failed: bmc-off: not done", Changed: t0}
	assert.Equal(t, want{"Processing": "True/PowerManagement", "Fenced": "False/NotFenced", "PodsReleased": "False/NotReleased", "Succeeded": "False/EveryLevelFailed"},
		get(fencekube.Conditions(erred, nil, 1, t0)))
	assert.Equal(t, "every level of power_management failed; retrying while nothing else takes over: level 1 failed: bmc-off: not done",
		meta.FindStatusCondition(fencekube.Conditions(erred, nil, 1, t0), v1alpha1.ConditionSucceeded).Message,
		"the step by its name, never a control character")
	erred.Status, erred.Retries = flow.StatusRunning, 1
	assert.Equal(t, "False/EveryLevelFailed", get(fencekube.Conditions(erred, nil, 1, t0))["Succeeded"], "and while a retry runs")

	failed := &flow.NodeFence{Node: "w2", Step: fence.StepPowerManagement, Status: flow.StatusFailed, Message: "level 1 failed", Changed: t0}
	assert.Equal(t, want{"Processing": "False/Failed", "Fenced": "False/NotFenced", "PodsReleased": "False/NotReleased", "Succeeded": "False/Failed"},
		get(fencekube.Conditions(failed, nil, 1, t0)))

	// A person confirmed it off when no device could: fenced, on their
	// word, and the conditions say whose.
	failed.Status, failed.ConfirmedOff, failed.Released = flow.StatusDone, true, flow.ReleasePower
	failed.Confirmation = &flow.Confirmation{By: "alice", Reason: "rack B7 dark", Incident: t0, At: t0}
	cs = fencekube.Conditions(failed, nil, 1, t0)
	assert.Equal(t, want{"Processing": "False/NodeFencedPodsReleased", "Fenced": "True/ConfirmedByPerson", "PodsReleased": "True/OutOfService", "Succeeded": "True/NodeFencedPodsReleased"}, get(cs))
	assert.Equal(t, "alice confirmed the node off; no device proved it", meta.FindStatusCondition(cs, v1alpha1.ConditionFenced).Message)
	assert.Contains(t, meta.FindStatusCondition(cs, v1alpha1.ConditionPodsReleased).Message, "after a person confirmed it off")
}
