package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/networkfence"
	"github.com/fencekit/fencekit/kube/networkfence/networkfencetest"
)

// A storage fence through CSI-Addons' NetworkFence (driver networkfence),
// as the program registers that driver over the client its ports use,
// under the service account and RBAC of deploy/rbac.yaml: a node stops
// answering, and its InternalIP, read from its Node object
// (@node-addresses), is fenced from the storage before its outlet reboots
// it; once the node is ready again the recovery unfences it. A second
// node's storage runs on another network (Multus): its CSIAddonsNode
// reports the address the storage sees, and that address is fenced, not
// its InternalIP; each record says which it fenced and who reported it.
// A stand-in plays CSI-Addons' controller (none runs here).
func TestIntegrationNetworkFenceIsolation(t *testing.T) {
	s := newScene(t, 3, 2, "")
	s.c.InstallCRD(t, "../../kube/networkfence/testdata/networkfence-crd.yaml")
	s.c.InstallCRD(t, "../../kube/networkfence/testdata/csiaddonsnode-crd.yaml")
	csi := networkfencetest.Start(t, s.c.Objects())
	victim, multus := s.nodes[0], s.nodes[1]
	const ip, multusIP, storageIP = "10.77.0.5", "10.77.0.6", "192.168.77.6"
	setReady(t, s.admin, victim, corev1.ConditionTrue, time.Now().Add(-time.Hour), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	setReady(t, s.admin, multus, corev1.ConditionTrue, time.Now().Add(-time.Hour), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: multusIP})
	csiAddonsNode(t, s, multus, storageIP+"/32")

	for _, n := range []string{victim, multus} {
		for _, a := range []string{"off", "on"} {
			createConfigMap(t, s.admin, s.ns, "fence-method-storage-"+a+"-"+n, "method.properties",
				"driver=networkfence\nplug=@node-addresses\ncsi_driver=rook-ceph.rbd.csi.ceph.com\ncluster_id=rook-ceph\npower_timeout=10\naction="+a+"\n")
		}
		cm, err := s.admin.CoreV1().ConfigMaps(s.ns).Get(t.Context(), "fence-config-"+n, metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data["config.properties"] = "node_name=" + n + "\nisolation=storage-off\npower_management=pdu\nrecovery=storage-on\n"
		_, err = s.admin.CoreV1().ConfigMaps(s.ns).Update(t.Context(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	run := s.start("--poll-interval=200ms", "--power-delay=1s", "--pod-treatment=taint",
		"--policy-file="+writePolicy(t, "stormGuard:\n  maxUnresponsivePercent: 70\nmaxInFlight: 2\n"))
	s.down(victim, multus)
	nf := s.record(victim, "isolated and power fenced", 30*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone
	})
	assert.True(t, nf.Isolated)
	assert.True(t, slices.ContainsFunc(nf.History, func(h flow.Transition) bool {
		return h.Step == fence.StepIsolation && h.Status == flow.StatusDone
	}), "isolated first: %+v", nf.History)
	assert.True(t, csi.Fenced(ip+"/32"), "the node's address fenced from the storage")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, s.pdu.History("1"), "rebooted by its outlet")
	assert.Equal(t, ip+" (the Node's InternalIP addresses)", isolationTarget(t, s, victim))
	s.record(multus, "isolated", 30*time.Second, func(nf *flow.NodeFence) bool { return nf.Isolated })
	assert.True(t, csi.Fenced(storageIP+"/32"), "the address the storage sees fenced")
	assert.False(t, csi.Fenced(multusIP+"/32"), "not its InternalIP")
	assert.Equal(t, storageIP+"/32 (CSIAddonsNode "+s.ns+"/csi-"+multus+", as the storage sees the node)", isolationTarget(t, s, multus))

	setReady(t, s.admin, victim, corev1.ConditionTrue, time.Now())
	nf = s.record(victim, "recovered", 30*time.Second, func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.Equal(t, fence.StepRecovery, nf.Step)
	assert.False(t, nf.Isolated)
	require.Eventually(t, func() bool { return !csi.Fenced(ip + "/32") }, 10*time.Second, 20*time.Millisecond, "unfenced")
	assert.NotContains(t, run.logs.String(), "forbidden", "nothing the driver does is forbidden")
	require.NoError(t, run.shutdown(t))
}

// csiAddonsNode creates node's CSIAddonsNode, as the CSI-Addons sidecar of
// Ceph-CSI's node plugin does, reporting cidrs in its
// networkFenceClientStatus.
func csiAddonsNode(t *testing.T, s *scene, node string, cidrs ...string) {
	t.Helper()
	ri := s.c.Dynamic().Resource(networkfence.CSIAddonsNodeKind.GroupVersion().WithResource("csiaddonsnodes")).Namespace(s.ns)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": networkfence.CSIAddonsNodeKind.GroupVersion().String(), "kind": networkfence.CSIAddonsNodeKind.Kind,
		"metadata": map[string]any{"name": "csi-" + node},
		"spec": map[string]any{"driver": map[string]any{"name": "rook-ceph.rbd.csi.ceph.com", "nodeID": node,
			"endpoint": "pod://csi-rbdplugin-x7k2p.rook-ceph:9070"}},
	}}
	created, err := ri.Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	cs := make([]any, len(cidrs))
	for i, c := range cidrs {
		cs[i] = c
	}
	created.Object["status"] = map[string]any{"state": "Connected", "networkFenceClientStatus": []any{map[string]any{
		"networkFenceClassName": "rook-ceph-rbd",
		"ClientDetails":         []any{map[string]any{"id": "client.csi-rbd-node", "cidrs": cs}},
	}}}
	_, err = ri.UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// isolationTarget returns what node's storage isolation cut off, as the
// NodeFence on the API server records it: in its history, once the step
// is done (its jobs go with the next step).
func isolationTarget(t *testing.T, s *scene, node string) string {
	t.Helper()
	var nf v1alpha1.NodeFence
	require.NoError(t, s.c.Objects().Get(t.Context(), client.ObjectKey{Name: node}, &nf))
	for _, h := range nf.Status.History {
		if h.Step == fence.StepIsolation.String() && h.Status == string(flow.StatusDone) {
			_, target, _ := strings.Cut(h.Message, "; cut off: ")
			return target
		}
	}
	return ""
}
