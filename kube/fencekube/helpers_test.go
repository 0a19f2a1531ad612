package fencekube_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

var (
	gvr = fencekube.NodeFenceResource
	gr  = gvr.GroupResource()
)

// fakeAPI is controller-runtime's fake client with fencekit's API and
// NodeFence's status subresource, which counts the Store's calls and
// fails the next call of a verb when asked to.
type fakeAPI struct {
	client.WithWatch
	inner client.WithWatch
	t     *testing.T
	mu    sync.Mutex
	// fail, when set, is returned by the next call of verb (and
	// subresource, as "update/status") once.
	fail map[string]error
	// verbs are the calls made, in order; deletes, their options.
	verbs   []string
	deletes []client.DeleteOptions
}

func newFakeAPI(t *testing.T, objs ...*fencekube.NodeFence) *fakeAPI {
	s := runtime.NewScheme()
	require.NoError(t, fencekube.AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&fencekube.NodeFence{})
	for _, o := range objs {
		b = b.WithObjects(o.DeepCopy())
	}
	f := &fakeAPI{inner: b.Build(), t: t, fail: map[string]error{}}
	f.WithWatch = interceptor.NewClient(f.inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return f.call("get", func() error { return c.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			return f.call("list", func() error { return c.List(ctx, l, opts...) })
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return f.call("create", func() error { return c.Create(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			f.mu.Lock()
			var o client.DeleteOptions
			f.deletes = append(f.deletes, *o.ApplyOptions(opts))
			f.mu.Unlock()
			return f.call("delete", func() error { return c.Delete(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return f.call("patch", func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return f.call("update/"+sub, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
	})
	return f
}

// call records verb and makes the call, unless verb is to fail.
func (f *fakeAPI) call(verb string, do func() error) error {
	f.mu.Lock()
	f.verbs = append(f.verbs, verb)
	err := f.fail[verb]
	delete(f.fail, verb)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return do()
}

// calls returns the verbs called since the last clearCalls.
func (f *fakeAPI) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.verbs)
}

func (f *fakeAPI) clearCalls() {
	f.mu.Lock()
	f.verbs, f.deletes = nil, nil
	f.mu.Unlock()
}

// stored returns the object as the fake holds it, nil when there is none.
func (f *fakeAPI) stored(name string) *fencekube.NodeFence {
	f.t.Helper()
	o := &fencekube.NodeFence{}
	err := f.inner.Get(context.Background(), client.ObjectKey{Name: name}, o)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(f.t, err)
	return o
}

// edit changes the stored object as another client would (spec and
// metadata, then status), bumping its resourceVersion.
func (f *fakeAPI) edit(name string, change func(o *fencekube.NodeFence)) {
	f.t.Helper()
	o := f.stored(name)
	require.NotNil(f.t, o)
	change(o)
	status := o.Status
	require.NoError(f.t, f.inner.Update(context.Background(), o))
	o.Status = status
	require.NoError(f.t, f.inner.Status().Update(context.Background(), o))
}

// object returns a well-formed NodeFence object of node.
func object(t testing.TB, nf *flow.NodeFence) *fencekube.NodeFence {
	t.Helper()
	return fencekube.FromRecord(nf)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sample returns a record that uses every field.
func sample(node string) *flow.NodeFence {
	return &flow.NodeFence{
		Node: node, Step: fence.StepPowerManagement, Status: flow.StatusRunning, Retries: 1, Polls: 2,
		Jobs: []flow.Job{
			{Step: fence.StepPowerManagement, Level: 0, Index: 0, Method: "pdu-off", Owner: "c1",
				Action: fence.ActionReboot, Phase: fence.ActionOff,
				Started: t0.Add(time.Second), Finished: t0.Add(2 * time.Second), OK: true, OffConfirmed: true,
				State: fence.StateOff},
			{Step: fence.StepPowerManagement, Level: 0, Index: 1, Method: "pdu-on", Owner: "c1",
				Action: fence.ActionOn, Phase: fence.ActionOn,
				Started: t0.Add(3*time.Second + 123456*time.Microsecond)},
			{Step: fence.StepPowerManagement, Level: 1, Index: 0, Method: "bmc", Owner: "c2",
				Started: t0, Finished: t0, BestEffort: true, Already: true, Unknown: true, State: fence.StateOn,
				Error: "fence: outcome unknown"},
		},
		Isolated: true, PoweredOff: true, Released: flow.ReleaseStorage, Releasing: flow.ReleasePower,
		Restoring: true, FencedAt: t0.Add(2 * time.Second), PodsWaitSince: t0.Add(3 * time.Second),
		OnError: "pdu-on: refused", FoundOn: "pdu-off read the node on at 2026-03-01T12:01:00Z", OffCheckedAt: t0.Add(time.Minute),
		Created: t0.Add(-time.Hour), StepStarted: t0, Changed: t0.Add(time.Second), LastPoll: t0.Add(time.Minute),
		Message: "running power_management level 1",
		History: []flow.Transition{
			{Time: t0.Add(-time.Hour), Step: fence.StepIsolation, Status: flow.StatusNew, Message: "fencing starts"},
			{Time: t0, Step: fence.StepPowerManagement, Status: flow.StatusRunning},
		},
	}
}
