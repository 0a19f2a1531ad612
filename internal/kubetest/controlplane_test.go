package kubetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// TestControlPlaneOutOfServiceChain runs the chain of the Kubernetes
// non-graceful node shutdown design by hand on the harness: a StatefulSet
// pod runs on a kwok node; the node's kwok process dies; the node
// lifecycle controller marks the node Ready=Unknown; the out-of-service
// taint (put by the test here) lets the controller manager delete the pod;
// the StatefulSet controller makes a new one, the scheduler puts it on the
// other node and kwok runs it.
func TestControlPlaneOutOfServiceChain(t *testing.T) {
	cp := StartControlPlane(t, ControlPlaneOptions{})
	ctx := t.Context()
	c := cp.Client()
	require.NoError(t, cp.AddNodes(ctx, "a", nil, "node-a"))
	require.NoError(t, cp.AddNodes(ctx, "b", nil, "node-b"))
	for _, n := range []string{"node-a", "node-b"} {
		WaitNodeReady(t, c, n, corev1.ConditionTrue, 30*time.Second)
	}
	// Only node-a takes the pod first: node-b is cordoned until then.
	first := RunStatefulSetOn(t, c, "default", "db", "node-a", "node-b")

	killed := time.Now()
	require.NoError(t, cp.StopNodes("a"))
	WaitNodeReady(t, c, "node-a", corev1.ConditionUnknown, 40*time.Second)
	unknown := time.Since(killed)

	// The node lifecycle controller taints the node too (unreachable), so
	// the update is retried on a conflict with a fresh read.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)

	second := WaitPodRunning(t, c, "default", "db-0", first.UID, 60*time.Second)
	require.Equal(t, "node-b", second.Spec.NodeName)
	t.Logf("node Ready=Unknown %v after its kwok died; new pod Running on %s %v after", unknown.Round(100*time.Millisecond),
		second.Spec.NodeName, time.Since(killed).Round(100*time.Millisecond))

	// Powered on again, the node turns Ready.
	require.NoError(t, cp.StartNodes("a"))
	WaitNodeReady(t, c, "node-a", corev1.ConditionTrue, 30*time.Second)
}

// TestControlPlaneMissingBinaries: a directory without the binaries is
// reported as ErrNoAssets, before anything starts.
func TestControlPlaneMissingBinaries(t *testing.T) {
	_, err := NewControlPlane(context.Background(), ControlPlaneOptions{Options: Options{AssetsDir: t.TempDir()}})
	require.ErrorIs(t, err, ErrNoAssets)
}
