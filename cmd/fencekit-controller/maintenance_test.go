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

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// Nodes under maintenance, on the real API server under deploy/rbac.yaml:
// w1 is named by a NodeMaintenance (medik8s' node-maintenance-operator),
// w2 is cordoned, w3 carries a label the policy names; all three stop
// answering, and none is fenced, each refusal saying why. Once the
// NodeMaintenance is deleted, w1 is fenced; the others stay refused.
func TestIntegrationMaintenance(t *testing.T) {
	c, admin, ns, cfg := deployed(t)
	ctx := t.Context()
	c.InstallCRD(t, "testdata/nodemaintenance-crd.yaml")
	prefix := kubetest.UniqueName(t)
	w := []string{prefix + "-w1", prefix + "-w2", prefix + "-w3"}
	pdu := fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: []string{"1", "2", "3"}})
	t.Cleanup(func() { fake.Forget(prefix + "-pdu") })
	createConfigMap(t, admin, ns, "fence-method-template-pdu", "template.properties",
		"name=pdu\ndriver=fake\naddress=fake://"+prefix+"-pdu\nstonith_status_sleep=0\npower_timeout=2\naction=off\n")
	for i, n := range append(w, prefix+"-w4", prefix+"-w5", prefix+"-w6", prefix+"-w7") {
		createNode(t, admin, n, corev1.ConditionTrue, time.Now().Add(-time.Hour))
		t.Cleanup(func() { removeNodeAndFence(t, c, n) })
		if i < 3 {
			createConfigMap(t, admin, ns, "fence-method-pdu-"+n, "method.properties", "template=pdu\nplug="+string(rune('1'+i))+"\n")
			createConfigMap(t, admin, ns, "fence-config-"+n, "config.properties", "node_name="+n+"\npower_management=pdu\n")
		}
	}
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

	startRun(t, cfg, true, "--namespace="+ns, "--leader-elect=false", "--unhealthy-after=1s",
		"--interval=200ms", "--log-format=text", "--sync-timeout=20s",
		"--policy-file="+writePolicy(t, "maxInFlight: 3\nmaintenance:\n  cordoned: true\n  labels: {example.com/upgrading: \"true\"}\n"))
	for _, n := range w {
		setReady(t, admin, n, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	}
	reader := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	waitFor := func(node, what string, ok func(*flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		var nf *flow.NodeFence
		require.Eventually(t, func() bool {
			var err error
			nf, err = reader.Get(ctx, node)
			return err == nil && ok(nf)
		}, 20*time.Second, 20*time.Millisecond, "%s %s: %+v", node, what, nf)
		return nf
	}
	refused := func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by maintenance")
	}
	assert.Contains(t, waitFor(w[0], "refused", refused).Message,
		"node "+w[0]+" is under maintenance (NodeMaintenance nm-"+w[0]+"): firmware upgrade, CHG-42")
	assert.Contains(t, waitFor(w[1], "refused", refused).Message, "node "+w[1]+" is cordoned (unschedulable)")
	assert.Contains(t, waitFor(w[2], "refused", refused).Message, "carries the label example.com/upgrading=true: under maintenance")
	for _, plug := range []string{"1", "2", "3"} {
		assert.Equal(t, fence.StateOn, pdu.Truth(plug), "nothing switched under maintenance")
	}

	require.NoError(t, nms.Delete(ctx, "nm-"+w[0], metav1.DeleteOptions{}))
	waitFor(w[0], "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, pdu.Truth("1"))
	time.Sleep(time.Second)
	assert.Equal(t, fence.StateOn, pdu.Truth("2"))
	assert.Equal(t, fence.StateOn, pdu.Truth("3"))
}
