package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/networkfence/networkfencetest"
)

// A storage fence through CSI-Addons' NetworkFence (driver networkfence),
// as the program registers that driver over the client its ports use,
// under the service account and RBAC of deploy/rbac.yaml: a node stops
// answering, and its InternalIP, read from its Node object
// (@node-addresses), is fenced from the storage before its outlet reboots
// it; once the node is ready again the recovery unfences it. A
// stand-in plays CSI-Addons' controller (none runs here).
func TestIntegrationNetworkFenceIsolation(t *testing.T) {
	s := newScene(t, 2, 1, "")
	s.c.InstallCRD(t, "../../kube/networkfence/testdata/networkfence-crd.yaml")
	csi := networkfencetest.Start(t, s.c.Objects())
	victim := s.nodes[0]
	const ip = "10.77.0.5"
	setReady(t, s.admin, victim, corev1.ConditionTrue, time.Now().Add(-time.Hour), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})

	for _, a := range []string{"off", "on"} {
		createConfigMap(t, s.admin, s.ns, "fence-method-storage-"+a+"-"+victim, "method.properties",
			"driver=networkfence\nplug=@node-addresses\ncsi_driver=rook-ceph.rbd.csi.ceph.com\ncluster_id=rook-ceph\npower_timeout=10\naction="+a+"\n")
	}
	cm, err := s.admin.CoreV1().ConfigMaps(s.ns).Get(t.Context(), "fence-config-"+victim, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["config.properties"] = "node_name=" + victim + "\nisolation=storage-off\npower_management=pdu\nrecovery=storage-on\n"
	_, err = s.admin.CoreV1().ConfigMaps(s.ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	run := s.start("--poll-interval=200ms", "--power-delay=1s", "--pod-treatment=taint")
	s.down(victim)
	nf := s.record(victim, "isolated and power fenced", 30*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone
	})
	assert.True(t, nf.Isolated)
	assert.True(t, slices.ContainsFunc(nf.History, func(h flow.Transition) bool {
		return h.Step == fence.StepIsolation && h.Status == flow.StatusDone
	}), "isolated first: %+v", nf.History)
	assert.True(t, csi.Fenced(ip+"/32"), "the node's address fenced from the storage")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, s.pdu.History("1"), "rebooted by its outlet")

	setReady(t, s.admin, victim, corev1.ConditionTrue, time.Now())
	nf = s.record(victim, "recovered", 30*time.Second, func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.Equal(t, fence.StepRecovery, nf.Step)
	assert.False(t, nf.Isolated)
	require.Eventually(t, func() bool { return !csi.Fenced(ip + "/32") }, 10*time.Second, 20*time.Millisecond, "unfenced")
	assert.NotContains(t, run.logs.String(), "forbidden", "nothing the driver does is forbidden")
	require.NoError(t, run.shutdown(t))
}
