package fencekube

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// Conditions returns the conditions that sum a record up (see the
// Condition constants of api/v1alpha1), starting from prev so that a
// condition whose status does not change keeps its lastTransitionTime. now
// is the time of a transition (the record's Changed time, when it has
// one); generation is the object's metadata.generation.
//
//   - Processing is True while the fencing runs (reason: its step), False
//     once it is over (Recovered, Failed) or has succeeded (the node fenced
//     and its pods released: NodeFencedPodsReleased), as
//     fence-agents-remediation sets it.
//   - Fenced is True while devices have confirmed the node off (PoweredOff)
//     or cut from its storage (Isolated), or a person confirmed it off
//     when no device could (ConfirmedByPerson, the message naming who).
//   - PodsReleased is True while the node's pods are released:
//     OutOfService after a verified power off, StoragePodsReleased after an
//     isolation, KdumpRecognized for a node dumping its kernel.
//   - Succeeded is True once the node is fenced and its pods released, and
//     stays True through its recovery; False when the fencing failed, and
//     already once every level of the step failed a first time (reason
//     EveryLevelFailed, while the retries go on); Unknown while a fencing
//     runs before that.
func Conditions(nf *flow.NodeFence, prev []metav1.Condition, generation int64, now time.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(prev))
	copy(out, prev)
	if !nf.Changed.IsZero() {
		now = nf.Changed
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	set := func(typ string, st metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&out, metav1.Condition{Type: typ, Status: st, Reason: reason,
			Message: msg, ObservedGeneration: generation, LastTransitionTime: at})
	}
	msg := nf.Message
	fenced := nf.Fenced()
	done := nf.Step == fence.StepRecovery && nf.Status == flow.StatusDone
	succeeded := fenced && nf.Released != flow.ReleaseNone && nf.Releasing == flow.ReleaseNone
	prevSucceeded := meta.IsStatusConditionTrue(prev, v1alpha1.ConditionSucceeded)

	switch {
	case nf.Status == flow.StatusFailed:
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonFailed, msg)
	case done:
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonRecovered, msg)
	case succeeded || prevSucceeded && nf.Step == fence.StepRecovery:
		// The remediation's work is done once the node is fenced and its
		// pods released (as fence-agents-remediation says it): what
		// follows (the reboot's on, the recovery) waits for the node.
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonFencedReleased, "the node is fenced and its pods released; the recovery waits for the node")
	default:
		set(v1alpha1.ConditionProcessing, metav1.ConditionTrue, stepReason(nf.Step), msg)
	}

	switch {
	case nf.FoundOn != "":
		set(v1alpha1.ConditionFenced, metav1.ConditionFalse, v1alpha1.ReasonFoundOn, "switched on behind the controller: "+nf.FoundOn)
	case nf.PoweredOff:
		set(v1alpha1.ConditionFenced, metav1.ConditionTrue, v1alpha1.ReasonPoweredOff, "devices confirmed the node off")
	case nf.Isolated:
		set(v1alpha1.ConditionFenced, metav1.ConditionTrue, v1alpha1.ReasonIsolated, "devices confirmed the node cut from its storage")
	case nf.ConfirmedOff:
		who := "a person"
		if c := nf.Confirmation; c != nil {
			who = c.By
		}
		set(v1alpha1.ConditionFenced, metav1.ConditionTrue, v1alpha1.ReasonConfirmedByPerson, who+" confirmed the node off; no device proved it")
	case done:
		set(v1alpha1.ConditionFenced, metav1.ConditionFalse, v1alpha1.ReasonRecovered, "the node is recovered")
	default:
		set(v1alpha1.ConditionFenced, metav1.ConditionFalse, v1alpha1.ReasonNotFenced, "no device has confirmed the node fenced")
	}

	switch nf.Released {
	case flow.ReleasePower:
		msg := "the node's pods are released after a verified power off"
		if nf.ConfirmedOff && !nf.PoweredOff {
			msg = "the node's pods are released after a person confirmed it off"
		}
		set(v1alpha1.ConditionPodsReleased, metav1.ConditionTrue, v1alpha1.ReasonPower, msg)
	case flow.ReleaseDump:
		set(v1alpha1.ConditionPodsReleased, metav1.ConditionTrue, v1alpha1.ReasonDump, "the node's pods are released while it dumps its kernel")
	case flow.ReleaseStorage:
		set(v1alpha1.ConditionPodsReleased, metav1.ConditionTrue, v1alpha1.ReasonStorage, "the pods that used the storage the isolation cut are released")
	default:
		set(v1alpha1.ConditionPodsReleased, metav1.ConditionFalse, v1alpha1.ReasonNotReleased, "no pod released")
	}

	switch {
	case succeeded:
		set(v1alpha1.ConditionSucceeded, metav1.ConditionTrue, v1alpha1.ReasonFencedReleased, "the node is fenced and its pods released")
	case nf.Status == flow.StatusFailed:
		set(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonFailed, msg)
	case nf.Step != fence.StepRecovery && !fenced && (nf.Status == flow.StatusError || nf.Retries > 0):
		// Every level of the step failed once: told now, not after the
		// last retry (minutes later), so that a checker escalates.
		set(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonLevelsFailed,
			"every level of "+nf.Step.String()+" failed; retrying while nothing else takes over: "+msg)
	case prevSucceeded && nf.Step == fence.StepRecovery:
		// Recovery after a fence that succeeded: still a success.
	default:
		set(v1alpha1.ConditionSucceeded, metav1.ConditionUnknown, v1alpha1.ReasonInProgress, msg)
	}
	return out
}

func stepReason(s fence.Step) string {
	switch s {
	case fence.StepIsolation:
		return v1alpha1.ReasonIsolation
	case fence.StepPowerManagement:
		return v1alpha1.ReasonPowerManagement
	default:
		return v1alpha1.ReasonRecovery
	}
}
