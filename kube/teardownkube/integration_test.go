package teardownkube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
)

// kube is one integration test's view of the shared API server: its
// namespace and its node (Nodes are cluster-scoped, so each test has its
// own, with a unique name).
type kube struct {
	t    testing.TB
	cs   kubernetes.Interface
	ns   string
	node string
}

// newKube creates the test's namespace and a Ready node.
func newKube(t testing.TB) *kube {
	c := kubetest.Shared(t)
	k := &kube{t: t, cs: c.Client(), ns: c.Namespace(t), node: kubetest.UniqueName(t)}
	k.createNode(k.node)
	return k
}

func (k *kube) ctx() context.Context { return k.t.Context() }

// createNode creates a Node and writes a Ready condition, as its kubelet
// would.
func (k *kube) createNode(name string) *corev1.Node {
	k.t.Helper()
	beat := time.Now().UTC().Truncate(time.Second)
	want := newNode(name, corev1.ConditionTrue, beat)
	n, err := k.cs.CoreV1().Nodes().Create(k.ctx(), want, metav1.CreateOptions{})
	require.NoError(k.t, err)
	n.Status = want.Status
	n, err = k.cs.CoreV1().Nodes().UpdateStatus(k.ctx(), n, metav1.UpdateOptions{})
	require.NoError(k.t, err)
	return n
}

// createPod creates the pod in k's namespace and writes its status
// (Running and Ready unless the pod says otherwise), as its kubelet would.
func (k *kube) createPod(name string, opts ...podOpt) *corev1.Pod {
	k.t.Helper()
	want := newPod(k.ns, name, k.node, opts...)
	p, err := k.cs.CoreV1().Pods(k.ns).Create(k.ctx(), want, metav1.CreateOptions{})
	require.NoError(k.t, err)
	p.Status.Phase = want.Status.Phase
	p.Status.Conditions = want.Status.Conditions
	p, err = k.cs.CoreV1().Pods(k.ns).UpdateStatus(k.ctx(), p, metav1.UpdateOptions{})
	require.NoError(k.t, err)
	return p
}

// controller creates a ReplicaSet or a DaemonSet whose pods carry app=name
// and returns its UID. Nothing runs it: the test creates its pods.
func (k *kube) controller(kind, name string) types.UID {
	k.t.Helper()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
	}
	meta := metav1.ObjectMeta{Namespace: k.ns, Name: name}
	switch kind {
	case "ReplicaSet":
		rs, err := k.cs.AppsV1().ReplicaSets(k.ns).Create(k.ctx(), &appsv1.ReplicaSet{ObjectMeta: meta,
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		require.NoError(k.t, err)
		return rs.UID
	case "DaemonSet":
		ds, err := k.cs.AppsV1().DaemonSets(k.ns).Create(k.ctx(), &appsv1.DaemonSet{ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		require.NoError(k.t, err)
		return ds.UID
	}
	k.t.Fatalf("no controller kind %s", kind)
	return ""
}

// ownedPod creates a pod of the controller kind/name (see controller).
func (k *kube) ownedPod(kind, name string, uid types.UID, pod string, opts ...podOpt) *corev1.Pod {
	k.t.Helper()
	return k.createPod(pod, append([]podOpt{ownedBy(kind, name, uid), withLabel("app", name)}, opts...)...)
}

// budget creates a PodDisruptionBudget over app=app with minAvailable 1
// and writes the status the disruption controller would: allowed
// disruptions, one healthy pod of one desired.
func (k *kube) budget(name, app string, allowed int32) {
	k.t.Helper()
	pdb, err := k.cs.PolicyV1().PodDisruptionBudgets(k.ns).Create(k.ctx(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}, metav1.CreateOptions{})
	require.NoError(k.t, err)
	k.setBudget(pdb, allowed)
}

// setBudget writes the budget's status with allowed disruptions.
func (k *kube) setBudget(pdb *policyv1.PodDisruptionBudget, allowed int32) {
	k.t.Helper()
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     1 + allowed,
		DesiredHealthy:     1,
		ExpectedPods:       1 + allowed,
	}
	_, err := k.cs.PolicyV1().PodDisruptionBudgets(k.ns).UpdateStatus(k.ctx(), pdb, metav1.UpdateOptions{})
	require.NoError(k.t, err)
}

// getPod returns the pod, nil when it is gone.
func (k *kube) getPod(name string) *corev1.Pod {
	k.t.Helper()
	p, err := k.cs.CoreV1().Pods(k.ns).Get(k.ctx(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(k.t, err)
	return p
}

func (k *kube) getNode() *corev1.Node {
	k.t.Helper()
	n, err := k.cs.CoreV1().Nodes().Get(k.ctx(), k.node, metav1.GetOptions{})
	require.NoError(k.t, err)
	return n
}

// cluster returns the Cluster under test, logging to the test's log.
func (k *kube) cluster(opts teardownkube.Options) (*teardownkube.Cluster, *logBuffer) {
	logs := &logBuffer{}
	opts.Logger = logs.logger()
	k.t.Cleanup(func() {
		if k.t.Failed() {
			k.t.Logf("drain log:\n%s", logs.String())
		}
	})
	return teardownkube.New(k.cs, opts), logs
}

func TestIntegrationNodeAndLease(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	written := k.getNode().Status.Conditions[0].LastHeartbeatTime.UTC()

	n, err := c.Node(k.ctx(), k.node)
	require.NoError(t, err)
	assert.Equal(t, &teardown.Node{Name: k.node, Labels: map[string]string{"kubernetes.io/hostname": k.node},
		KubeletReady: true, LastHeartbeat: written}, n)

	// The node's Lease, as its kubelet renews it (microsecond precision).
	_, err = k.cs.CoreV1().Namespaces().Create(k.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	renewed := time.Now().UTC().Truncate(time.Microsecond)
	_, err = k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(k.ctx(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: k.node},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(k.node), LeaseDurationSeconds: ptr(int32(40)),
			RenewTime: &metav1.MicroTime{Time: renewed}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	n, err = c.Node(k.ctx(), k.node)
	require.NoError(t, err)
	assert.Equal(t, renewed, n.LeaseRenewed)

	// The node stops being Ready, as the node lifecycle controller marks it.
	node := k.getNode()
	node.Status.Conditions[0].Status = corev1.ConditionUnknown
	_, err = k.cs.CoreV1().Nodes().UpdateStatus(k.ctx(), node, metav1.UpdateOptions{})
	require.NoError(t, err)
	n, err = c.Node(k.ctx(), k.node)
	require.NoError(t, err)
	assert.False(t, n.KubeletReady)
	assert.Equal(t, written, n.LastHeartbeat)
}

// Pods on a real server, listed in pages of two: the field selector keeps
// other nodes' pods out.
func TestIntegrationPods(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{PageSize: 2})
	rs := k.controller("ReplicaSet", "web")
	ds := k.controller("DaemonSet", "agent")
	k.ownedPod("ReplicaSet", "web", rs, "web-1")
	k.ownedPod("DaemonSet", "agent", ds, "agent-1")
	k.createPod("static-1", mirror)
	k.createPod("job-1", withPhase(corev1.PodSucceeded))
	k.createPod("held-1", withFinalizer("example.com/hold"))
	require.NoError(t, k.cs.CoreV1().Pods(k.ns).Delete(k.ctx(), "held-1", metav1.DeleteOptions{}))
	t.Cleanup(func() { removeFinalizers(t, k, "held-1") })
	other := newPod(k.ns, "elsewhere", "another-node")
	_, err := k.cs.CoreV1().Pods(k.ns).Create(k.ctx(), other, metav1.CreateOptions{})
	require.NoError(t, err)

	pods, err := c.Pods(k.ctx(), k.node)
	require.NoError(t, err)
	assert.Equal(t, []teardown.Pod{
		{Namespace: k.ns, Name: "agent-1", DaemonSet: true},
		{Namespace: k.ns, Name: "held-1", Terminating: true},
		{Namespace: k.ns, Name: "job-1", Finished: true},
		{Namespace: k.ns, Name: "static-1", Mirror: true},
		{Namespace: k.ns, Name: "web-1"},
	}, pods)
}

// removeFinalizers lets a pod held by finalizers go.
func removeFinalizers(t *testing.T, k *kube, name string) {
	_, err := k.cs.CoreV1().Pods(k.ns).Patch(context.Background(), name, types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("removing the finalizers of %s: %v", name, err)
	}
}

// kubectl drain's whole set of pods: a ReplicaSet pod, a pod with an
// emptyDir volume, an unmanaged pod (all evicted, with the options that
// allow them), a DaemonSet pod and a mirror pod (left).
func TestIntegrationDrain(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, logs := k.cluster(teardownkube.Options{})
	rs := k.controller("ReplicaSet", "web")
	ds := k.controller("DaemonSet", "agent")
	k.ownedPod("ReplicaSet", "web", rs, "web-1")
	k.ownedPod("ReplicaSet", "web", rs, "web-2", withEmptyDir)
	k.createPod("lonely")
	k.ownedPod("DaemonSet", "agent", ds, "agent-1")
	k.createPod("static-1", mirror)

	var rec progress
	start := time.Now()
	err := c.Drain(k.ctx(), k.node, teardown.DrainOptions{
		Timeout: 20 * time.Second, Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true,
	}, rec.report)
	require.NoError(t, err)
	t.Logf("drained in %v", time.Since(start))

	assert.True(t, k.getNode().Spec.Unschedulable, "cordoned")
	for _, p := range []string{"web-1", "web-2", "lonely"} {
		assert.Nil(t, k.getPod(p), "%s evicted", p)
	}
	for _, p := range []string{"agent-1", "static-1"} {
		if got := k.getPod(p); assert.NotNil(t, got, "%s left", p) {
			assert.Nil(t, got.DeletionTimestamp, "%s untouched", p)
		}
	}
	ns := k.ns + "/"
	assert.Equal(t, []string{ns + "lonely", ns + "web-1", ns + "web-2"}, rec.done())
	assert.Equal(t, "node/"+k.node+" cordoned", rec.messages()[0])
	assert.Equal(t, 3, rec.reports[1].Pending)
	assert.Len(t, rec.containing("evicting pod "+ns), 3)
	assert.Len(t, rec.containing(" evicted"), 3, "evicted, not deleted")
	assert.Equal(t, teardown.DrainProgress{Node: k.node, Message: "node/" + k.node + " drained"}, rec.last())
	assert.False(t, rec.overlap)
	assert.Contains(t, logs.String(), `msg="evicting pod `+ns+`web-1"`)

	// Again: nothing left to do, the node stays cordoned.
	var again progress
	require.NoError(t, c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 20 * time.Second, IgnoreDaemonSets: true}, again.report))
	assert.Equal(t, []string{"node/" + k.node + " already cordoned", "node/" + k.node + " drained"}, again.messages())
}

// The drain goes through the eviction API (the pod gets the
// DisruptionTarget condition) and waits until the evicted pod is really
// gone: here a finalizer holds it until the test removes it.
func TestIntegrationDrainWaitsForThePodToGo(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	rs := k.controller("ReplicaSet", "web")
	k.ownedPod("ReplicaSet", "web", rs, "web-1", withFinalizer("example.com/hold"))
	t.Cleanup(func() { removeFinalizers(t, k, "web-1") })

	var rec progress
	done := make(chan error, 1)
	go func() {
		done <- c.Drain(context.Background(), k.node, teardown.DrainOptions{Timeout: 20 * time.Second}, rec.report)
	}()

	var p *corev1.Pod
	require.Eventually(t, func() bool {
		p = k.getPod("web-1")
		return p != nil && p.DeletionTimestamp != nil
	}, 10*time.Second, 20*time.Millisecond, "evicted")
	var target *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			target = &p.Status.Conditions[i]
		}
	}
	if assert.NotNil(t, target, "DisruptionTarget condition") {
		assert.Equal(t, "EvictionByEvictionAPI", target.Reason)
	}
	select {
	case err := <-done:
		t.Fatalf("the drain returned (%v) while the pod was still there", err)
	case <-time.After(1500 * time.Millisecond): // the drain polls every second
	}
	assert.Empty(t, rec.done())

	removeFinalizers(t, k, "web-1")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not end after the pod went")
	}
	assert.Equal(t, []string{k.ns + "/web-1"}, rec.done())
}

// A PodDisruptionBudget that allows no disruption: the server refuses the
// eviction with 429, the drain retries until its timeout, then names the
// pod and the budget; once the budget allows one disruption, the drain
// succeeds.
func TestIntegrationDrainBlockedByBudget(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, logs := k.cluster(teardownkube.Options{EvictionRetryDelay: 200 * time.Millisecond})
	rs := k.controller("ReplicaSet", "web")
	k.ownedPod("ReplicaSet", "web", rs, "web-1")
	k.budget("web-budget", "web", 0)

	var rec progress
	start := time.Now()
	err := c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 2 * time.Second}, rec.report)
	took := time.Since(start)
	require.Error(t, err)
	t.Logf("blocked drain: %v after %v", err, took)
	assert.Less(t, took, 8*time.Second)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	require.Len(t, e.Remaining, 1)
	r := e.Remaining[0]
	assert.Equal(t, k.ns, r.Namespace)
	assert.Equal(t, "web-1", r.Name)
	assert.Contains(t, r.Reason, "eviction refused: Cannot evict pod as it would violate the pod's disruption budget.")
	assert.Contains(t, r.Reason, "The disruption budget web-budget needs 1 healthy pods and has 1 currently")
	assert.Equal(t, []string{"web-budget (disruptionsAllowed 0)"}, r.Budgets)
	assert.Contains(t, err.Error(), "web-1")
	assert.Contains(t, err.Error(), "web-budget")
	assert.True(t, k.getNode().Spec.Unschedulable, "stays cordoned")
	if p := k.getPod("web-1"); assert.NotNil(t, p) {
		assert.Nil(t, p.DeletionTimestamp, "not evicted")
	}
	assert.Len(t, rec.containing("eviction of pod "+k.ns+"/web-1 refused"), 1)
	assert.Contains(t, logs.String(), "will retry after 200ms")

	pdb, err := k.cs.PolicyV1().PodDisruptionBudgets(k.ns).Get(k.ctx(), "web-budget", metav1.GetOptions{})
	require.NoError(t, err)
	k.setBudget(pdb, 1)
	require.NoError(t, c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 10 * time.Second}, nil))
	assert.Nil(t, k.getPod("web-1"))
}

// Without a kubelet, a pod evicted with a grace period is never removed:
// the server sets its deletion timestamp to the end of the grace period and
// keeps it. The drain fails at its timeout naming it;
// SkipWaitForDeleteTimeout lets a later drain stop waiting for it.
func TestIntegrationDrainGracePeriodWithoutKubelet(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	rs := k.controller("ReplicaSet", "web")
	k.ownedPod("ReplicaSet", "web", rs, "web-1", withGrace(30))
	k.ownedPod("ReplicaSet", "web", rs, "web-2", withGrace(30), withPhase(corev1.PodSucceeded))

	evicted := time.Now()
	err := c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 2 * time.Second, GracePeriod: time.Second}, nil)
	require.Error(t, err)
	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	require.Len(t, e.Remaining, 1, "%v", err)
	assert.Equal(t, "web-1", e.Remaining[0].Name)
	assert.Regexp(t, `^terminating with a grace period of 1s due by \S+Z, its end not confirmed`, e.Remaining[0].Reason)
	assert.Nil(t, k.getPod("web-2"), "a finished pod is removed at once")
	p := k.getPod("web-1")
	require.NotNil(t, p, "kept: no kubelet confirms its end")
	require.NotNil(t, p.DeletionTimestamp)
	assert.Equal(t, int64(1), *p.DeletionGracePeriodSeconds)
	assert.WithinDuration(t, evicted.Add(time.Second), p.DeletionTimestamp.Time, 2*time.Second,
		"the deletion timestamp is the end of the grace period")

	skip, _ := k.cluster(teardownkube.Options{SkipWaitForDeleteTimeout: time.Second})
	var rec progress
	require.NoError(t, skip.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 10 * time.Second}, rec.report))
	assert.Contains(t, rec.last().Message, "not waited for (terminating longer than the skip timeout): "+k.ns+"/web-1")
	assert.NotNil(t, k.getPod("web-1"), "still there")

	// The drain above stopped waiting once the pod had terminated longer
	// than the skip timeout, so kubectl's list now leaves it out: the
	// drain names it all the same.
	var again progress
	require.NoError(t, skip.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 10 * time.Second}, again.report))
	assert.Contains(t, again.last().Message, "not waited for (terminating longer than the skip timeout): "+k.ns+"/web-1")
	assert.Empty(t, again.containing("evicting pod"), "not evicted again")
}

// Pods the options do not cover stop the drain before any eviction.
func TestIntegrationDrainRefusesUncoveredPods(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	rs := k.controller("ReplicaSet", "web")
	ds := k.controller("DaemonSet", "agent")
	k.ownedPod("ReplicaSet", "web", rs, "web-1", withEmptyDir)
	k.ownedPod("DaemonSet", "agent", ds, "agent-1")

	err := c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: 10 * time.Second}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "+k.ns+"/agent-1")
	assert.Contains(t, err.Error(), "Pods with local storage (use --delete-emptydir-data to override): "+k.ns+"/web-1")
	for _, name := range []string{"web-1", "agent-1"} {
		if p := k.getPod(name); assert.NotNil(t, p) {
			assert.Nil(t, p.DeletionTimestamp, "%s not evicted", name)
		}
	}
}

func TestIntegrationSetLabels(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	require.NoError(t, c.SetLabels(k.ctx(), k.node, map[string]*string{
		"openstack-control-plane": ptr("enabled"), "ceph-osd": ptr("enabled"), "example.com/keep": ptr("yes"),
	}))
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": k.node, "openstack-control-plane": "enabled",
		"ceph-osd": "enabled", "example.com/keep": "yes"}, k.getNode().Labels)

	clear := map[string]*string{"openstack-control-plane": nil, "ceph-osd": nil, "never-set": nil}
	require.NoError(t, c.SetLabels(k.ctx(), k.node, clear))
	require.NoError(t, c.SetLabels(k.ctx(), k.node, clear), "idempotent")
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": k.node, "example.com/keep": "yes"}, k.getNode().Labels)

	n, err := c.Node(k.ctx(), k.node)
	require.NoError(t, err)
	assert.Equal(t, k.getNode().Labels, n.Labels)
}

func TestIntegrationDeleteNode(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	require.NoError(t, c.DeleteNode(k.ctx(), k.node))
	_, err := k.cs.CoreV1().Nodes().Get(k.ctx(), k.node, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	for _, err := range []error{
		c.DeleteNode(k.ctx(), k.node),
		func() error { _, err := c.Node(k.ctx(), k.node); return err }(),
		func() error { _, err := c.Pods(k.ctx(), k.node); return err }(),
		c.SetLabels(k.ctx(), k.node, map[string]*string{"a": nil}),
		c.Drain(k.ctx(), k.node, teardown.DrainOptions{Timeout: time.Second}, nil),
	} {
		assert.ErrorIs(t, err, teardown.ErrNodeNotFound)
		assert.ErrorContains(t, err, "node "+k.node)
	}
}

// A node that a finalizer holds is not reported deleted.
func TestIntegrationDeleteNodeHeldByFinalizer(t *testing.T) {
	t.Parallel()
	k := newKube(t)
	c, _ := k.cluster(teardownkube.Options{})
	_, err := k.cs.CoreV1().Nodes().Patch(k.ctx(), k.node, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	err = c.DeleteNode(k.ctx(), k.node)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still there after its deletion (finalizers [example.com/hold])")
	assert.False(t, errors.Is(err, teardown.ErrNodeNotFound))

	_, err = k.cs.CoreV1().Nodes().Patch(k.ctx(), k.node, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, c.DeleteNode(k.ctx(), k.node), teardown.ErrNodeNotFound, "gone once the finalizer is removed")
}
