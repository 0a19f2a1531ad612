package teardownkube_test

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
)

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	t0      = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
)

// withEviction makes the fake clientset advertise the policy/v1 eviction
// subresource, as a real server does, and carry evictions out: answer
// decides each one (nil deletes the pod).
func withEviction(cs *fake.Clientset, answer func(ev *policyv1.Eviction) error) {
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true},
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1", Namespaced: true},
	}}}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if answer != nil {
			if err := answer(ev); err != nil {
				return true, nil, err
			}
		}
		return true, nil, cs.Tracker().Delete(podsGVR, ev.Namespace, ev.Name)
	})
}

// budgetRefusal is the server's answer to an eviction that the budget
// name refuses.
func budgetRefusal(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: "The disruption budget " + name + " needs 1 healthy pods and has 1 currently",
	})
	return err
}

// actions returns the actions of verb on resource (and subresource).
func actions(cs *fake.Clientset, verb, resource, subresource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}

func TestNode(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	n.Spec.Unschedulable = true
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
		{Type: corev1.NodeHostName, Address: "node-1"}, {Type: corev1.NodeExternalIP, Address: "10.0.0.7"}}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "node-1"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t0.Add(5 * time.Second)}},
	}
	c := teardownkube.New(fake.NewClientset(n, lease), teardownkube.Options{})

	got, err := c.Node(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, &teardown.Node{
		Name: "node-1", Unschedulable: true, Labels: map[string]string{"kubernetes.io/hostname": "node-1"},
		KubeletReady: true, LastHeartbeat: t0, LeaseRenewed: t0.Add(5 * time.Second),
		Addresses: []string{"10.0.0.7", "node-1"},
	}, got)
	assert.Equal(t, time.UTC, got.LastHeartbeat.Location())
}

func TestNodeReadiness(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []corev1.NodeCondition
		ready bool
		beat  time.Time
	}{
		{"ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)}}, true, t0},
		{"not ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t0)}}, false, t0},
		{"unknown", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: metav1.NewTime(t0)}}, false, t0},
		{"other conditions only", []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)}}, false, time.Time{}},
		{"no condition", nil, false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Conditions: tc.conds}}
			got, err := teardownkube.New(fake.NewClientset(n), teardownkube.Options{}).Node(t.Context(), "node-1")
			require.NoError(t, err)
			assert.Equal(t, tc.ready, got.KubeletReady)
			assert.Equal(t, tc.beat, got.LastHeartbeat)
			assert.True(t, got.LeaseRenewed.IsZero(), "no Lease")
			assert.Nil(t, got.Labels)
		})
	}
}

// A Lease that cannot be read is not taken for an absent one.
func TestNodeLeaseUnreadable(t *testing.T) {
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0))
	cs.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-1", errors.New("no"))
	})
	_, err := teardownkube.New(cs, teardownkube.Options{}).Node(t.Context(), "node-1")
	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, teardownkube.OpLease, e.Op)
	assert.True(t, apierrors.IsForbidden(err))
	assert.NotErrorIs(t, err, teardown.ErrNodeNotFound)
}

// Every method names the node and wraps teardown.ErrNodeNotFound when the
// node does not exist.
func TestNodeNotFound(t *testing.T) {
	c := teardownkube.New(fake.NewClientset(), teardownkube.Options{})
	ctx := t.Context()
	for _, tc := range []struct {
		op   string
		call func() error
	}{
		{teardownkube.OpGet, func() error { _, err := c.Node(ctx, "gone"); return err }},
		{teardownkube.OpListPods, func() error { _, err := c.Pods(ctx, "gone"); return err }},
		{teardownkube.OpDrain, func() error {
			return c.Drain(ctx, "gone", teardown.DrainOptions{Timeout: time.Second}, nil)
		}},
		{teardownkube.OpSetLabels, func() error { return c.SetLabels(ctx, "gone", map[string]*string{"a": ptr("b")}) }},
		{teardownkube.OpSetLabels, func() error { return c.SetLabels(ctx, "gone", nil) }},
		{teardownkube.OpDelete, func() error { return c.DeleteNode(ctx, "gone") }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, teardown.ErrNodeNotFound)
			var e *teardownkube.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "gone", e.Node)
			assert.Equal(t, tc.op, e.Op)
			assert.Contains(t, err.Error(), "node gone")
		})
	}
}

func TestEmptyNodeName(t *testing.T) {
	c := teardownkube.New(fake.NewClientset(), teardownkube.Options{})
	_, err := c.Node(t.Context(), "")
	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "name", e.Field)
	assert.ErrorContains(t, c.DeleteNode(t.Context(), ""), "the node name is empty")
}

func TestPodsClassification(t *testing.T) {
	deleted := metav1.NewTime(t0)
	notController := func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want teardown.Pod
	}{
		{"unmanaged", newPod("ns", "a", "node-1"), teardown.Pod{}},
		{"replicaset", newPod("ns", "a", "node-1", ownedBy("ReplicaSet", "rs", "u1")), teardown.Pod{}},
		{"daemonset", newPod("ns", "a", "node-1", ownedBy("DaemonSet", "ds", "u1")), teardown.Pod{DaemonSet: true}},
		{"daemonset owner that is not the controller", newPod("ns", "a", "node-1", ownedBy("DaemonSet", "ds", "u1"), notController), teardown.Pod{}},
		{"daemonset of another group", newPod("ns", "a", "node-1", ownedBy("DaemonSet", "ds", "u1"),
			func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "example.com/v1" }), teardown.Pod{}},
		{"mirror", newPod("ns", "a", "node-1", mirror), teardown.Pod{Mirror: true}},
		{"terminating", newPod("ns", "a", "node-1", func(p *corev1.Pod) { p.DeletionTimestamp = &deleted }), teardown.Pod{Terminating: true}},
		{"succeeded", newPod("ns", "a", "node-1", withPhase(corev1.PodSucceeded)), teardown.Pod{Finished: true}},
		{"failed", newPod("ns", "a", "node-1", withPhase(corev1.PodFailed)), teardown.Pod{Finished: true}},
		{"pending", newPod("ns", "a", "node-1", withPhase(corev1.PodPending)), teardown.Pod{}},
		{"finished daemonset mirror", newPod("ns", "a", "node-1", ownedBy("DaemonSet", "ds", "u1"), mirror, withPhase(corev1.PodFailed)),
			teardown.Pod{DaemonSet: true, Mirror: true, Finished: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0), tc.pod)
			got, err := teardownkube.New(cs, teardownkube.Options{}).Pods(t.Context(), "node-1")
			require.NoError(t, err)
			tc.want.Namespace, tc.want.Name = "ns", "a"
			assert.Equal(t, []teardown.Pod{tc.want}, got)
		})
	}
}

// Pods lists the pods of the node only (by field selector, and checked),
// sorted.
func TestPodsOfTheNodeOnly(t *testing.T) {
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0),
		newPod("b", "x", "node-1"), newPod("a", "y", "node-1"), newPod("a", "x", "node-2"), newPod("a", "z", ""))
	got, err := teardownkube.New(cs, teardownkube.Options{}).Pods(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, []teardown.Pod{{Namespace: "a", Name: "y"}, {Namespace: "b", Name: "x"}}, got)
	lists := actions(cs, "list", "pods", "")
	require.Len(t, lists, 1)
	assert.Equal(t, "spec.nodeName=node-1", lists[0].(k8stesting.ListAction).GetListRestrictions().Fields.String())
}

func TestSetLabels(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	n.Labels["keep"] = "me"
	n.Labels["old"] = "x"
	cs := fake.NewClientset(n)
	c := teardownkube.New(cs, teardownkube.Options{})

	change := map[string]*string{"example.com/role": ptr("worker"), "old": nil, "absent": nil}
	require.NoError(t, c.SetLabels(t.Context(), "node-1", change))
	require.NoError(t, c.SetLabels(t.Context(), "node-1", change), "again: idempotent")

	got, err := cs.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "node-1", "keep": "me", "example.com/role": "worker"}, got.Labels)

	patches := actions(cs, "patch", "nodes", "")
	require.Len(t, patches, 2, "one update per call")
	p := patches[0].(k8stesting.PatchAction)
	assert.Equal(t, types.MergePatchType, p.GetPatchType())
	var body map[string]any
	require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
	assert.Equal(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"example.com/role": "worker", "old": nil, "absent": nil}}}, body)
}

func TestSetLabelsInvalid(t *testing.T) {
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0))
	c := teardownkube.New(cs, teardownkube.Options{})
	for _, tc := range []struct {
		labels map[string]*string
		field  string
	}{
		{map[string]*string{"bad key!": ptr("v")}, "labels[bad key!]"},
		{map[string]*string{"": nil}, "labels[]"},
		{map[string]*string{"ok": ptr("bad value!")}, "labels[ok]"},
		{map[string]*string{"ok": ptr(string(make([]byte, 64)))}, "labels[ok]"},
	} {
		err := c.SetLabels(t.Context(), "node-1", tc.labels)
		var e *teardownkube.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, tc.field, e.Field)
		assert.Equal(t, "node-1", e.Node)
	}
	assert.Empty(t, actions(cs, "patch", "nodes", ""), "nothing sent")
}

// A label the server did not store as asked is an error.
func TestSetLabelsChecksTheResult(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	cs := fake.NewClientset(n)
	cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, n.DeepCopy(), nil // as if a webhook dropped the change
	})
	err := teardownkube.New(cs, teardownkube.Options{}).SetLabels(t.Context(), "node-1", map[string]*string{"a": ptr("b")})
	assert.ErrorContains(t, err, `teardownkube: node node-1: set-labels labels[a]: the node holds "" after the label was set to "b"`)
	err = teardownkube.New(cs, teardownkube.Options{}).SetLabels(t.Context(), "node-1", map[string]*string{"kubernetes.io/hostname": nil})
	assert.ErrorContains(t, err, "still on the node")
}

func TestDeleteNode(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	n.UID = "uid-1"
	cs := fake.NewClientset(n)
	require.NoError(t, teardownkube.New(cs, teardownkube.Options{}).DeleteNode(t.Context(), "node-1"))
	_, err := cs.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	dels := actions(cs, "delete", "nodes", "")
	require.Len(t, dels, 1)
	opts := dels[0].(k8stesting.DeleteAction).GetDeleteOptions()
	require.NotNil(t, opts.Preconditions)
	assert.Equal(t, types.UID("uid-1"), *opts.Preconditions.UID)
}

// A node the server keeps after the deletion (a finalizer) is not reported
// deleted.
func TestDeleteNodeUnconfirmed(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	n.Finalizers = []string{"example.com/hold"}
	cs := fake.NewClientset(n)
	cs.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	err := teardownkube.New(cs, teardownkube.Options{}).DeleteNode(t.Context(), "node-1")
	assert.ErrorContains(t, err, "teardownkube: node node-1: delete: the node is still there after its deletion (finalizers [example.com/hold])")
	assert.NotErrorIs(t, err, teardown.ErrNodeNotFound)
}

func TestDrainOptionsValidation(t *testing.T) {
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0))
	c := teardownkube.New(cs, teardownkube.Options{})
	for _, tc := range []struct {
		opts  teardown.DrainOptions
		field string
	}{
		{teardown.DrainOptions{}, "DrainOptions.Timeout"},
		{teardown.DrainOptions{Timeout: -time.Second}, "DrainOptions.Timeout"},
		{teardown.DrainOptions{Timeout: time.Minute, GracePeriod: -time.Second}, "DrainOptions.GracePeriod"},
	} {
		err := c.Drain(t.Context(), "node-1", tc.opts, nil)
		var e *teardownkube.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, tc.field, e.Field)
		assert.Equal(t, teardownkube.OpDrain, e.Op)
	}
	assert.Empty(t, actions(cs, "patch", "nodes", ""), "not cordoned")
}

// A drain with kubectl drain's filters: the ReplicaSet pod, the emptyDir
// pod and the unmanaged pod are evicted with the grace period asked for,
// the DaemonSet pod and the mirror pod stay; progress names every pod that
// left, reports never overlap, and the output goes to the logger.
func TestDrainFake(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"}}
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0), ds,
		newPod("ns", "web-1", "node-1", ownedBy("ReplicaSet", "web", "rs-uid")),
		newPod("ns", "cache-1", "node-1", ownedBy("ReplicaSet", "cache", "rs2-uid"), withEmptyDir),
		newPod("ns", "lonely", "node-1"),
		newPod("ns", "agent-1", "node-1", ownedBy("DaemonSet", "agent", "ds-uid")),
		newPod("kube-system", "etcd-node-1", "node-1", mirror),
	)
	withEviction(cs, nil)
	var logs logBuffer
	var rec progress
	c := teardownkube.New(cs, teardownkube.Options{Logger: logs.logger()})
	err := c.Drain(t.Context(), "node-1", teardown.DrainOptions{
		Timeout: 10 * time.Second, GracePeriod: 1500 * time.Millisecond,
		Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true,
	}, rec.report)
	require.NoError(t, err)

	n, err := cs.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, n.Spec.Unschedulable, "cordoned")

	left, err := c.Pods(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, []teardown.Pod{
		{Namespace: "kube-system", Name: "etcd-node-1", Mirror: true},
		{Namespace: "ns", Name: "agent-1", DaemonSet: true},
	}, left)

	evictions := actions(cs, "create", "pods", "eviction")
	require.Len(t, evictions, 3)
	for _, a := range evictions {
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		assert.Equal(t, int64(2), *ev.DeleteOptions.GracePeriodSeconds, "1.5 s rounded up")
	}
	assert.Empty(t, actions(cs, "delete", "pods", ""), "evictions, not deletions")

	assert.Equal(t, []string{"ns/cache-1", "ns/lonely", "ns/web-1"}, rec.done())
	msgs := rec.messages()
	assert.Equal(t, "node/node-1 cordoned", msgs[0])
	assert.Equal(t, teardown.DrainProgress{Node: "node-1", Message: "node/node-1 drained"}, rec.last())
	assert.Len(t, rec.containing("evicting pod "), 3)
	assert.Equal(t, []string{"WARNING: deleting Pods that declare no controller: ns/lonely; ignoring DaemonSet-managed Pods: ns/agent-1"},
		rec.containing("WARNING: "), "warned once")
	assert.False(t, rec.overlap, "reports never overlap")
	assert.Equal(t, 3, rec.reports[1].Pending, "three pods to evict: %v", msgs)

	out := logs.String()
	assert.Contains(t, out, `msg="evicting pod ns/web-1"`)
	assert.Contains(t, out, "node=node-1")
	assert.Contains(t, out, "level=WARN msg=\"WARNING: ")
}

// A budget that refuses every eviction: the drain retries until its
// timeout, then names the pod, the refusal and the budget.
func TestDrainFakeRefusedByBudget(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	other := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}},
	}
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0), pdb, other,
		newPod("ns", "web-1", "node-1", ownedBy("ReplicaSet", "web", "rs-uid"), withLabel("app", "web")))
	attempts := 0
	withEviction(cs, func(*policyv1.Eviction) error { attempts++; return budgetRefusal("web") })
	var rec progress
	c := teardownkube.New(cs, teardownkube.Options{EvictionRetryDelay: 20 * time.Millisecond})
	start := time.Now()
	err := c.Drain(t.Context(), "node-1", teardown.DrainOptions{Timeout: 500 * time.Millisecond}, rec.report)
	assert.Less(t, time.Since(start), 3*time.Second)
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, teardownkube.OpDrain, e.Op)
	require.Len(t, e.Remaining, 1)
	assert.Equal(t, teardownkube.RemainingPod{
		Namespace: "ns", Name: "web-1",
		Reason: "eviction refused: Cannot evict pod as it would violate the pod's disruption budget. " +
			"The disruption budget web needs 1 healthy pods and has 1 currently",
		Budgets: []string{"web (disruptionsAllowed 0)"},
	}, e.Remaining[0])
	assert.Contains(t, err.Error(), "teardownkube: node node-1: drain: drain timeout of 500ms reached")
	assert.Contains(t, err.Error(), "1 pod left: ns/web-1: eviction refused")
	assert.GreaterOrEqual(t, attempts, 2, "retried")
	assert.Len(t, rec.containing("refused (retrying every 20ms)"), 1, "one report per refusal reason")
	assert.Empty(t, rec.done())
}

// Without an eviction API the pods are deleted.
func TestDrainFakeDeletesWithoutEvictionAPI(t *testing.T) {
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0),
		newPod("ns", "web-1", "node-1", ownedBy("ReplicaSet", "web", "rs-uid")))
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true},
	}}}
	var rec progress
	err := teardownkube.New(cs, teardownkube.Options{}).Drain(t.Context(), "node-1",
		teardown.DrainOptions{Timeout: 10 * time.Second}, rec.report)
	require.NoError(t, err)
	dels := actions(cs, "delete", "pods", "")
	require.Len(t, dels, 1)
	assert.Nil(t, dels[0].(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds, "GracePeriod zero: the pod's own")
	assert.Equal(t, []string{"node/node-1 cordoned", "deleting pod ns/web-1", "pod ns/web-1 deleted", "node/node-1 drained"}, rec.messages())
}

// Pods the options do not cover stop the drain before any eviction, and
// the error names them and the option.
func TestDrainFakeRefusesUncoveredPods(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"}}
	cs := fake.NewClientset(newNode("node-1", corev1.ConditionTrue, t0), ds,
		newPod("ns", "web-1", "node-1", ownedBy("ReplicaSet", "web", "rs-uid")),
		newPod("ns", "agent-1", "node-1", ownedBy("DaemonSet", "agent", "ds-uid")),
		newPod("ns", "lonely", "node-1"))
	withEviction(cs, nil)
	err := teardownkube.New(cs, teardownkube.Options{}).Drain(t.Context(), "node-1",
		teardown.DrainOptions{Timeout: 10 * time.Second}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "teardownkube: node node-1: drain: ")
	assert.Contains(t, err.Error(), "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ns/agent-1")
	assert.Contains(t, err.Error(), "cannot delete Pods that declare no controller (use --force to override): ns/lonely")
	assert.Empty(t, actions(cs, "create", "pods", "eviction"))
	n, err := cs.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, n.Spec.Unschedulable, "cordoned all the same, as kubectl drain does")
}

// A pod that is gone before its eviction counts as gone; a node with
// nothing to evict is drained at once; a cordoned node is said so.
func TestDrainFakePodGoneBeforeEviction(t *testing.T) {
	n := newNode("node-1", corev1.ConditionTrue, t0)
	n.Spec.Unschedulable = true
	cs := fake.NewClientset(n, newPod("ns", "web-1", "node-1", ownedBy("ReplicaSet", "web", "rs-uid")))
	withEviction(cs, func(ev *policyv1.Eviction) error {
		require.NoError(t, cs.Tracker().Delete(podsGVR, ev.Namespace, ev.Name)) // deleted by someone else meanwhile
		return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, ev.Name)
	})
	var rec progress
	require.NoError(t, teardownkube.New(cs, teardownkube.Options{}).Drain(t.Context(), "node-1",
		teardown.DrainOptions{Timeout: 10 * time.Second}, rec.report))
	assert.Equal(t, []string{"node/node-1 already cordoned", "evicting pod ns/web-1", "pod ns/web-1 evicted", "node/node-1 drained"}, rec.messages())
}
