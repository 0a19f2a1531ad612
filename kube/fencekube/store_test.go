package fencekube_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// recEvents records events, for tests.
type recEvents struct {
	mu  sync.Mutex
	evs []string
}

func (e *recEvents) Event(node string, warning bool, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, fmt.Sprintf("%s %s %v: %s", node, reason, warning, message))
}

func (e *recEvents) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.evs...)
}

func newRecord(node string) *flow.NodeFence {
	nf, _ := flow.Advance(nil, node, flow.Observation{Now: t0}, flow.Options{})
	return nf
}

func TestStoreCreateGet(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})

	nf := newRecord("worker-1")
	got, err := s.Create(ctx, nf)
	require.NoError(t, err)
	assert.NotEmpty(t, got.Version)
	want := nf.Clone()
	want.Version = got.Version
	assert.Equal(t, want, got)

	o := api.stored("worker-1")
	assert.Equal(t, []string{fencekube.Finalizer}, o.Finalizers)
	assert.Equal(t, "worker-1", o.Spec.Node)
	assert.Equal(t, "isolation", o.Status.Step, "the status is written through the subresource after the create")

	fresh, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	assert.Equal(t, got, fresh)

	_, err = s.Create(ctx, newRecord("worker-1"))
	assert.ErrorIs(t, err, controller.ErrConflict, "the node has a record already")
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpCreate, e.Op)

	_, err = s.Get(ctx, "worker-2")
	assert.ErrorIs(t, err, controller.ErrNotFound)
}

func TestStoreCreateStatusConflict(t *testing.T) {
	api := newFakeAPI(t)
	api.fail["update/status"] = apierrors.NewConflict(gr, "worker-1", errors.New("changed"))
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	_, err := s.Create(t.Context(), newRecord("worker-1"))
	assert.ErrorIs(t, err, controller.ErrConflict, "another writer advanced the new object first")
}

func TestStoreUpdate(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	cur, err := s.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)

	next := sample("worker-1")
	next.Version = cur.Version
	got, err := s.Update(ctx, next)
	require.NoError(t, err)
	assert.NotEqual(t, cur.Version, got.Version)
	next.Version = got.Version
	assert.Equal(t, next, got)
	assert.Equal(t, []string{fencekube.Finalizer}, api.stored("worker-1").Finalizers, "a status write keeps the metadata")

	// A write on the old version loses.
	stale := sample("worker-1")
	stale.Version = cur.Version
	stale.Message = "stale"
	_, err = s.Update(ctx, stale)
	assert.ErrorIs(t, err, controller.ErrConflict)
	now, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	assert.Equal(t, got, now, "nothing written")

	// Its own last write is told apart from the others' (a watch event
	// of it need not be looked at), and another Store's is not its own.
	assert.True(t, s.OwnWrite("worker-1", got.Version))
	assert.False(t, s.OwnWrite("worker-1", cur.Version), "an older write")
	assert.False(t, s.OwnWrite("worker-2", got.Version))
	assert.False(t, fencekube.NewStore(api, fencekube.StoreOptions{}).OwnWrite("worker-1", got.Version))

	// Gone.
	api.edit("worker-1", func(o *fencekube.NodeFence) { o.Finalizers = nil })
	require.NoError(t, api.Fake.Delete(ctx, api.stored("worker-1")))
	_, err = s.Update(ctx, now)
	assert.ErrorIs(t, err, controller.ErrNotFound)
	assert.False(t, s.OwnWrite("worker-1", got.Version), "forgotten with the object")
}

func TestStoreUpdateColdCache(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	a := fencekube.NewStore(api, fencekube.StoreOptions{})
	b := fencekube.NewStore(api, fencekube.StoreOptions{})
	cur, err := a.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)

	// b never read the object: it reads it again to learn spec.retry.
	next := cur.Clone()
	next.Message = "from b"
	got, err := b.Update(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, "from b", got.Message)

	// a's version is stale now; a reads again and finds it so.
	next = cur.Clone()
	next.Message = "from a"
	_, err = a.Update(ctx, next)
	assert.ErrorIs(t, err, controller.ErrConflict)
}

func TestStoreClear(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	_, err := s.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)

	// A user raises spec.retry.
	api.edit("worker-1", func(o *fencekube.NodeFence) { o.Spec.Retry = 2 })
	rec, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	assert.True(t, rec.Clear)

	// Handed back with Clear still set: observedRetry stays.
	rec.Message = "busy"
	rec, err = s.Update(ctx, rec)
	require.NoError(t, err)
	assert.True(t, rec.Clear)
	assert.Zero(t, api.stored("worker-1").Status.ObservedRetry)

	// Acted on: observedRetry catches up.
	rec.Clear = false
	rec, err = s.Update(ctx, rec)
	require.NoError(t, err)
	assert.False(t, rec.Clear)
	o := api.stored("worker-1")
	assert.Equal(t, int64(2), o.Status.ObservedRetry)
	assert.Equal(t, int64(2), o.Spec.Retry, "spec untouched")

	// Later writes keep it.
	rec.Message = "later"
	_, err = s.Update(ctx, rec)
	require.NoError(t, err)
	assert.Equal(t, int64(2), api.stored("worker-1").Status.ObservedRetry)
}

func TestStoreEncodeError(t *testing.T) {
	s := fencekube.NewStore(newFakeAPI(t), fencekube.StoreOptions{})
	bad := newRecord("worker-1")
	bad.Status = "Paused"
	_, err := s.Create(t.Context(), bad)
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpEncode, e.Op)
	assert.Equal(t, "status.status", e.Field)
	assert.Contains(t, err.Error(), `"Paused" is not a status`)

	_, err = s.Update(t.Context(), &flow.NodeFence{Step: fence.StepIsolation, Status: flow.StatusNew})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "Node", e.Field)

	ok := newRecord("worker-1")
	_, err = s.Update(t.Context(), ok)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "metadata.resourceVersion", e.Field, "an update needs the version read")
}

func TestStoreForgetDeleted(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	_, err := s.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)

	// A user deletes it: the finalizer holds it.
	require.NoError(t, api.Fake.Delete(ctx, api.stored("worker-1")))
	rec, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	assert.True(t, rec.Deleting)

	// A stale Forget removes nothing.
	stale := rec.Clone()
	stale.Version = "1"
	assert.ErrorIs(t, s.Forget(ctx, stale), controller.ErrConflict)
	require.NotNil(t, api.stored("worker-1"))

	require.NoError(t, s.Forget(ctx, rec))
	assert.Nil(t, api.stored("worker-1"), "the finalizer removed, the object is gone")
	assert.NoError(t, s.Forget(ctx, rec), "forgetting a record that is gone is not an error")
}

func TestStoreForgetKeepsOtherFinalizers(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	_, err := s.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)
	api.edit("worker-1", func(o *fencekube.NodeFence) { o.Finalizers = append(o.Finalizers, "example.com/keep") })
	require.NoError(t, api.Fake.Delete(ctx, api.stored("worker-1")))
	rec, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	require.NoError(t, s.Forget(ctx, rec))
	o := api.stored("worker-1")
	require.NotNil(t, o)
	assert.Equal(t, []string{"example.com/keep"}, o.Finalizers)
}

func TestStoreForgetNotDeleted(t *testing.T) {
	ctx := t.Context()
	api := newFakeAPI(t)
	s := fencekube.NewStore(api, fencekube.StoreOptions{})
	rec, err := s.Create(ctx, newRecord("worker-1"))
	require.NoError(t, err)
	api.clearCalls()
	require.NoError(t, s.Forget(ctx, rec))
	assert.Nil(t, api.stored("worker-1"))
	assert.Equal(t, []string{"get", "delete", "get", "patch"}, api.calls())
	require.Len(t, api.deletes(), 1)
	p := api.deletes()[0].Preconditions
	require.NotNil(t, p)
	assert.Equal(t, rec.Version, *p.ResourceVersion, "deleted only at the version read")
}

func TestStoreMalformed(t *testing.T) {
	ctx := t.Context()
	good := object(t, sample("worker-1"))
	bad := object(t, sample("worker-2"))
	bad.Spec.Node = "worker-3"
	api := newFakeAPI(t, good, bad)
	ev := &recEvents{}
	s := fencekube.NewStore(api, fencekube.StoreOptions{Events: ev})

	_, err := s.Get(ctx, "worker-2")
	assert.ErrorIs(t, err, fencekube.ErrMalformed)
	assert.Contains(t, err.Error(), `fencekube: NodeFence worker-2: decode spec.node: malformed NodeFence: "worker-3" is not the object's name "worker-2"`)

	recs, err := s.List(ctx)
	require.NoError(t, err, "one bad object does not stop the list")
	require.Len(t, recs, 1)
	assert.Equal(t, "worker-1", recs[0].Node)
	_, err = s.List(ctx)
	require.NoError(t, err)
	evs := ev.list()
	require.Len(t, evs, 1, "reported once per version")
	assert.Contains(t, evs[0], "worker-2 NodeFenceMalformed true: fencekube: NodeFence worker-2: decode spec.node")

	api.edit("worker-2", func(o *fencekube.NodeFence) { o.Status.Step = "bogus" })
	_, err = s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, ev.list(), 2, "a new version is reported again")
}

func TestStoreListPages(t *testing.T) {
	var objs []client.Object
	for i := 3; i >= 1; i-- {
		objs = append(objs, object(t, newRecord(fmt.Sprintf("worker-%d", i))))
	}
	api := newFakeAPI(t, objs...)
	s := fencekube.NewStore(api, fencekube.StoreOptions{PageSize: 2})
	recs, err := s.List(t.Context())
	require.NoError(t, err)
	require.Len(t, recs, 3)
	for i, r := range recs {
		assert.Equal(t, fmt.Sprintf("worker-%d", i+1), r.Node, "sorted by node")
	}
}

func TestStoreReadsFreshListsCached(t *testing.T) {
	ctx := t.Context()
	// The API server holds a newer version than the cache.
	rec := newRecord("worker-1")
	api := newFakeAPI(t)
	cached := newFakeAPI(t, object(t, rec))
	_, err := fencekube.NewStore(api, fencekube.StoreOptions{}).Create(ctx, rec)
	require.NoError(t, err)
	api.edit("worker-1", func(o *fencekube.NodeFence) { o.Status.Message = "fresh" })

	s := fencekube.NewStore(cached, fencekube.StoreOptions{Reader: api})
	got, err := s.Get(ctx, "worker-1")
	require.NoError(t, err)
	assert.Equal(t, "fresh", got.Message, "Get reads the API server")
	recs, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.NotEqual(t, "fresh", recs[0].Message, "List reads the cache")
	assert.Equal(t, []string{"list"}, cached.calls(), "in one call")

	// The records are copies.
	recs[0].Message = "changed by the caller"
	again, err := s.List(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, "changed by the caller", again[0].Message)
}

func TestStoreListError(t *testing.T) {
	api := newFakeAPI(t)
	api.fail["list"] = apierrors.NewForbidden(gr, "", errors.New("no"))
	_, err := fencekube.NewStore(api, fencekube.StoreOptions{}).List(t.Context())
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpList, e.Op)
	assert.True(t, apierrors.IsForbidden(err))
}
