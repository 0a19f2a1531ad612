package kubetest

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// StatefulSet returns a StatefulSet of replicas pods of one container (never
// pulled: kwok runs no container), with pods labelled app=name.
func StatefulSet(name, namespace string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "db", Image: "registry.invalid/db:1"}},
				},
			},
		},
	}
}

// WaitNodeReady waits until node's Ready condition has status want, and
// fails t after timeout.
func WaitNodeReady(t testing.TB, c kubernetes.Interface, node string, want corev1.ConditionStatus, timeout time.Duration) *corev1.Node {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		n, err := c.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err == nil {
			last = "no Ready condition"
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == want {
						return n
					}
					last = "Ready=" + string(cond.Status)
				}
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not Ready=%s after %v (%s)", node, want, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitPodRunning waits until the pod namespace/name exists with a UID other
// than notUID (empty: any) and is Running, and fails t after timeout.
func WaitPodRunning(t testing.TB, c kubernetes.Interface, namespace, name string, notUID types.UID, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		p, err := c.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case p.UID == notUID:
			last = "still the old pod (phase " + string(p.Status.Phase) + ")"
		case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
			return p
		default:
			last = "phase " + string(p.Status.Phase) + " on node " + p.Spec.NodeName
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Running after %v (%s)", namespace, name, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Cordon cordons node (on) or uncordons it, retried on a conflict with a
// fresh read: kwok and the node lifecycle controller write the node too.
func Cordon(t testing.TB, c kubernetes.Interface, node string, on bool) {
	t.Helper()
	if err := cordon(t.Context(), c, node, on); err != nil {
		t.Fatalf("cordon %s (%v): %v", node, on, err)
	}
}

func cordon(ctx context.Context, c kubernetes.Interface, node string, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = on
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// RunStatefulSetOn creates the one-replica StatefulSet name in namespace
// and waits until its pod runs on node: the others are cordoned until it
// does. It returns the pod.
func RunStatefulSetOn(t testing.TB, c kubernetes.Interface, namespace, name, node string, others ...string) *corev1.Pod {
	t.Helper()
	// The others are uncordoned on every way out, a failure's too, so
	// that one failed test does not leave nodes of the shared cluster
	// cordoned for the next.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		for _, n := range others {
			if err := cordon(ctx, c, n, false); err != nil {
				t.Errorf("uncordon %s: %v", n, err)
			}
		}
	}()
	for _, n := range others {
		Cordon(t, c, n, true)
	}
	if _, err := c.AppsV1().StatefulSets(namespace).Create(t.Context(), StatefulSet(name, namespace, 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the StatefulSet %s/%s: %v", namespace, name, err)
	}
	p := WaitPodRunning(t, c, namespace, name+"-0", "", 30*time.Second)
	if p.Spec.NodeName != node {
		t.Fatalf("pod %s/%s runs on %s, not %s", namespace, p.Name, p.Spec.NodeName, node)
	}
	return p
}
