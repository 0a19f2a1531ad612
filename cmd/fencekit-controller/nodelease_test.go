package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/nodelease"
)

// One actor per node, on the real API server under deploy/rbac.yaml and
// deploy/node-lease.yaml: the test plays the node-maintenance operator,
// which holds w1's Lease (medik8s's convention) while it works on it. w1
// and w2 stop answering: w2 is fenced, fencekit holding its Lease while
// its record is open; w1 is refused, its record, a FenceRefused event and
// the refusals metric naming the holder, and nothing is switched. Once the
// maintenance releases its Lease, w1 is fenced under fencekit's. w2 back,
// its record closed, fencekit's Lease of it is gone.
func TestIntegrationNodeLease(t *testing.T) {
	s := newScene(t, 5, 2, "action=off\n")
	admin, ctx := s.admin, t.Context()
	w1, w2 := s.nodes[0], s.nodes[1]
	leases := admin.CoordinationV1().Leases(nodelease.DefaultNamespace)
	now := metav1.NewMicroTime(time.Now())
	_, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: nodelease.Name(w1)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new("node-maintenance"), LeaseDurationSeconds: new(int32(3600)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: new(int32(0))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range []string{w1, w2} {
			_ = leases.Delete(t.Context(), nodelease.Name(n), metav1.DeleteOptions{})
		}
	})
	holder := func(node string) string {
		l, err := leases.Get(ctx, nodelease.Name(node), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		require.NoError(t, err)
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	run := s.start("--node-lease-duration=6s", "--metrics-bind-address=127.0.0.1:0", "--policy-file="+writePolicy(t, "maxInFlight: 2\n"))
	s.down(w1, w2)
	s.record(w2, "fenced", 20*time.Second, func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, nodelease.DefaultHolder, holder(w2), "fencekit holds w2 while it fences it")
	nf := s.record(w1, "refused by the node lease", 20*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by node-lease")
	})
	assert.Contains(t, nf.Message, "node "+w1+" is held by node-maintenance (its Lease "+nodelease.Name(w1)+" lapses at ")
	assert.Equal(t, fence.StateOn, s.pdu.Truth("1"), "nothing switched on a node another actor holds")
	require.Eventually(t, func() bool { return eventCounts(t, admin, w1)["FenceRefused"] > 0 }, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, get(t, "http://"+run.info.MetricsAddr.String()+"/metrics").body, `fencekit_gate_refusals_total{gate="node-lease"}`)
	assert.Equal(t, "node-maintenance", holder(w1), "its lease untouched")

	// The maintenance is over: its operator deletes its Lease.
	require.NoError(t, leases.Delete(ctx, nodelease.Name(w1), metav1.DeleteOptions{}))
	s.record(w1, "fenced", 20*time.Second, func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"))
	assert.Equal(t, nodelease.DefaultHolder, holder(w1))

	// w2 is powered on and ready again: its fencing ends, and its Lease
	// with it (within a renewal round, 2 s).
	s.pdu.SetTruth("2", fence.StateOn)
	setReady(t, admin, w2, corev1.ConditionTrue, time.Now())
	s.record(w2, "closed", 30*time.Second, func(nf *flow.NodeFence) bool { return nf.Closed() })
	require.Eventually(t, func() bool { return holder(w2) == "" }, 10*time.Second, 100*time.Millisecond, "fencekit's lease of w2 released")
	assert.Equal(t, nodelease.DefaultHolder, holder(w1), "w1's still held: it is still fenced")
}
