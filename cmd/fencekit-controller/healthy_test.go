package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// With --healthy-delay=-1s, on the real API server: a node that stops
// answering is held (fencekit.io/fencing:NoSchedule) and fenced; ready
// again, it is recovered, its out-of-service taint removed, and stays held
// until a person marks it healthy with kubectl fence healthy (the plugin,
// through kubectl): then the hold ends and the record closes.
func TestIntegrationMarkedHealthy(t *testing.T) {
	s := newScene(t, 3, 1, "action=off\n")
	victim := s.nodes[0]
	s.start("--healthy-delay=-1s")
	taints := func() (outOfService, held bool) {
		n, err := s.admin.CoreV1().Nodes().Get(t.Context(), victim, metav1.GetOptions{})
		require.NoError(t, err)
		return fencekube.HasOutOfServiceTaint(n), fencekube.HasHoldTaint(n)
	}
	waitFor := func(what string, ok func(*flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		return s.record(victim, what, 20*time.Second, ok)
	}

	s.down(victim)
	waitFor("fenced, pods released", func(nf *flow.NodeFence) bool { return nf.PoweredOff && nf.Released == flow.ReleasePower && nf.Held })
	oos, held := taints()
	assert.True(t, oos)
	assert.True(t, held)

	setReady(t, s.admin, victim, corev1.ConditionTrue, time.Now())
	nf := waitFor("recovered, held", func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepRecovery && nf.Status == flow.StatusDone && nf.Released == flow.ReleaseNone && nf.Held
	})
	assert.Contains(t, nf.Message, "it takes pods again once a person marks it healthy (kubectl fence healthy "+victim+")")
	oos, held = taints()
	assert.False(t, oos, "the out-of-service taint off a ready node")
	assert.True(t, held)
	time.Sleep(time.Second)
	assert.True(t, waitFor("still held", func(nf *flow.NodeFence) bool { return true }).Held, "no delay ends it")

	// A person marks it healthy, as docs/operating.md says.
	code, out := kubectl(t, s.c, buildPlugin(t), "fence", "healthy", victim)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "node "+victim+": marked healthy\nnode "+victim+": takes pods again")
	waitFor("closed", func(nf *flow.NodeFence) bool { return nf.Closed() })
	_, held = taints()
	assert.False(t, held)
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"), "the off method's plug stays off (action=off)")
}
