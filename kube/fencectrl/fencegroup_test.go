package fencectrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/kube/fencectrl"
	"github.com/fencekit/fencekit/kube/fencegroupkube"
)

// The fence-group labeler as a manager's runnable: on the leader only; it
// labels the machines that run OSDs until its context ends, and returns
// without an error then.
func TestFenceGroupRunnable(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	client := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}).Build()
	health, err := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		return &fencegroup.Status{NumPGs: 8, PGs: []fencegroup.PGCount{{State: "active+clean", Count: 8}},
			Placement: []fencegroup.OSD{{ID: 0, Host: "worker-0", State: fencegroup.OSDUp}}}, nil
	}), fencegroup.HealthOptions{})
	require.NoError(t, err)
	_, _ = health.Refresh(ctx)
	run := fencectrl.FenceGroupRunnable(&fencegroupkube.Reconciler{Cluster: "rook-ceph", Health: health,
		Machines: &fencegroupkube.Nodes{Client: client}}, 50*time.Millisecond)
	le, ok := run.(manager.LeaderElectionRunnable)
	require.True(t, ok)
	assert.True(t, le.NeedLeaderElection())

	done := make(chan error, 1)
	go func() { done <- run.Start(ctx) }()
	require.Eventually(t, func() bool {
		n := &corev1.Node{}
		if client.Get(ctx, crclient.ObjectKey{Name: "worker-0"}, n) != nil {
			return false
		}
		_, ok := n.Labels["fencegroup.rook.io/rook-ceph"]
		return ok
	}, 5*time.Second, 10*time.Millisecond, "labelled")
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the runnable did not stop")
	}
}
