package fencekube_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

const crdPath = "../../config/crd/fencekit.io_nodefences.yaml"

// cluster returns the shared API server with the NodeFence CRD installed.
func cluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	return c
}

// createNode creates a Node whose Ready condition is ready (none when
// empty), last changed at since, as a kubelet would have written it.
func createNode(t *testing.T, c *kubetest.Cluster, name string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	_, err := c.Client().CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if ready != "" {
		setReady(t, c, name, ready, since)
	}
}

func setReady(t *testing.T, c *kubetest.Cluster, name string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	n, err := c.Client().CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since), Reason: "Test"}}
	_, err = c.Client().CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func TestIntegrationStore(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	name := kubetest.UniqueName(t)

	_, err := s.Get(ctx, name)
	require.ErrorIs(t, err, controller.ErrNotFound)

	nf := newRecord(name)
	nf.Created = t0.Add(123456789 * time.Nanosecond)
	created, err := s.Create(ctx, nf)
	require.NoError(t, err)
	want := nf.Clone()
	want.Created = t0.Add(123456 * time.Microsecond)
	want.Version = created.Version
	assert.Equal(t, want, created, "stored to the microsecond")

	got, err := s.Get(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, created, got)

	_, err = s.Create(ctx, newRecord(name))
	require.ErrorIs(t, err, controller.ErrConflict)
	t.Logf("create conflict: %v", err)

	next := sample(name)
	next.Version = got.Version
	updated, err := s.Update(ctx, next)
	require.NoError(t, err)
	next.Version = updated.Version
	assert.Equal(t, normalize(next), updated)

	stale := sample(name)
	stale.Version = got.Version
	_, err = s.Update(ctx, stale)
	require.ErrorIs(t, err, controller.ErrConflict)
	t.Logf("update conflict: %v", err)

	u, err := c.Dynamic().Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{fencekube.Finalizer}, u.GetFinalizers())
	assert.Equal(t, name, mustString(t, u, "spec", "node"))

	// The printer columns.
	raw, err := c.Client().CoreV1().RESTClient().Get().AbsPath("/apis/fencekit.io/v1alpha1/nodefences/"+name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var cols []string
	for _, col := range table.ColumnDefinitions {
		if col.Priority == 0 {
			cols = append(cols, col.Name)
		}
	}
	assert.Equal(t, []string{"Name", "Node", "Step", "Status", "Fenced", "Proof", "Retries", "Age"}, cols)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []any{name, name, "power_management", "Running", "False", "FoundOn", float64(1)}, table.Rows[0].Cells[:7],
		"a node switched on behind the controller is not shown fenced")
}

func mustString(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	s, _, err := unstructured.NestedString(u.Object, path...)
	require.NoError(t, err)
	return s
}

// Two controllers racing on one node: of two creates, and of two updates
// made on the same version, exactly one succeeds.
func TestIntegrationStoreRace(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	stores := []*fencekube.Store{
		fencekube.NewStore(c.Objects(), fencekube.StoreOptions{}),
		fencekube.NewStore(c.Objects(), fencekube.StoreOptions{}),
	}
	race := func(f func(i int) error) []error {
		errs := make([]error, 2)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range 2 {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				errs[i] = f(i)
			}()
		}
		start.Done()
		done.Wait()
		return errs
	}
	oneWins := func(errs []error) {
		t.Helper()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				assert.ErrorIs(t, err, controller.ErrConflict)
			}
		}
		assert.Equal(t, 1, ok, "exactly one wins: %v", errs)
	}

	for round := range 5 {
		name := kubetest.UniqueName(t)
		oneWins(race(func(i int) error {
			nf := newRecord(name)
			nf.Message = []string{"a", "b"}[i]
			_, err := stores[i].Create(ctx, nf)
			return err
		}))

		read := make([]*flow.NodeFence, 2)
		for i, s := range stores {
			var err error
			read[i], err = s.Get(ctx, name)
			require.NoError(t, err)
		}
		require.Equal(t, read[0].Version, read[1].Version)
		oneWins(race(func(i int) error {
			next, _ := flow.Advance(read[i], name, flow.Observation{Now: t0.Add(time.Duration(round+1) * time.Minute),
				Ready: true, Owner: []string{"a", "b"}[i]}, flow.Options{})
			_, err := stores[i].Update(ctx, next)
			return err
		}))
	}
}

func TestIntegrationFinalizer(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	name := kubetest.UniqueName(t)
	_, err := s.Create(ctx, newRecord(name))
	require.NoError(t, err)

	// A user deletes it: the finalizer keeps it, Deleting.
	require.NoError(t, c.Dynamic().Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{}))
	rec, err := s.Get(ctx, name)
	require.NoError(t, err)
	assert.True(t, rec.Deleting)

	// The controller may still write its status (restoring the pods).
	rec.Restoring = true
	rec.Released = flow.ReleasePower
	rec, err = s.Update(ctx, rec)
	require.NoError(t, err)
	assert.True(t, rec.Deleting)
	rec.RestoredPods()
	rec, err = s.Update(ctx, rec)
	require.NoError(t, err)

	stale := rec.Clone()
	stale.Version = "1"
	require.ErrorIs(t, s.Forget(ctx, stale), controller.ErrConflict)

	require.NoError(t, s.Forget(ctx, rec))
	_, err = s.Get(ctx, name)
	require.ErrorIs(t, err, controller.ErrNotFound, "gone once the finalizer is removed")
	require.NoError(t, s.Forget(ctx, rec), "forgetting a record that is gone")

	// Forget of a record no user deleted deletes it.
	other := kubetest.UniqueName(t)
	rec, err = s.Create(ctx, newRecord(other))
	require.NoError(t, err)
	require.NoError(t, s.Forget(ctx, rec))
	_, err = c.Dynamic().Resource(gvr).Get(ctx, other, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

func TestIntegrationClear(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	name := kubetest.UniqueName(t)
	rec := newRecord(name)
	rec.Status = flow.StatusFailed
	_, err := s.Create(ctx, rec)
	require.NoError(t, err)

	// kubectl patch nodefence NAME --type merge -p '{"spec":{"retry":1}}'
	_, err = c.Dynamic().Resource(gvr).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"retry":1}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	rec, err = s.Get(ctx, name)
	require.NoError(t, err)
	require.True(t, rec.Clear)

	next, _ := flow.Advance(rec, name, flow.Observation{Now: t0}, flow.Options{})
	require.False(t, next.Clear)
	assert.Equal(t, flow.StatusNew, next.Status, "cleared: the step starts again")
	next, err = s.Update(ctx, next)
	require.NoError(t, err)
	assert.False(t, next.Clear)
	u, err := c.Dynamic().Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedRetry")
	assert.Equal(t, int64(1), observed)

	// spec.node cannot change.
	_, err = c.Dynamic().Resource(gvr).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"node":"other"}}`), metav1.PatchOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.node is immutable")
}

func TestIntegrationMalformed(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	res := c.Dynamic().Resource(gvr)
	ev := &recEvents{}
	s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{Events: ev})

	// The schema refuses what it can.
	name := kubetest.UniqueName(t)
	_, err := s.Create(ctx, newRecord(name))
	require.NoError(t, err)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(u.Object, "power-management", "status", "step"))
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "the CRD's enum: %v", err)
	// A field of the wrong JSON type, or a time that is not one, never
	// reaches a typed client: the schema refuses them too.
	for _, bad := range []struct {
		value any
		path  []string
	}{
		{"2", []string{"status", "retries"}},
		{"true", []string{"status", "isolated"}},
		{"yesterday", []string{"status", "changed"}},
		// An RFC 3339 time without six digits of fraction too: the typed
		// client reads no other form.
		{"2026-11-27T10:00:00Z", []string{"status", "changed"}},
		{"2026-11-27T10:00:00.5+01:00", []string{"status", "created"}},
		{int64(1), []string{"status", "step"}},
	} {
		v := u.DeepCopy()
		require.NoError(t, unstructured.SetNestedField(v.Object, bad.value, bad.path...))
		_, err = res.UpdateStatus(ctx, v, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "%v in %v: %v", bad.value, bad.path, err)
	}
	require.NoError(t, unstructured.SetNestedField(u.Object, "isolation", "status", "step"))

	// A status with a step and no status passes the schema, not the store.
	// And in spec, where a person writes.
	spec := u.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(spec.Object, "2026-11-27T10:00:00Z", "spec", "markedHealthy"))
	_, err = res.Update(ctx, spec, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "spec.markedHealthy without six digits of fraction: %v", err)
	require.NoError(t, unstructured.SetNestedField(u.Object, "isolation", "status", "step"))
	unstructured.RemoveNestedField(u.Object, "status", "status")
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = s.Get(ctx, name)
	require.ErrorIs(t, err, fencekube.ErrMalformed)
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, name, e.Name)
	assert.Equal(t, "status.status", e.Field)
	t.Logf("malformed: %v", err)

	// A NodeFence named after one node that names another.
	other := kubetest.UniqueName(t)
	_, err = res.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fencekit.io/v1alpha1", "kind": "NodeFence",
		"metadata": map[string]any{"name": other},
		"spec":     map[string]any{"node": "worker-elsewhere"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = s.Get(ctx, other)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "spec.node", e.Field)
	assert.Contains(t, err.Error(), `"worker-elsewhere" is not the object's name`)

	// List leaves both out and reports them; the others are listed.
	good := kubetest.UniqueName(t)
	_, err = s.Create(ctx, newRecord(good))
	require.NoError(t, err)
	recs, err := s.List(ctx)
	require.NoError(t, err)
	nodes := map[string]bool{}
	for _, r := range recs {
		nodes[r.Node] = true
	}
	assert.True(t, nodes[good])
	assert.False(t, nodes[name])
	assert.False(t, nodes[other])
	reported := 0
	for _, e := range ev.list() {
		if (len(e) > len(name) && e[:len(name)+1] == name+" ") || (len(e) > len(other) && e[:len(other)+1] == other+" ") {
			reported++
			assert.Contains(t, e, "NodeFenceMalformed true")
		}
	}
	assert.Equal(t, 2, reported)
}

// TestIntegrationStoreCache: a Store on a controller-runtime cache, as a
// manager's client and APIReader give it, lists from the cache and writes
// to the API server.
func TestIntegrationStoreCache(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	scheme := c.Objects().Scheme()
	informers, err := crcache.New(c.Config(), crcache.Options{Scheme: scheme})
	require.NoError(t, err)
	go func() { _ = informers.Start(ctx) }()
	cached, err := client.New(c.Config(), client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: informers}})
	require.NoError(t, err)
	s := fencekube.NewStore(cached, fencekube.StoreOptions{Reader: c.Objects()})

	name := kubetest.UniqueName(t)
	rec, err := s.Create(ctx, newRecord(name))
	require.NoError(t, err)
	find := func() *flow.NodeFence {
		recs, err := s.List(ctx)
		require.NoError(t, err)
		for _, r := range recs {
			if r.Node == name {
				return r
			}
		}
		return nil
	}
	require.Eventually(t, func() bool { r := find(); return r != nil && r.Version == rec.Version }, 30*time.Second, 10*time.Millisecond)
	rec.Message = "changed"
	rec, err = s.Update(ctx, rec)
	require.NoError(t, err)
	require.Eventually(t, func() bool { r := find(); return r != nil && r.Message == "changed" }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Forget(ctx, rec))
	require.Eventually(t, func() bool { return find() == nil }, 30*time.Second, 10*time.Millisecond)
}

func TestIntegrationTaint(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	name := kubetest.UniqueName(t)
	createNode(t, c, name, corev1.ConditionFalse, t0)
	tp := &fencekube.TaintPods{Client: c.Objects(), Now: func() time.Time { return t0 }}
	get := func() *corev1.Node {
		n, err := c.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return n
	}
	before := get().Spec.Taints

	require.NoError(t, tp.Release(ctx, name, flow.ReleaseStorage))
	assert.False(t, fencekube.HasOutOfServiceTaint(get()), "no taint for an isolated node")

	require.NoError(t, tp.Release(ctx, name, flow.ReleasePower))
	n := get()
	require.True(t, fencekube.HasOutOfServiceTaint(n))
	var oos corev1.Taint
	for _, tt := range n.Spec.Taints {
		if tt.Key == corev1.TaintNodeOutOfService {
			oos = tt
		}
	}
	assert.Equal(t, "nodeshutdown", oos.Value)
	require.NotNil(t, oos.TimeAdded)
	assert.True(t, oos.TimeAdded.Time.Equal(t0))
	rv := n.ResourceVersion
	require.NoError(t, tp.Release(ctx, name, flow.ReleasePower))
	assert.Equal(t, rv, get().ResourceVersion, "idempotent: not written again")

	require.NoError(t, tp.Restore(ctx, name))
	n = get()
	assert.False(t, fencekube.HasOutOfServiceTaint(n))
	assert.Equal(t, before, n.Spec.Taints, "the other taints are left")
	require.NoError(t, tp.Restore(ctx, name))
	require.NoError(t, tp.Restore(ctx, kubetest.UniqueName(t)), "no such node")
}

func TestIntegrationDeletePods(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)
	nodeA, nodeB := kubetest.UniqueName(t), kubetest.UniqueName(t)
	createNode(t, c, nodeA, corev1.ConditionFalse, t0)
	createNode(t, c, nodeB, corev1.ConditionTrue, t0)
	ephemeral := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}}}}
	mk := func(name, nodeName string, vols ...corev1.Volume) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			NodeName: nodeName, Volumes: vols,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		}}
		_, err := c.Client().CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	mk("db-0", nodeA, pvcVolume)
	mk("cache", nodeA, ephemeral)
	mk("web", nodeA, emptyDirVolume)
	mk("db-1", nodeB, pvcVolume)
	left := func() []string {
		l, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Name)
		}
		sort.Strings(out)
		return out
	}

	dp := &fencekube.DeletePods{Client: c.Objects(), PageSize: 1}
	require.NoError(t, dp.Release(ctx, nodeA, flow.ReleaseStorage))
	assert.Equal(t, []string{"db-1", "web"}, left(), "the pods with storage on the isolated node are gone at once")
	require.NoError(t, dp.Release(ctx, nodeA, flow.ReleaseStorage))
	require.NoError(t, dp.Release(ctx, nodeA, flow.ReleasePower))
	assert.Equal(t, []string{"db-1"}, left(), "all of the powered-off node's pods are gone")
}

func TestIntegrationEvents(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	name := kubetest.UniqueName(t)
	createNode(t, c, name, corev1.ConditionFalse, t0)
	ev := recorderEvents(t, c.Client(), "fencekit")
	ev.Event(name, true, "FenceIsolation", "isolation: node not ready for the configured duration: fencing starts")
	ev.Event(name, false, "FenceIsolated", "node isolated: a device confirmed it (level 1)")

	// As kubectl describe node looks for them.
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": name, "involvedObject.uid": name}.AsSelector().String()
	var got []corev1.Event
	require.Eventually(t, func() bool {
		l, err := c.Client().CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		require.NoError(t, err)
		got = l.Items
		return len(got) == 2
	}, 30*time.Second, 20*time.Millisecond)
	reasons := []string{got[0].Reason, got[1].Reason}
	sort.Strings(reasons)
	assert.Equal(t, []string{"FenceIsolated", "FenceIsolation"}, reasons)
	for _, e := range got {
		assert.Equal(t, "default", e.Namespace)
		if e.Reason == "FenceIsolation" {
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
		}
	}
}

func TestIntegrationConfig(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)
	for _, cm := range configMaps(ns, "worker-1", "fake://integration-config") {
		_, err := c.Client().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	listed := fencekube.NewConfigSource(c.Objects(), ns, fencekube.ConfigOptions{})
	cfg, err := listed.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1"}, cfg.Nodes())
	driver, params, err := cfg.MethodParams("worker-1", "pdu-off")
	require.NoError(t, err)
	assert.Equal(t, "fake", driver)
	plug, _ := params.Get("plug")
	assert.Equal(t, "1", plug)

	watched := fencekube.NewConfigSource(c.Objects(), ns, fencekube.ConfigOptions{})
	runConfigMaps(t, c.Client(), ns, watched)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, watched.WaitForSync(wctx))
	cfg, err = watched.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1"}, cfg.Nodes())

	// A broken node configuration: the parse error, naming the ConfigMap.
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fence-config-worker-2"},
		Data: map[string]string{"config.properties": "node_name=worker-3\nisolation=pdu-off\n"}}
	_, err = c.Client().CoreV1().ConfigMaps(ns).Create(ctx, bad, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := watched.Config(ctx)
		return errors.Is(err, config.ErrNodeMismatch)
	}, 30*time.Second, 10*time.Millisecond)
	_, err = watched.Config(ctx)
	assert.Contains(t, err.Error(), "fence-config-worker-2")
}

func TestIntegrationHealth(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	ready, down := kubetest.UniqueName(t), kubetest.UniqueName(t)
	createNode(t, c, ready, corev1.ConditionTrue, t0)
	createNode(t, c, down, corev1.ConditionUnknown, t0.Add(time.Minute))
	h := fencekube.NewHealth()
	runHealth(t, c.Client(), h)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, h.WaitForSync(wctx))
	find := func(name string) (controller.NodeHealth, bool) {
		for _, n := range h.Nodes() {
			if n.Name == name {
				return n, true
			}
		}
		return controller.NodeHealth{}, false
	}
	require.Eventually(t, func() bool {
		_, a := find(ready)
		_, b := find(down)
		return a && b
	}, 30*time.Second, 10*time.Millisecond)
	n, _ := find(ready)
	assert.True(t, n.Ready)
	assert.True(t, n.Since.Equal(t0))
	n, _ = find(down)
	assert.False(t, n.Ready)
	assert.True(t, n.Since.Equal(t0.Add(time.Minute)))

	setReady(t, c, down, corev1.ConditionTrue, t0.Add(2*time.Minute))
	require.Eventually(t, func() bool { n, _ := find(down); return n.Ready }, 30*time.Second, 10*time.Millisecond)
}

// On the real API server: after the out-of-service taint, Gone waits for the
// node's pods (the controller manager's pod garbage collector deletes them;
// here the test does) and its VolumeAttachments.
func TestIntegrationPodsGone(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)
	name := kubetest.UniqueName(t)
	createNode(t, c, name, corev1.ConditionFalse, t0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}, Spec: corev1.PodSpec{
		NodeName: name, Volumes: []corev1.Volume{pvcVolume},
		Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
	}}
	_, err := c.Client().CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	pv := "pv-" + name
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-" + name},
		Spec: storagev1.VolumeAttachmentSpec{NodeName: name, Attacher: "csi.example.com",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	_, err = c.Client().StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Client().StorageV1().VolumeAttachments().Delete(context.Background(), va.Name, metav1.DeleteOptions{})
	})

	tp := &fencekube.TaintPods{Client: c.Objects()}
	require.NoError(t, tp.Release(ctx, name, flow.ReleasePower))
	gone, detail, err := tp.Gone(ctx, name, flow.ReleasePower)
	require.NoError(t, err)
	assert.False(t, gone)
	assert.Equal(t, "1 pods left ("+ns+"/db-0), 1 volume attachments", detail)

	// The watch (controller.PodsNotifier) tells of each change that may
	// end the wait: once when it is set up, then the pod's deletion, then
	// the attachment's; not of other nodes' pods.
	changes := make(chan struct{}, 16)
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- tp.WatchPods(wctx, name, func() { changes <- struct{}{} }) }()
	next := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(10 * time.Second):
			t.Fatalf("no change told: %s", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-changes:
			t.Fatalf("a change told: %s", what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	next("the watch set up")
	quiet("nothing changed")
	other := p.DeepCopy()
	other.Name, other.Spec.NodeName = "other-0", name+"-other"
	_, err = c.Client().CoreV1().Pods(ns).Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	zero := int64(0)
	require.NoError(t, c.Client().CoreV1().Pods(ns).Delete(ctx, "other-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	quiet("another node's pod")

	require.NoError(t, c.Client().CoreV1().Pods(ns).Delete(ctx, "db-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	next("the pod deleted")
	gone, detail, err = tp.Gone(ctx, name, flow.ReleasePower)
	require.NoError(t, err)
	assert.False(t, gone)
	assert.Equal(t, "no pods left, 1 volume attachments", detail)

	require.NoError(t, c.Client().StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}))
	next("the attachment deleted")
	gone, _, err = tp.Gone(ctx, name, flow.ReleasePower)
	require.NoError(t, err)
	assert.True(t, gone)
	stop()
	select {
	case err := <-watched:
		assert.NoError(t, err, "the watch ends with its context")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
}

// The admission ledger in a Lease on the real API server: created on the first write, written over
// its resourceVersion only, a stale write a conflict.
func TestIntegrationAdmissionsLedger(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)
	a := fencekube.NewAdmissions(c.Objects(), ns, "")
	l, err := a.Ledger(ctx)
	require.NoError(t, err)
	assert.Empty(t, l.Version)
	assert.Empty(t, l.Admitted)

	l.Admitted = map[string]time.Time{"worker-1": t0}
	first, err := a.SetLedger(ctx, l)
	require.NoError(t, err)
	_, err = a.SetLedger(ctx, l)
	assert.ErrorIs(t, err, controller.ErrConflict, "a second create")

	got, err := a.Ledger(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Time{"worker-1": t0}, got.Admitted)
	assert.Equal(t, first.Version, got.Version)

	got.Admitted["worker-2"] = t0.Add(time.Second)
	_, err = a.SetLedger(ctx, got)
	require.NoError(t, err)
	_, err = a.SetLedger(ctx, got)
	assert.ErrorIs(t, err, controller.ErrConflict, "a write over a stale version")

	// The last storm rides along, for the next leader.
	got, err = a.Ledger(ctx)
	require.NoError(t, err)
	assert.True(t, got.LastStorm.IsZero())
	storm := t0.Add(90 * time.Second).Add(123 * time.Millisecond)
	got.LastStorm = storm
	_, err = a.SetLedger(ctx, got)
	require.NoError(t, err)
	got, err = a.Ledger(ctx)
	require.NoError(t, err)
	assert.True(t, storm.Equal(got.LastStorm), "last storm %v, want %v", got.LastStorm, storm)
	assert.Len(t, got.Admitted, 2)

	// A malformed annotation is an error naming the Lease and the field.
	lease, err := c.Client().CoordinationV1().Leases(ns).Get(ctx, fencekube.DefaultAdmissionsLease, metav1.GetOptions{})
	require.NoError(t, err)
	lease.Annotations[fencekube.AnnotationAdmissions] = "[1,2]"
	_, err = c.Client().CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = a.Ledger(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ns+"/fencekit-admissions")
	assert.Contains(t, err.Error(), fencekube.AnnotationAdmissions)
}
