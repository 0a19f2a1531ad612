package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// TestControlPlaneReplacementsKept releases five dead nodes at once, which
// run the twenty pods of one StatefulSet (the scheduler spreads them), on a
// real controller manager, and watches every pod of the namespace: no new
// pod a StatefulSet made in an old one's place is ever deleted (nor given a
// deletion timestamp), unless the scheduler had put it on a node to die
// before that node was seen dead, and all twenty run on the two nodes left.
//
// The controller manager's taint eviction deletes the pods it knows on a
// tainted node by name, without their UID. With the out-of-service taint
// added before the pods were force-deleted, it deleted the StatefulSet's
// new pod of the same name in 4 of 9 releases; fencekit now deletes first
// and taints once the new pods exist (fencekube.TaintPods). Twenty
// replacements make that hazard, if it came back, all but certain to show.
func TestControlPlaneReplacementsKept(t *testing.T) {
	const perNode = 4
	var dead []string
	groups := map[string][]string{"spare": {"spare-1", "spare-2"}}
	for i := 1; i <= 5; i++ {
		n := fmt.Sprintf("dead-%d", i)
		groups[n] = []string{n}
		dead = append(dead, n)
	}
	e := startE2E(t, e2eSpec{
		groups: groups,
		fenced: dead,
		policy: "stormGuard:\n  maxUnresponsivePercent: 80\n  cooldown: 5s\nmaxInFlight: 5\n",
	})
	ctx := t.Context()
	admin := e.cp.Client()
	ns := e.cp.Namespace(t)

	// Four pods on each node to die: the spares are cordoned until they run.
	kubetest.Cordon(t, admin, "spare-1", true)
	kubetest.Cordon(t, admin, "spare-2", true)
	sts := kubetest.StatefulSet("db", ns, int32(perNode*len(dead)))
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	_, err := admin.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	require.NoError(t, err)
	old := map[types.UID]string{}
	require.Eventually(t, func() bool {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		clear(old)
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning {
				old[p.UID] = p.Name + " on " + p.Spec.NodeName
			}
		}
		return len(old) == perNode*len(dead)
	}, 60*time.Second, 100*time.Millisecond, "the StatefulSet's pods running on the nodes to die")
	kubetest.Cordon(t, admin, "spare-1", false)
	kubetest.Cordon(t, admin, "spare-2", false)

	// Every deletion a new pod suffers, from a watch opened before the nodes die.
	w, err := admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var mu sync.Mutex
	var hit []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || old[p.UID] != "" || slices.Contains(dead, p.Spec.NodeName) {
				// A new pod the scheduler put on a node to die before
				// that node was seen dead goes with it, rightly: the node
				// is fenced, and its pods are deleted with their UIDs.
				continue
			}
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				mu.Lock()
				hit = append(hit, fmt.Sprintf("%s (uid %s, on %q): %s", p.Name, p.UID, p.Spec.NodeName, ev.Type))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })

	for _, n := range dead {
		require.NoError(t, e.cp.StopNodes(n))
	}
	// Every pod runs again, on a spare, under a new UID.
	require.Eventually(t, func() bool {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		fresh := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if old[p.UID] == "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				fresh++
			}
		}
		return fresh == perNode*len(dead)
	}, 120*time.Second, 200*time.Millisecond, "all the pods running again elsewhere")
	on := map[string]int{}
	for _, where := range old {
		on[where[strings.LastIndex(where, " ")+1:]]++
	}
	for _, n := range dead {
		off := false
		for _, c := range e.bmcs[n].PowerLog() {
			off = off || !c.On
		}
		assert.True(t, off, "%s switched off by its BMC", n)
		assert.NotNil(t, e.record(n), "%s has its NodeFence", n)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, hit, "new pods deleted")
	t.Logf("%d releases, %d pods replaced (pods per node %v), %d deletions of new pods seen", len(dead), len(old), on, len(hit))
}
