package kubetest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// NodeEventCounts returns, by reason, how many times the events on node
// (in the default namespace, as `kubectl describe node` finds them) were
// recorded. An event of the events.k8s.io API counts its repeats in its
// series, and its first occurrence has none: it counts once.
func NodeEventCounts(t testing.TB, client kubernetes.Interface, node string) map[string]int32 {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node}.AsSelector().String()
	l, err := client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("kubetest: list the events of node %s: %v", node, err)
	}
	seen := map[string]int32{}
	for _, e := range l.Items {
		seen[e.Reason] += EventCount(e)
	}
	return seen
}

// EventCount is how many times e was recorded.
func EventCount(e corev1.Event) int32 {
	n := e.Count
	if e.Series != nil {
		n = e.Series.Count
	}
	return max(n, 1)
}
