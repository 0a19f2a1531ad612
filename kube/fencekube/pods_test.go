package fencekube_test

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

func taints(t *testing.T, c client.Reader, name string) []corev1.Taint {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, n))
	return n.Spec.Taints
}

func updates(c *fakeAPI) int { return c.count("update") }

func TestTaintPods(t *testing.T) {
	ctx := t.Context()
	other := corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}
	n := node("worker-1", corev1.ConditionFalse, t0, nil)
	n.Spec.Taints = []corev1.Taint{other}
	client := newFakeAPI(t, n)
	tp := &fencekube.TaintPods{Client: client, Now: func() time.Time { return t0 }}

	// A storage release does not taint.
	require.NoError(t, tp.Release(ctx, "worker-1", flow.ReleaseStorage))
	assert.Equal(t, []corev1.Taint{other}, taints(t, client, "worker-1"))
	assert.Zero(t, updates(client))

	require.NoError(t, tp.Release(ctx, "worker-1", flow.ReleasePower))
	got := taints(t, client, "worker-1")
	dumping := newFakeAPI(t, node("worker-1", corev1.ConditionFalse, t0, nil))
	require.NoError(t, (&fencekube.TaintPods{Client: dumping}).Release(ctx, "worker-1", flow.ReleaseDump), "a dumping node is tainted too")
	assert.Len(t, taints(t, dumping, "worker-1"), 1)
	require.Len(t, got, 2)
	assert.Equal(t, other, got[0], "other taints kept")
	assert.Equal(t, "node.kubernetes.io/out-of-service", got[1].Key)
	assert.Equal(t, "nodeshutdown", got[1].Value)
	assert.Equal(t, corev1.TaintEffectNoExecute, got[1].Effect)
	require.NotNil(t, got[1].TimeAdded)
	assert.True(t, got[1].TimeAdded.Time.Equal(t0))

	client.clearCalls()
	require.NoError(t, tp.Release(ctx, "worker-1", flow.ReleasePower))
	assert.Zero(t, updates(client), "idempotent")
	assert.Len(t, taints(t, client, "worker-1"), 2)

	require.NoError(t, tp.Restore(ctx, "worker-1"))
	assert.Equal(t, []corev1.Taint{other}, taints(t, client, "worker-1"))
	client.clearCalls()
	require.NoError(t, tp.Restore(ctx, "worker-1"))
	assert.Zero(t, updates(client), "idempotent")

	// A node that is gone has nothing to taint or untaint.
	assert.NoError(t, tp.Release(ctx, "worker-9", flow.ReleasePower))
	assert.NoError(t, tp.Restore(ctx, "worker-9"))

	// A node back and ready (switched off and on again) is not tainted.
	back := newFakeAPI(t, node("worker-2", corev1.ConditionTrue, t0, nil))
	require.NoError(t, (&fencekube.TaintPods{Client: back}).Release(ctx, "worker-2", flow.ReleasePower))
	assert.Empty(t, taints(t, back, "worker-2"))
	assert.Zero(t, updates(back))

	err := tp.Release(ctx, "worker-1", flow.Release("All"))
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "release", e.Field)
}

// With ForceDelete, a power release force-deletes the node's pods and then
// taints the node; a storage or kdump release deletes none (the node may
// run), and neither does a node that is ready again.
func TestTaintPodsForceDelete(t *testing.T) {
	objs := func(ready corev1.ConditionStatus) []client.Object {
		return []client.Object{node("worker-1", ready, t0, nil),
			pod("a", "db-0", "worker-1", pvcVolume), pod("b", "web", "worker-1", emptyDirVolume), pod("a", "db-1", "worker-2", pvcVolume)}
	}
	for _, r := range []flow.Release{flow.ReleaseStorage, flow.ReleaseDump} {
		client := newFakeAPI(t, objs(corev1.ConditionFalse)...)
		require.NoError(t, (&fencekube.TaintPods{Client: client, ForceDelete: true}).Release(t.Context(), "worker-1", r))
		assert.Empty(t, deleted(t, client), "%s release", r)
	}
	client := newFakeAPI(t, objs(corev1.ConditionTrue)...)
	require.NoError(t, (&fencekube.TaintPods{Client: client, ForceDelete: true}).Release(t.Context(), "worker-1", flow.ReleasePower))
	assert.Empty(t, deleted(t, client), "a node ready again keeps its pods")

	client = newFakeAPI(t, objs(corev1.ConditionFalse)...)
	require.NoError(t, (&fencekube.TaintPods{Client: client, ForceDelete: true}).Release(t.Context(), "worker-1", flow.ReleasePower))
	assert.Len(t, taints(t, client, "worker-1"), 1)
	assert.Equal(t, []string{"a/db-0", "b/web"}, deleted(t, client))
	var order []string
	for _, op := range client.ops() {
		if v, _, _ := strings.Cut(op, " "); v == "update" || v == "delete" {
			order = append(order, strings.Join(strings.Fields(op)[:2], " "))
		}
	}
	assert.Equal(t, []string{"delete pods", "delete pods", "update nodes"}, order, "the pods first")

	// Tainted already (a release tried again): what is left is deleted.
	client.clearCalls()
	require.NoError(t, client.Create(t.Context(), pod("c", "late", "worker-1")))
	require.NoError(t, (&fencekube.TaintPods{Client: client, ForceDelete: true}).Release(t.Context(), "worker-1", flow.ReleasePower))
	assert.Equal(t, []string{"c/late"}, deleted(t, client))
	assert.Zero(t, updates(client))
}

// A StatefulSet's pod is replaced before the taint: the taint waits, at
// most ReplacementWait, until a pod of the same name with another UID
// exists, so that the controller manager's taint eviction, which deletes
// by name, no longer knows the old one.
func TestTaintPodsWaitsForReplacements(t *testing.T) {
	owned := func(name string) *corev1.Pod {
		p := pod("a", name, "worker-1")
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-db", Controller: &yes}}
		return p
	}
	for _, replaced := range []bool{true, false} {
		client := newFakeAPI(t, node("worker-1", corev1.ConditionFalse, t0, nil), owned("db-0"), owned("db-1"), pod("a", "bare", "worker-1"))
		if replaced {
			// The StatefulSet controller makes db-0 again after its deletion
			// (db-1 later: its StatefulSet starts pods in order).
			client.hook = func(verb string, obj any) error {
				if p, ok := obj.(*corev1.Pod); ok && verb == "delete" && p.Name != "bare" {
					go func() { // once the delete, which the hook precedes, is done
						n := owned(p.Name)
						n.UID, n.Spec.NodeName = types.UID("new-"+p.Name), "worker-2"
						err := client.Create(context.WithoutCancel(t.Context()), n)
						for i := 0; apierrors.IsAlreadyExists(err) && i < 200; i++ {
							time.Sleep(time.Millisecond)
							err = client.Create(context.WithoutCancel(t.Context()), n)
						}
						assert.NoError(t, err)
					}()
				}
				return nil
			}
		}
		var logs strings.Builder
		tp := &fencekube.TaintPods{Client: client, ForceDelete: true, ReplacementWait: 300 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		start := time.Now()
		require.NoError(t, tp.Release(t.Context(), "worker-1", flow.ReleasePower))
		took := time.Since(start)
		assert.Len(t, taints(t, client, "worker-1"), 1, "tainted")
		assert.Equal(t, []string{"a/bare", "a/db-0", "a/db-1"}, deleted(t, client))
		if replaced {
			assert.Less(t, took, 300*time.Millisecond)
			assert.Contains(t, logs.String(), "the StatefulSets replaced the pods deleted; adding the taint")
			continue
		}
		assert.GreaterOrEqual(t, took, 300*time.Millisecond, "waited its bound")
		assert.Contains(t, logs.String(), "not every StatefulSet pod deleted was replaced in time; adding the taint")
		assert.Contains(t, logs.String(), "a/db-0, a/db-1")
	}

	// The caller's context ends the wait, and the node stays untainted.
	client := newFakeAPI(t, node("worker-1", corev1.ConditionFalse, t0, nil), owned("db-0"))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := (&fencekube.TaintPods{Client: client, ForceDelete: true, ReplacementWait: time.Minute}).Release(ctx, "worker-1", flow.ReleasePower)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, taints(t, client, "worker-1"))
}

func TestTaintPodsRetriesOnConflict(t *testing.T) {
	client := newFakeAPI(t, node("worker-1", corev1.ConditionFalse, t0, nil))
	conflicts := 2
	client.hook = func(verb string, obj any) error {
		if _, ok := obj.(*corev1.Node); ok && verb == "update" && conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(corev1.Resource("nodes"), "worker-1", errors.New("changed"))
		}
		return nil
	}
	tp := &fencekube.TaintPods{Client: client}
	require.NoError(t, tp.Release(t.Context(), "worker-1", flow.ReleasePower))
	assert.True(t, fencekube.HasOutOfServiceTaint(&corev1.Node{Spec: corev1.NodeSpec{Taints: taints(t, client, "worker-1")}}))

	// Conflicts without end: an error naming the node and the field.
	conflicts = 100
	err := tp.Restore(t.Context(), "worker-1")
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "worker-1", e.Name)
	assert.Equal(t, fencekube.OpUntaint, e.Op)
	assert.Equal(t, "spec.taints", e.Field)
	assert.True(t, apierrors.IsConflict(err))
}

func pod(ns, name, nodeName string, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: nodeName, Volumes: vols},
	}
}

var (
	pvcVolume = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	ephemeralVolume = corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{}}}
	emptyDirVolume = corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
)

// deleted returns the pods deleted, each force-deleted with its UID as a
// precondition.
func deleted(t *testing.T, client *fakeAPI) []string {
	t.Helper()
	var out []string
	for i, op := range client.opsOf("delete") {
		name := strings.Fields(op)[1]
		o := client.deletes()[i]
		require.NotNil(t, o.GracePeriodSeconds)
		assert.Zero(t, *o.GracePeriodSeconds, "force deletion")
		require.NotNil(t, o.Preconditions)
		_, short, _ := strings.Cut(name, "/")
		assert.Equal(t, types.UID("uid-"+short), *o.Preconditions.UID)
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func TestDeletePods(t *testing.T) {
	objs := []client.Object{
		pod("a", "db-0", "worker-1", emptyDirVolume, pvcVolume),
		pod("b", "cache", "worker-1", ephemeralVolume),
		pod("b", "web", "worker-1", emptyDirVolume),
		pod("a", "db-1", "worker-2", pvcVolume),
	}
	tests := []struct {
		release flow.Release
		sel     func(*corev1.Pod) bool
		want    []string
	}{
		{flow.ReleaseStorage, nil, []string{"a/db-0", "b/cache"}},
		{flow.ReleasePower, nil, []string{"a/db-0", "b/cache", "b/web"}},
		{flow.ReleaseDump, nil, []string{"a/db-0", "b/cache", "b/web"}},
		{flow.ReleaseStorage, func(p *corev1.Pod) bool { return p.Namespace == "a" }, []string{"a/db-0"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.release), func(t *testing.T) {
			client := newFakeAPI(t, objs...)
			dp := &fencekube.DeletePods{Client: client, Select: tt.sel, PageSize: 1}
			require.NoError(t, dp.Release(t.Context(), "worker-1", tt.release))
			assert.Equal(t, tt.want, deleted(t, client), "the pods of worker-1 only: listed by spec.nodeName")

			client.clearCalls()
			require.NoError(t, dp.Release(t.Context(), "worker-1", tt.release), "idempotent")
			require.NoError(t, dp.Restore(t.Context(), "worker-1"))
		})
	}
}

func TestDeletePodsErrors(t *testing.T) {
	api := newFakeAPI(t, pod("a", "gone", "worker-1", pvcVolume), pod("a", "stuck", "worker-1", pvcVolume))
	api.hook = func(verb string, obj any) error {
		if verb != "delete" {
			return nil
		}
		if obj.(client.Object).GetName() == "gone" {
			return apierrors.NewNotFound(corev1.Resource("pods"), "gone")
		}
		return apierrors.NewInternalError(errors.New("etcd timeout"))
	}
	err := (&fencekube.DeletePods{Client: api}).Release(t.Context(), "worker-1", flow.ReleaseStorage)
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "worker-1", e.Name)
	assert.Equal(t, fencekube.OpDeletePods, e.Op)
	assert.Contains(t, err.Error(), "pod a/stuck")
	assert.NotContains(t, err.Error(), "gone", "a pod already gone is not an error")
}

func TestUsesStorage(t *testing.T) {
	assert.True(t, fencekube.UsesStorage(pod("a", "p", "n", emptyDirVolume, pvcVolume)))
	assert.True(t, fencekube.UsesStorage(pod("a", "p", "n", ephemeralVolume)))
	assert.False(t, fencekube.UsesStorage(pod("a", "p", "n", emptyDirVolume)))
	assert.False(t, fencekube.UsesStorage(pod("a", "p", "n")))
}

// Gone tells when the released pods are gone and the node's volumes
// detached: for the taint, every pod that does not tolerate it; for
// deletion, the pods the release deleted. Pods that ended do not count.
func TestPodsGone(t *testing.T) {
	ctx := t.Context()
	tolerant := pod("a", "agent", "worker-1")
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeOutOfService, Operator: corev1.TolerationOpExists}}
	done := pod("a", "job", "worker-1")
	done.Status.Phase = corev1.PodSucceeded
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"},
		Spec: storagev1.VolumeAttachmentSpec{NodeName: "worker-1", Attacher: "csi.example"}}
	client := newFakeAPI(t, pod("a", "db-0", "worker-1", pvcVolume), pod("b", "web", "worker-1"), tolerant, done,
		pod("a", "db-1", "worker-2", pvcVolume), va)
	tp := &fencekube.TaintPods{Client: client}
	dp := &fencekube.DeletePods{Client: client}

	gone, detail, err := tp.Gone(ctx, "worker-1", flow.ReleasePower)
	require.NoError(t, err)
	assert.False(t, gone)
	assert.Equal(t, "2 pods left (a/db-0), 1 volume attachments", detail)
	gone, _, err = tp.Gone(ctx, "worker-1", flow.ReleaseStorage)
	require.NoError(t, err)
	assert.True(t, gone, "no taint for a storage release: nothing to wait for")

	del := func(ns, name string) {
		require.NoError(t, client.Fake.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	del("a", "db-0")
	gone, detail, err = dp.Gone(ctx, "worker-1", flow.ReleaseStorage)
	require.NoError(t, err)
	assert.False(t, gone)
	assert.Equal(t, "no pods left, 1 volume attachments", detail, "web has no storage; the volume is still attached")
	del("b", "web")
	gone, detail, _ = dp.Gone(ctx, "worker-1", flow.ReleasePower)
	assert.False(t, gone)
	assert.Contains(t, detail, "1 pods left (a/agent)", "deletion released the tolerant pod too")
	gone, _, _ = tp.Gone(ctx, "worker-1", flow.ReleasePower)
	assert.False(t, gone, "the volume is attached")
	require.NoError(t, client.Fake.Delete(ctx, va))
	gone, detail, err = tp.Gone(ctx, "worker-1", flow.ReleasePower)
	require.NoError(t, err)
	assert.True(t, gone, detail)

	// A cluster that does not let the controller list VolumeAttachments:
	// the pods alone decide.
	listErr := map[string]error{"volumeattachments": apierrors.NewForbidden(storagev1.Resource("volumeattachments"), "", errors.New("no"))}
	client.hook = func(verb string, obj any) error {
		if verb == "list" {
			return listErr[resourceOf(obj)]
		}
		return nil
	}
	gone, _, err = tp.Gone(ctx, "worker-1", flow.ReleasePower)
	require.NoError(t, err)
	assert.True(t, gone)
	// Other errors are errors: the controller keeps the node off.
	listErr["pods"] = apierrors.NewInternalError(errors.New("etcd timeout"))
	_, _, err = tp.Gone(ctx, "worker-1", flow.ReleasePower)
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpListPods, e.Op)
	assert.Equal(t, "worker-1", e.Name)
}

// With LeaseFresh, a node whose Ready condition still says True but whose
// lease is stale (fenced on its lease before the controller manager turned
// it) is tainted; one whose lease is fresh (back already) is not.
func TestTaintPodsLeaseFresh(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		renewed time.Time
		taint   bool
	}{{"stale lease", now.Add(-time.Minute), true}, {"fresh lease", now.Add(-time.Second), false}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := metav1.NewMicroTime(tc.renewed)
			c := fakeObjects(t,
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
				&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: fencekube.NodeLeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &rt}})
			p := &fencekube.TaintPods{Client: c, Now: func() time.Time { return now }, LeaseFresh: 15 * time.Second}
			require.NoError(t, p.Release(t.Context(), "w1", flow.ReleasePower))
			n := &corev1.Node{}
			require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "w1"}, n))
			assert.Equal(t, tc.taint, fencekube.HasOutOfServiceTaint(n))
		})
		// With Renewed (the controller's own clock), the lease's
		// renewTime is not read: a node whose clock ran an hour ahead (its
		// renewTime in the future) is judged by when the renewal was seen.
		t.Run(tc.name+"/seen", func(t *testing.T) {
			ahead := metav1.NewMicroTime(now.Add(time.Hour))
			c := fakeObjects(t,
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
				&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: fencekube.NodeLeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &ahead}})
			p := &fencekube.TaintPods{Client: c, Now: func() time.Time { return now }, LeaseFresh: 15 * time.Second,
				Renewed: func(string) time.Time { return tc.renewed }}
			require.NoError(t, p.Release(t.Context(), "w1", flow.ReleasePower))
			n := &corev1.Node{}
			require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "w1"}, n))
			assert.Equal(t, tc.taint, fencekube.HasOutOfServiceTaint(n))
		})
	}
}
