package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
)

// A node held off with its pods released is switched on behind the
// controller, by ipmitool as an operator would (or as a BMC's
// power-restore policy does after an outage), on go-ipmi's BMC on
// loopback: the controller, reading the BMC again every poll interval,
// says so (status.foundOn, the Fenced condition False with reason FoundOn,
// a FencedNodeFoundOn warning event, fencekit_nodes_found_on 1) and
// switches nothing. Switched off again, the alarm clears.
func TestIntegrationFoundOn(t *testing.T) {
	ipmitool := ipmisim.RequireTool(t, "ipmitool", "ipmitool")
	c, admin, ns, cfg := deployed(t)
	ctx := t.Context()
	node := kubetest.UniqueName(t)
	bmc := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{})
	createConfigMap(t, admin, ns, "fence-method-template-bmc-"+node, "template.properties",
		"driver=ipmi\nusername="+ipmisim.DefaultUser+"\npassword="+ipmisim.DefaultPassword+"\npower_timeout=5\n")
	createConfigMap(t, admin, ns, "fence-method-bmc-off-"+node, "method.properties", "template=bmc-"+node+"\naddress="+bmc.URL()+"\naction=off\n")
	createConfigMap(t, admin, ns, "fence-config-"+node, "config.properties", "node_name="+node+"\npower_management=bmc-off\n")
	createNode(t, admin, node, corev1.ConditionTrue, time.Now().Add(-time.Hour))
	t.Cleanup(func() { removeNodeAndFence(t, c, node) })

	s := startRun(t, cfg, true, "--namespace="+ns, "--identity="+node+"-ctl", "--leader-elect=false",
		"--unhealthy-after=1s", "--interval=1s", "--poll-interval=500ms", "--max-polls=1000",
		"--retry-backoff=200ms", "--job-timeout=20s", "--pod-treatment=taint",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
		"--policy-file="+writePolicy(t, "stormGuard:\n  maxUnresponsivePercent: 0\n"),
		"--log-level=debug", "--sync-timeout=20s", "--shutdown-timeout=5s")
	require.NotNil(t, s.info.MetricsAddr)

	records := newRecords(t, c.Objects())
	waitFor := func(what string, done func(nf *flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		return records.wait(node, what, 30*time.Second, done)
	}
	fencedCondition := func() *metav1.Condition {
		var obj v1alpha1.NodeFence
		require.NoError(t, c.Objects().Get(ctx, client.ObjectKey{Name: node}, &obj))
		return meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.ConditionFenced)
	}
	power := func(s string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, ipmitool, "-I", "lanplus", "-H", ipmisim.Host, "-p", fmt.Sprint(bmc.Port),
			"-U", ipmisim.DefaultUser, "-P", ipmisim.DefaultPassword, "chassis", "power", s).CombinedOutput()
		require.NoError(t, err, "ipmitool chassis power %s: %s", s, out)
	}
	metric := func() string {
		for _, l := range strings.Split(get(t, "http://"+s.info.MetricsAddr.String()+"/metrics").body, "\n") {
			if strings.HasPrefix(l, "fencekit_nodes_found_on ") {
				return l
			}
		}
		return ""
	}

	setReady(t, admin, node, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	waitFor("power fenced, pods released", func(nf *flow.NodeFence) bool {
		return nf.PoweredOff && nf.Released == flow.ReleasePower && nf.Status == flow.StatusDone
	})
	require.Equal(t, fence.StateOff, bmc.Truth())
	offs := len(bmc.PowerLog())

	// Switched on behind the controller.
	power("on")
	nf := waitFor("found on", func(nf *flow.NodeFence) bool { return nf.FoundOn != "" })
	assert.Contains(t, nf.FoundOn, "bmc-off read the node on")
	assert.True(t, nf.PoweredOff, "its pods were released on a proof that held then")
	assert.Equal(t, flow.ReleasePower, nf.Released, "the pods stay released")
	require.Eventually(t, func() bool {
		f := fencedCondition()
		return f != nil && f.Status == metav1.ConditionFalse && f.Reason == v1alpha1.ReasonFoundOn
	}, 10*time.Second, 50*time.Millisecond, "the Fenced condition says so")
	require.Eventually(t, func() bool { return eventCounts(t, admin, node)[flow.ReasonFoundOn] > 0 },
		10*time.Second, 50*time.Millisecond, "a warning event on the node")
	require.Eventually(t, func() bool { return metric() == "fencekit_nodes_found_on 1" }, 10*time.Second, 100*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // three more reads
	assert.Equal(t, fence.StateOn, bmc.Truth(), "the reads switched nothing")
	assert.Len(t, bmc.PowerLog(), offs+1, "only ipmitool's on")

	// Switched off again: the alarm clears.
	power("off")
	waitFor("off again", func(nf *flow.NodeFence) bool { return nf.FoundOn == "" })
	require.Eventually(t, func() bool {
		f := fencedCondition()
		return f != nil && f.Status == metav1.ConditionTrue && f.Reason == v1alpha1.ReasonPoweredOff
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return eventCounts(t, admin, node)[flow.ReasonOffAgain] > 0 },
		10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return metric() == "fencekit_nodes_found_on 0" }, 10*time.Second, 100*time.Millisecond)
}
