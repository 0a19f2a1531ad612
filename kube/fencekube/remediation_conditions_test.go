package fencekube

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// What a remediation's conditions tell Node Health Check and Cluster API
// through one fencing, against fence-agents-remediation's contract: no
// Processing True beside Succeeded False; Succeeded False only when the
// remediation gave up (then it stays, through a person's later
// confirmation); a fencing held by a pause or a maintenance neither
// processes nor fails; detect-only mode fails at once (another remediator
// may act). Each change of Processing or Succeeded is an event on the
// remediation.
func TestRemediationConditions(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	rem := &v1alpha1.NodeFenceRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w1", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rem).WithStatusSubresource(rem).Build()
	rec := events.NewFakeRecorder(100)
	r := NewRemediations(c, RemediationOptions{Health: NewHealth(), Events: rec})
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

	type want map[string]string // type -> "Status/Reason"
	write := func(nf *flow.NodeFence) want {
		t.Helper()
		got := &v1alpha1.NodeFenceRemediation{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(rem), got))
		require.NoError(t, r.writeStatus(t.Context(), got, "", nf, ""))
		require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(rem), got))
		w := want{}
		for _, typ := range []string{v1alpha1.ConditionProcessing, v1alpha1.ConditionSucceeded} {
			if cd := meta.FindStatusCondition(got.Status.Conditions, typ); cd != nil {
				w[typ] = string(cd.Status) + "/" + cd.Reason
			}
		}
		return w
	}
	drain := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	nf := &flow.NodeFence{Node: "w1", Step: fence.StepPowerManagement, Status: flow.StatusNew, Changed: t0,
		Message: flow.MsgRefusedByPolicy + "fencing paused by alice (request network-work)"}
	assert.Equal(t, want{"Processing": "False/FencingHeld", "Succeeded": "Unknown/FencingHeld"}, write(nf), "held by a pause")
	assert.Contains(t, strings.Join(drain(), "\n"), "Normal FencingHeld Processing False: refused by policy: fencing paused by alice")

	nf.Status, nf.Message = flow.StatusError, "level 1 failed: bmc: not done"
	assert.Equal(t, want{"Processing": "True/PowerManagement", "Succeeded": "Unknown/EveryLevelFailed"}, write(nf),
		"retrying: neither Processing True beside Succeeded False, nor a failure Node Health Check escalates on")
	nf.Status, nf.Retries = flow.StatusRunning, 1
	assert.Equal(t, want{"Processing": "True/PowerManagement", "Succeeded": "Unknown/EveryLevelFailed"}, write(nf))

	nf.Status, nf.Message = flow.StatusFailed, "power_management failed 4 times"
	assert.Equal(t, want{"Processing": "False/Failed", "Succeeded": "False/Failed"}, write(nf))
	assert.Contains(t, strings.Join(drain(), "\n"), "Warning Failed Succeeded False: power_management failed 4 times")

	// A person confirms the node off later: the remediation's answer stays.
	nf.Status, nf.ConfirmedOff, nf.Released, nf.Message = flow.StatusDone, true, flow.ReleasePower, "confirmed off by a person"
	nf.Confirmation = &flow.Confirmation{By: "alice", Reason: "rack dark", Incident: t0, At: t0}
	assert.Equal(t, want{"Processing": "False/Failed", "Succeeded": "False/Failed"}, write(nf), "Succeeded False is the remediation's last word")
	assert.Empty(t, drain(), "no change, no event")

	// Detect-only: this controller will not remediate.
	rem2 := &v1alpha1.NodeFenceRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w2", Generation: 1}}
	require.NoError(t, c.Create(t.Context(), rem2))
	rem = rem2
	detect := &flow.NodeFence{Node: "w2", Step: fence.StepPowerManagement, Status: flow.StatusNew, Changed: t0,
		Message: flow.MsgRefusedByPolicy + "detect-only mode: power_management of node w2 would start now; no device is switched and no pod released"}
	assert.Equal(t, want{"Processing": "False/DetectOnly", "Succeeded": "False/DetectOnly"}, write(detect))
}
