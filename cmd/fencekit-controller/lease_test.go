package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
)

// TestControlPlaneLeaseDetection: with --lease-grace=6s (kwok renews the
// node leases every 2 s; the controller manager's grace period is 10 s), a
// StatefulSet pod's node that dies is fenced on its lease before the
// controller manager marks it Ready=Unknown, and the pod runs on another
// node within the grace and 5 s; a node whose kubelet stalls for less than
// the grace (its kwok process stopped with SIGSTOP for 2 s) is left alone.
func TestControlPlaneLeaseDetection(t *testing.T) {
	a, b, c := "node-a", "node-b", "node-c"
	e := startE2E(t, e2eSpec{
		groups: map[string][]string{"a": {a}, "b": {b}, "c": {c}},
		fenced: []string{a, b},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: 5s\nmaxInFlight: 2\n",
		args:   []string{"--lease-grace=6s", "--lease-renew-interval=2s"},
	})
	ctx := t.Context()
	admin := e.cp.Client()
	ns := e.cp.Namespace(t)
	// The pod goes to node A: the others are cordoned until it runs there.
	old := kubetest.RunStatefulSetOn(t, admin, ns, "db", a, b, c)

	// Node b's kubelet stalls for 2 s (its lease at most 4 s old, under
	// the grace): left alone.
	require.NoError(t, e.cp.PauseNodes("b", 2*time.Second))

	// Node a dies.
	killed := time.Now()
	require.NoError(t, e.cp.StopNodes("a"))
	nf := e.waitRecord(a, 30*time.Second, "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	fenced := nf.FencedAt.Sub(killed)
	n, err := admin.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	require.NoError(t, err)
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status != corev1.ConditionTrue {
				assert.True(t, cond.LastTransitionTime.Time.After(nf.FencedAt.Add(-time.Second)),
					"fenced (%v) before the controller manager marked the node %s (%v)", nf.FencedAt, cond.Status, cond.LastTransitionTime)
			}
		}
	}
	fresh := kubetest.WaitPodRunning(t, admin, ns, "db-0", old.UID, 30*time.Second)
	running := time.Since(killed)
	assert.NotEqual(t, a, fresh.Spec.NodeName)
	assert.Less(t, running, 6*time.Second+5*time.Second, "the pod runs elsewhere within the grace and 5 s")
	t.Logf("node A killed; fenced after %v (lease grace 6 s); new pod Running on %s after %v",
		fenced.Round(100*time.Millisecond), fresh.Spec.NodeName, running.Round(100*time.Millisecond))

	assert.Nil(t, e.record(b), "node b's lease came back in time: no NodeFence")
	assert.Empty(t, e.bmcs[b].PowerLog(), "node b never switched")
}
