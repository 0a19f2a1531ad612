package fencekube_test

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

var (
	gvr = fencekube.NodeFenceResource
	gr  = gvr.GroupResource()
)

// fakeAPI is a fake dynamic client whose NodeFences behave as the API
// server's do where the Store relies on it: resourceVersions bumped on
// every write and checked as preconditions, the status subresource (a
// create drops the status, a status update changes only the status, an
// update of the object keeps the status), finalizers holding a delete,
// and merge patches.
type fakeAPI struct {
	*dynamicfake.FakeDynamicClient
	t  *testing.T
	mu sync.Mutex
	rv int
	// fail, when set, is returned by the next write of verb (and
	// subresource, as "update/status") once.
	fail map[string]error
}

func newFakeAPI(t *testing.T, objs ...*unstructured.Unstructured) *fakeAPI {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "NodeFenceList"})
	f := &fakeAPI{FakeDynamicClient: client, t: t, rv: 100, fail: map[string]error{}}
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetResourceVersion() == "" {
			o.SetResourceVersion(f.nextRV())
		}
		require.NoError(t, client.Tracker().Add(o))
	}
	client.PrependReactor("*", "nodefences", f.react)
	return f
}

func (f *fakeAPI) nextRV() string {
	f.rv++
	return strconv.Itoa(f.rv)
}

func (f *fakeAPI) get(name string) (*unstructured.Unstructured, error) {
	o, err := f.Tracker().Get(gvr, "", name)
	if err != nil {
		return nil, err
	}
	return o.(*unstructured.Unstructured).DeepCopy(), nil
}

// stored returns the object as the fake holds it, nil when there is none.
func (f *fakeAPI) stored(name string) *unstructured.Unstructured {
	f.t.Helper()
	o, err := f.get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(f.t, err)
	return o
}

// edit changes the stored object as another client would, bumping its
// resourceVersion.
func (f *fakeAPI) edit(name string, change func(u *unstructured.Unstructured)) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.get(name)
	require.NoError(f.t, err)
	change(o)
	o.SetResourceVersion(f.nextRV())
	require.NoError(f.t, f.Tracker().Update(gvr, o, ""))
}

func (f *fakeAPI) react(a clienttesting.Action) (bool, runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := a.GetVerb()
	if a.GetSubresource() != "" {
		key += "/" + a.GetSubresource()
	}
	if err := f.fail[key]; err != nil {
		delete(f.fail, key)
		return true, nil, err
	}
	switch a.GetVerb() {
	case "create":
		a := a.(clienttesting.CreateAction)
		o := a.GetObject().(*unstructured.Unstructured).DeepCopy()
		if _, err := f.get(o.GetName()); err == nil {
			return true, nil, apierrors.NewAlreadyExists(gr, o.GetName())
		}
		delete(o.Object, "status")
		o.SetResourceVersion(f.nextRV())
		o.SetUID(types.UID("uid-" + o.GetName() + "-" + o.GetResourceVersion()))
		o.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)))
		if err := f.Tracker().Add(o); err != nil {
			return true, nil, err
		}
		return true, o.DeepCopy(), nil
	case "update":
		a := a.(clienttesting.UpdateAction)
		o := a.GetObject().(*unstructured.Unstructured).DeepCopy()
		old, err := f.get(o.GetName())
		if err != nil {
			return true, nil, err
		}
		if o.GetResourceVersion() != old.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gr, o.GetName(), errStale)
		}
		next := old
		if a.GetSubresource() == "status" {
			next.Object["status"] = o.Object["status"]
		} else {
			o.Object["status"] = old.Object["status"]
			next = o
		}
		return f.write(next)
	case "patch":
		a := a.(clienttesting.PatchAction)
		if a.GetPatchType() != types.MergePatchType || a.GetSubresource() != "" {
			f.t.Errorf("unexpected patch %s of %s", a.GetPatchType(), a.GetSubresource())
			return true, nil, apierrors.NewBadRequest("unexpected patch")
		}
		old, err := f.get(a.GetName())
		if err != nil {
			return true, nil, err
		}
		var patch map[string]any
		if err := json.Unmarshal(a.GetPatch(), &patch); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		if m, ok := patch["metadata"].(map[string]any); ok {
			if rv, ok := m["resourceVersion"].(string); ok && rv != old.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(gr, a.GetName(), errStale)
			}
		}
		next := &unstructured.Unstructured{Object: mergePatch(old.Object, patch).(map[string]any)}
		return f.write(next)
	case "delete":
		a := a.(clienttesting.DeleteAction)
		old, err := f.get(a.GetName())
		if err != nil {
			return true, nil, err
		}
		if p := a.GetDeleteOptions().Preconditions; p != nil {
			if p.ResourceVersion != nil && *p.ResourceVersion != old.GetResourceVersion() ||
				p.UID != nil && *p.UID != old.GetUID() {
				return true, nil, apierrors.NewConflict(gr, a.GetName(), errStale)
			}
		}
		if len(old.GetFinalizers()) == 0 {
			return true, nil, f.Tracker().Delete(gvr, "", a.GetName())
		}
		if old.GetDeletionTimestamp() == nil {
			ts := metav1.NewTime(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC))
			old.SetDeletionTimestamp(&ts)
			_, _, err := f.write(old)
			return true, nil, err
		}
		return true, nil, nil
	}
	return false, nil, nil // get, list, watch: the tracker's
}

var errStale = &staleError{}

type staleError struct{}

func (*staleError) Error() string { return "the object has been modified" }

// write stores next with a new resourceVersion; an object being deleted
// whose last finalizer is gone is deleted.
func (f *fakeAPI) write(next *unstructured.Unstructured) (bool, runtime.Object, error) {
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 {
		return true, next, f.Tracker().Delete(gvr, "", next.GetName())
	}
	next.SetResourceVersion(f.nextRV())
	if err := f.Tracker().Update(gvr, next, ""); err != nil {
		return true, nil, err
	}
	return true, next.DeepCopy(), nil
}

// mergePatch applies a JSON merge patch (RFC 7386).
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// object returns a well-formed NodeFence object of node in the dynamic
// client's form.
func object(t testing.TB, nf *flow.NodeFence) *unstructured.Unstructured {
	t.Helper()
	u, err := fencekube.ToUnstructured(fencekube.FromRecord(nf))
	require.NoError(t, err)
	return u
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
