package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// The device health checks of the program, under deploy/rbac.yaml on a real
// API server: three Ready nodes, each with a BMC; w1's answers for w1's
// machine, w2's answers for w1's machine too (a swapped cable), w3's does
// not answer. Every 10 s each is checked: each node's condition
// FenceDevicesReady says which answers and why not, with an event at each
// change and fencekit_device_up per node; nothing is switched, no
// credential is anywhere. When w3's BMC answers again, its condition turns
// True, with a FenceDeviceUp event.
func TestIntegrationDeviceChecks(t *testing.T) {
	c, admin, ns, cfg := deployed(t)
	ctx := t.Context()
	prefix := kubetest.UniqueName(t)
	const uuid1, uuid2 = "4c4c4544-0042-3510-8052-b4c04f4d3732", "4c4c4544-0042-3510-8052-b4c04f4d3733"
	nodes := []string{prefix + "-w1", prefix + "-w2", prefix + "-w3"}
	uuids := []string{uuid1, uuid2, uuid2}
	bmcs := []*fake.Device{
		fake.NewNamed(prefix+"-bmc1", fake.Options{Plugs: []string{"1"}, SystemUUID: uuid1}),
		fake.NewNamed(prefix+"-bmc2", fake.Options{Plugs: []string{"1"}, SystemUUID: uuid1}),
		fake.NewNamed(prefix+"-bmc3", fake.Options{Plugs: []string{"1"}, SystemUUID: uuid2}),
	}
	bmcs[2].Inject(fake.Fault{Kind: fake.Down})
	for i, n := range nodes {
		t.Cleanup(func() { fake.Forget(prefix + "-bmc" + string(rune('1'+i))) })
		createNode(t, admin, n, corev1.ConditionTrue, time.Now().Add(-time.Hour))
		t.Cleanup(func() { removeNodeAndFence(t, c, n) })
		node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		node.Status.NodeInfo.SystemUUID = uuids[i]
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		require.NoError(t, err)
		createConfigMap(t, admin, ns, "fence-method-bmc-"+n, "method.properties",
			"driver=fake\naddress=fake://"+prefix+"-bmc"+string(rune('1'+i))+"\nplug=1\npassword="+secret+"\nstonith_status_sleep=0\n")
		createConfigMap(t, admin, ns, "fence-config-"+n, "config.properties", "node_name="+n+"\npower_management=bmc\n")
	}
	s := startRun(t, cfg, true, "--namespace="+ns, "--leader-elect=false", "--interval=1s", "--log-format=text",
		"--sync-timeout=20s", "--device-check-interval=10s", "--metrics-bind-address=127.0.0.1:0")

	condition := func(n string) *corev1.NodeCondition {
		node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == fencekube.DeviceConditionType {
				return &node.Status.Conditions[i]
			}
		}
		return nil
	}
	want := map[string]string{nodes[0]: "True/AllDevicesAnswer", nodes[1]: "False/FenceDeviceWrongMachine", nodes[2]: "False/FenceDeviceDown"}
	require.Eventually(t, func() bool {
		for n, w := range want {
			c := condition(n)
			if c == nil || string(c.Status)+"/"+c.Reason != w {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "the conditions of the three nodes")
	assert.Equal(t, "every fence method answers its health check: bmc", condition(nodes[0]).Message)
	assert.Contains(t, condition(nodes[1]).Message, "not answering: bmc: ")
	assert.Contains(t, condition(nodes[1]).Message, "the device's machine is "+uuid1+", the node's (its system UUID) is "+uuid2)
	assert.Contains(t, condition(nodes[2]).Message, "unreachable")
	assert.NotZero(t, eventCounts(t, admin, nodes[1])[fencekube.ReasonDeviceWrongHost])
	assert.NotZero(t, eventCounts(t, admin, nodes[2])[fencekube.ReasonDeviceDown])
	m := get(t, "http://"+s.info.MetricsAddr.String()+"/metrics").body
	assert.Contains(t, m, `fencekit_device_up{driver="fake",method="bmc",node="`+nodes[0]+`"} 1`)
	assert.Contains(t, m, `fencekit_device_up{driver="fake",method="bmc",node="`+nodes[1]+`"} 0`)
	assert.Contains(t, m, `fencekit_device_check_duration_seconds_count{driver="fake"}`)

	// w3's BMC answers again.
	bmcs[2].ClearFaults()
	require.Eventually(t, func() bool {
		c := condition(nodes[2])
		return c != nil && c.Status == corev1.ConditionTrue
	}, 30*time.Second, 200*time.Millisecond, "w3's condition True again")
	assert.NotZero(t, eventCounts(t, admin, nodes[2])[fencekube.ReasonDeviceUp])

	for _, d := range bmcs {
		assert.Zero(t, d.Calls(fake.OpSet), "a check switches nothing")
	}
	for _, n := range nodes {
		node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range node.Status.Conditions {
			assert.NotContains(t, c.Message, secret)
		}
		assert.Nil(t, func() any { nf, _ := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{}).Get(ctx, n); return nf }(), "no NodeFence")
	}
	assert.NotContains(t, s.logs.String(), secret)
}
