package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// Nodes under maintenance, on the real API server under deploy/rbac.yaml:
// w1 is named by a NodeMaintenance (medik8s' node-maintenance-operator),
// w2 is cordoned, w3 carries a label the policy names, w4 has the node
// lifecycle condition MaintenanceInProgress True (KEP-5683); all four stop
// answering, and none is fenced, each refusal saying why. Once the
// NodeMaintenance is deleted, w1 is fenced; once w4's condition is False,
// w4 is; the others stay refused.
func TestIntegrationMaintenance(t *testing.T) {
	s := newScene(t, 7, 4, "action=off\n")
	c, admin, ctx := s.c, s.admin, t.Context()
	c.InstallCRD(t, "testdata/nodemaintenance-crd.yaml")
	w := s.nodes[:4]
	node, err := admin.CoreV1().Nodes().Get(ctx, w[1], metav1.GetOptions{})
	require.NoError(t, err)
	node.Spec.Unschedulable = true
	_, err = admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
	node, err = admin.CoreV1().Nodes().Get(ctx, w[2], metav1.GetOptions{})
	require.NoError(t, err)
	node.Labels = map[string]string{"example.com/upgrading": "true"}
	_, err = admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
	nms := c.Dynamic().Resource(fencekube.NodeMaintenanceResource)
	nm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nodemaintenance.medik8s.io/v1beta1", "kind": "NodeMaintenance",
		"metadata": map[string]any{"name": "nm-" + w[0]},
		"spec":     map[string]any{"nodeName": w[0], "reason": "firmware upgrade, CHG-42"},
	}}
	_, err = nms.Create(ctx, nm, metav1.CreateOptions{})
	require.NoError(t, err)

	s.start("--policy-file=" + writePolicy(t, "maxInFlight: 4\nstormGuard:\n  maxUnresponsivePercent: 60\nmaintenance:\n  cordoned: true\n  labels: {example.com/upgrading: \"true\"}\n"))
	s.down(w[:3]...)
	// w4 stops answering in maintenance: its Ready condition and its
	// lifecycle condition in one write.
	inMaintenance := func(status corev1.ConditionStatus) {
		t.Helper()
		n, err := admin.CoreV1().Nodes().Get(ctx, w[3], metav1.GetOptions{})
		require.NoError(t, err)
		since := metav1.NewTime(time.Now().Add(-time.Minute))
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: since, LastHeartbeatTime: since, Reason: "Test"},
			{Type: "MaintenanceInProgress", Status: status, LastTransitionTime: since, LastHeartbeatTime: since,
				Reason: "FirmwareUpgrade", Message: "BIOS 2.19, CHG-77"},
		}
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	inMaintenance(corev1.ConditionTrue)
	waitFor := func(node, what string, ok func(*flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		return s.record(node, what, 20*time.Second, ok)
	}
	refused := func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by maintenance")
	}
	assert.Contains(t, waitFor(w[0], "refused", refused).Message,
		"node "+w[0]+" is under maintenance (NodeMaintenance nm-"+w[0]+"): firmware upgrade, CHG-42")
	assert.Contains(t, waitFor(w[1], "refused", refused).Message, "node "+w[1]+" is cordoned (unschedulable)")
	assert.Contains(t, waitFor(w[2], "refused", refused).Message, "carries the label example.com/upgrading=true: under maintenance")
	assert.Contains(t, waitFor(w[3], "refused", refused).Message,
		"node "+w[3]+" is taken out of service on purpose (its condition MaintenanceInProgress is True): BIOS 2.19, CHG-77")
	for _, plug := range []string{"1", "2", "3", "4"} {
		assert.Equal(t, fence.StateOn, s.pdu.Truth(plug), "nothing switched under maintenance")
	}

	require.NoError(t, nms.Delete(ctx, "nm-"+w[0], metav1.DeleteOptions{}))
	waitFor(w[0], "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"))
	inMaintenance(corev1.ConditionFalse)
	waitFor(w[3], "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, s.pdu.Truth("4"))
	assert.Equal(t, fence.StateOn, s.pdu.Truth("2"))
	assert.Equal(t, fence.StateOn, s.pdu.Truth("3"))
}
