package rebootkube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/rebootkube"
	"github.com/fencekit/fencekit/reboot"
)

// fakeHost returns a fake client holding h, and a Reconciler of it
// powering through a fake BMC in state initial.
func fakeHost(t *testing.T, h host, initial fence.State) (*fakeHosts, *fake.Device, *rebootkube.Reconciler) {
	t.Helper()
	client := newFakeHosts(h.full())
	dev, m := bmc(initial)
	return client, dev, reconciler(rebootkube.NewMetal3(client), m)
}

// stored reads the object as the fake client holds it.
func stored(t *testing.T, client *fakeHosts, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(rebootkube.BareMetalHostKind)
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: ns, Name: name}, obj))
	return obj
}

// update changes the object in the fake client's store, as another client
// would.
func update(t *testing.T, client *fakeHosts, ns, name string, f func(obj *unstructured.Unstructured)) {
	t.Helper()
	obj := stored(t, client, ns, name)
	f(obj)
	require.NoError(t, client.Fake.Update(t.Context(), obj))
}

func assertPatch(t *testing.T, want patch, got patch) {
	t.Helper()
	assert.Equal(t, want.Type, got.Type)
	assert.Equal(t, want.Subresource, got.Subresource)
	assert.JSONEq(t, want.Body, got.Body)
}

func annotations(t *testing.T, client *fakeHosts, ns, name string) map[string]string {
	return stored(t, client, ns, name).GetAnnotations()
}

func statusString(t *testing.T, obj *unstructured.Unstructured, path ...string) string {
	t.Helper()
	s, _, err := unstructured.NestedString(obj.Object, append([]string{"status"}, path...)...)
	require.NoError(t, err)
	return s
}

// Each step of a plain (soft) reboot, with the patches it sends: the
// pendingRebootSince write with a resourceVersion precondition through the
// status subresource, the soft power off, the test-then-remove of the
// annotation, the check before the power on, and the record of the power
// on.
func TestFakePlainRebootStepByStep(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: "", "example.com/owner": "team-a"}}
	client, dev, r := fakeHost(t, h, fence.StateOn)
	ctx := t.Context()

	// 1: note the request, power off (soft).
	d, err := r.Reconcile(ctx, "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonRebootRequested, d.Reason)
	assert.Equal(t, reboot.Soft, d.Mode)
	assert.Equal(t, []string{"get", "patch/status", "patch/status"}, verbs(client))
	ps := patches(client)
	require.Len(t, ps, 2)
	assertPatch(t, patch{types.MergePatchType, "status",
		`{"metadata":{"resourceVersion":"1"},"status":{"provisioning":{"pendingRebootSince":"2024-05-01T12:00:01Z"}}}`}, ps[0])
	assertPatch(t, patch{types.MergePatchType, "status", `{"status":{"poweredOn":false}}`}, ps[1])
	assert.Equal(t, [2]int{1, 0}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)}, "soft off, no hard off")
	assert.Equal(t, fence.StateOff, dev.Truth(""))

	// 2: the host is off: remove the plain annotation, nothing else.
	d, err = r.Reconcile(ctx, "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonRemovePlain, d.Reason)
	ps = patches(client)
	require.Len(t, ps, 1)
	assertPatch(t, patch{types.JSONPatchType, "", `[
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io","value":""},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io"}]`}, ps[0])
	assert.Equal(t, map[string]string{"example.com/owner": "team-a"}, annotations(t, client, "metal3", "host-0"))

	// 3: read again, power on, record it.
	d, err = r.Reconcile(ctx, "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonRebootDone, d.Reason)
	assert.Equal(t, []string{"get", "get", "patch/status"}, verbs(client))
	ps = patches(client)
	require.Len(t, ps, 1)
	assertPatch(t, patch{types.MergePatchType, "status",
		`{"status":{"poweredOn":true,"provisioning":{"lastPoweredOn":"2024-05-01T12:00:03Z"}}}`}, ps[0])
	assert.Equal(t, fence.StateOn, dev.Truth(""))

	// 4: settled.
	d, err = r.Reconcile(ctx, "metal3", "host-0")
	require.NoError(t, err)
	assert.True(t, d.Nothing(), d.String())
	assert.Empty(t, patches(client))
	obj := stored(t, client, "metal3", "host-0")
	assert.Equal(t, "2024-05-01T12:00:01Z", statusString(t, obj, "provisioning", "pendingRebootSince"))
	assert.Equal(t, "2024-05-01T12:00:03Z", statusString(t, obj, "provisioning", "lastPoweredOn"))
}

// A concurrent change of the very annotation being removed makes the
// removal fail as a whole (a retryable conflict), and nothing is lost.
func TestFakeConcurrentChangeOfRemovedAnnotationConflicts(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending:     "2024-05-01T11:00:00Z",
		annotations: map[string]string{reboot.Annotation: `{"mode":"soft"}`, "example.com/owner": "team-a"}}
	client, dev, r := fakeHost(t, h, fence.StateOff)
	once := true
	client.beforePatch = func(p patch) error {
		if once && p.Type == types.JSONPatchType {
			once = false
			update(t, client, "metal3", "host-0", func(obj *unstructured.Unstructured) {
				ann := obj.GetAnnotations()
				ann[reboot.Annotation] = `{"mode":"hard"}`
				obj.SetAnnotations(ann)
			})
		}
		return nil
	}

	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.Error(t, err)
	assert.Equal(t, reboot.ReasonRemovePlain, d.Reason)
	assert.ErrorIs(t, err, rebootkube.ErrConflict)
	var e *rebootkube.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, rebootkube.OpRemoveAnnotations, e.Op)
	assert.Equal(t, "metadata.annotations[reboot.metal3.io]", e.Field)
	assert.Contains(t, err.Error(), "rebootkube: metal3/host-0: remove-annotations metadata.annotations[reboot.metal3.io]: ")
	assert.NotContains(t, err.Error(), "hard", "annotation values stay out of errors")
	assert.Equal(t, map[string]string{reboot.Annotation: `{"mode":"hard"}`, "example.com/owner": "team-a"},
		annotations(t, client, "metal3", "host-0"), "nothing removed, nothing clobbered")
	assert.Zero(t, dev.Calls(fake.OpSet), "no power operation after a conflict")

	// Reconciling again serves the request as it now is.
	assert.Equal(t, []string{reboot.ReasonRemovePlain, reboot.ReasonRebootDone}, settle(t, r, "metal3", "host-0"))
	assert.Equal(t, map[string]string{"example.com/owner": "team-a"}, annotations(t, client, "metal3", "host-0"))
	assert.Equal(t, fence.StateOn, dev.Truth(""))
}

// An annotation another client adds between the read and the removal
// survives it, and does not make it fail.
func TestFakeAnnotationAddedMeanwhileSurvives(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z", annotations: map[string]string{reboot.Annotation: ""}}
	client, _, r := fakeHost(t, h, fence.StateOff)
	once := true
	client.beforePatch = func(p patch) error {
		if once && p.Type == types.JSONPatchType {
			once = false
			update(t, client, "metal3", "host-0", func(obj *unstructured.Unstructured) {
				ann := obj.GetAnnotations()
				ann["example.com/new"] = "added meanwhile"
				obj.SetAnnotations(ann)
			})
		}
		return nil
	}
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, []string{reboot.Annotation}, d.RemoveAnnotations)
	assert.Equal(t, map[string]string{"example.com/new": "added meanwhile"}, annotations(t, client, "metal3", "host-0"))
}

// A conflict on the pendingRebootSince write (the object changed since it
// was read) stops the reconcile before any power operation.
func TestFakePendingWriteConflictStopsBeforePower(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.KeyedAnnotation("a"): ""}}
	client, dev, r := fakeHost(t, h, fence.StateOn)
	// The server refuses the write's precondition, as when another client
	// wrote the object since it was read (controller-runtime's fake client
	// does not check a status patch's resourceVersion).
	client.beforePatch = func(p patch) error {
		if strings.Contains(p.Body, `"resourceVersion":"1"`) {
			return apierrors.NewConflict(schema.GroupResource{Group: "metal3.io", Resource: "baremetalhosts"}, "host-0", errors.New("the object has been modified"))
		}
		return nil
	}
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	assert.True(t, d.SetPendingRebootSince && d.PowerOff)
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	assert.True(t, apierrors.IsConflict(err), "the API error is still there")
	var e *rebootkube.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "status.provisioning.pendingRebootSince", e.Field)
	assert.Equal(t, rebootkube.OpWriteStatus, e.Op)
	assert.Zero(t, dev.Calls(fake.OpSoftOff)+dev.Calls(fake.OpSet))
	assert.Equal(t, fence.StateOn, dev.Truth(""))
}

// The host is not powered on when the object changed between the decision
// and the power on: a keyed annotation added meanwhile holds it off.
func TestFakeKeyedAnnotationAddedBeforePowerOnHoldsTheHost(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z"}
	client, dev, r := fakeHost(t, h, fence.StateOff)
	client.beforeGet = func(n int) {
		if n == 2 {
			update(t, client, "metal3", "host-0", func(obj *unstructured.Unstructured) {
				obj.SetAnnotations(map[string]string{reboot.KeyedAnnotation("late"): ""})
			})
		}
	}
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	assert.True(t, d.PowerOn)
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	var e *rebootkube.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, rebootkube.OpCheck, e.Op)
	assert.Zero(t, dev.Calls(fake.OpSet))

	d, err = r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.True(t, d.HeldOff)
	assert.Equal(t, fence.StateOff, dev.Truth(""))
}

// "the soft mode uses the graceful-off capability and falls back to hard
// after a timeout"
func TestFakeSoftOffFallsBackToHardAfterTimeout(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}}
	_, dev, r := fakeHost(t, h, fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore})
	r.SoftTimeout = 30 * time.Millisecond
	start := time.Now()
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.Soft, d.Mode)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	assert.Equal(t, [2]int{1, 1}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
	assert.Equal(t, fence.StateOff, dev.Truth(""))
}

func TestFakeHardRequestSkipsTheGracefulOff(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.KeyedAnnotation("a"): "", reboot.KeyedAnnotation("b"): `{"mode":"hard"}`}}
	_, dev, r := fakeHost(t, h, fence.StateOn)
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.Hard, d.Mode)
	assert.Equal(t, [2]int{0, 1}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
}

// A failed power operation is marked in the status; the next power off is
// hard, and a verified one clears the mark.
func TestFakePowerFailureIsMarkedAndTheNextOffIsHard(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}}
	client, dev, r := fakeHost(t, h, fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})
	dev.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})

	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	assert.True(t, d.PowerOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	var e *rebootkube.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, rebootkube.OpPower, e.Op)
	assert.Contains(t, err.Error(), "rebootkube: metal3/host-0: power: fence")
	obj := stored(t, client, "metal3", "host-0")
	assert.Equal(t, rebootkube.Metal3PowerErrorType, statusString(t, obj, "errorType"))
	assert.Contains(t, statusString(t, obj, "errorMessage"), "fence")
	assert.NotEmpty(t, statusString(t, obj, "provisioning", "pendingRebootSince"), "written before the power operation")
	on, _, _ := unstructured.NestedBool(obj.Object, "status", "poweredOn")
	assert.True(t, on, "the record is not changed by a failed operation")

	dev.ClearFaults()
	dev.ResetCalls()
	d, err = r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.Hard, d.Mode)
	assert.Equal(t, reboot.ModePowerFailed, d.ModeSource)
	assert.Equal(t, [2]int{0, 1}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
	obj = stored(t, client, "metal3", "host-0")
	_, has, _ := unstructured.NestedString(obj.Object, "status", "errorType")
	assert.False(t, has, "mark cleared")
	_, has, _ = unstructured.NestedString(obj.Object, "status", "errorMessage")
	assert.False(t, has)
}

// Another kind of error in the same field is neither taken for a power
// failure nor cleared.
func TestFakeOtherErrorTypeIsLeftAlone(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}, errorType: "provisioning error"}
	client, _, r := fakeHost(t, h, fence.StateOn)
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.Soft, d.Mode)
	assert.Equal(t, "provisioning error", statusString(t, stored(t, client, "metal3", "host-0"), "errorType"))
}

// A device that cannot be read counts as on: the request is noted and a
// power off tried (and marked failed), but the plain annotation is not
// taken as served, whatever the status record says.
func TestFakeUnreadableDeviceCountsAsOn(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		annotations: map[string]string{reboot.Annotation: ""}}
	client, dev, r := fakeHost(t, h, fence.StateOn)
	dev.Inject(fake.Fault{Kind: fake.Down})
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.Equal(t, reboot.ReasonRebootRequested, d.Reason)
	assert.Empty(t, d.RemoveAnnotations)
	obj := stored(t, client, "metal3", "host-0")
	assert.Contains(t, obj.GetAnnotations(), reboot.Annotation)
	assert.Equal(t, rebootkube.Metal3PowerErrorType, statusString(t, obj, "errorType"))

	// Once the device answers, the reboot goes on, hard.
	dev.ClearFaults()
	dev.ResetCalls()
	assert.Equal(t, []string{reboot.ReasonRebootPowerOff, reboot.ReasonRemovePlain, reboot.ReasonRebootDone},
		settle(t, r, "metal3", "host-0"))
	assert.Equal(t, [2]int{0, 2}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)}, "hard off, then on")
	assert.Equal(t, fence.StateOn, dev.Truth(""))
}

// The status record follows the device, which is the truth.
func TestFakeStatusRecordFollowsTheDevice(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: false, state: "provisioned", poweredOn: ptr(true)}
	client, dev, r := fakeHost(t, h, fence.StateOff)
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.True(t, d.Nothing())
	assert.Zero(t, dev.Calls(fake.OpSet))
	ps := patches(client)
	require.Len(t, ps, 1)
	assertPatch(t, patch{types.MergePatchType, "status", `{"status":{"poweredOn":false}}`}, ps[0])

	_, err = r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Empty(t, patches(client), "nothing to record any more")
}

// "The controller automatically removes all annotations with the
// reboot.metal3.io prefix if the Host is deprovisioned", and only those.
func TestFakeDeprovisioningRemovesEveryRebootAnnotation(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "deprovisioning", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z",
		annotations: map[string]string{reboot.Annotation: "", reboot.KeyedAnnotation("a"): "uid-1",
			reboot.KeyedAnnotation("b"): `{"mode":"hard"}`, "example.com/keep": "k"}}
	client, dev, r := fakeHost(t, h, fence.StateOff)
	d, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonDeprovisioning, d.Reason)
	ps := patches(client)
	require.Len(t, ps, 2)
	assertPatch(t, patch{types.JSONPatchType, "", `[
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io","value":""},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io"},
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io~1a","value":"uid-1"},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io~1a"},
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io~1b","value":"{\"mode\":\"hard\"}"},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io~1b"}]`}, ps[0])
	// The precondition is the version the removal wrote.
	assertPatch(t, patch{types.MergePatchType, "status",
		`{"metadata":{"resourceVersion":"2"},"status":{"provisioning":{"pendingRebootSince":null}}}`}, ps[1])
	assert.Equal(t, map[string]string{"example.com/keep": "k"}, annotations(t, client, "metal3", "host-0"))
	assert.Zero(t, dev.Calls(fake.OpSet)+dev.Calls(fake.OpSoftOff), "the deprovisioning owns the power")
}

// Two keyed clients hold the host off until both have removed their
// annotations.
func TestFakeKeyedClientsHoldTheHostOff(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.KeyedAnnotation("a"): "", reboot.KeyedAnnotation("b"): ""}}
	client, dev, r := fakeHost(t, h, fence.StateOn)
	assert.Equal(t, []string{reboot.ReasonRebootRequested}, settleHeld(t, r))
	for _, k := range []string{"a", "b"} {
		assert.Equal(t, fence.StateOff, dev.Truth(""))
		update(t, client, "metal3", "host-0", func(obj *unstructured.Unstructured) {
			ann := obj.GetAnnotations()
			delete(ann, reboot.KeyedAnnotation(k))
			obj.SetAnnotations(ann)
		})
		settleHeld(t, r)
	}
	assert.Equal(t, fence.StateOn, dev.Truth(""))
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, dev.History(""))
}

// settleHeld reconciles the fake host until it settles or is held off.
func settleHeld(t *testing.T, r *rebootkube.Reconciler) []string {
	t.Helper()
	var reasons []string
	for range 10 {
		d, err := r.Reconcile(t.Context(), "metal3", "host-0")
		require.NoError(t, err)
		if d.Nothing() {
			return reasons
		}
		reasons = append(reasons, d.Reason)
	}
	t.Fatal("did not settle")
	return nil
}

func TestFakeHostNotFound(t *testing.T) {
	client := newFakeHosts()
	_, m := bmc(fence.StateOn)
	r := reconciler(rebootkube.NewMetal3(client), m)
	_, err := r.Reconcile(t.Context(), "metal3", "gone")
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err))
	assert.Contains(t, err.Error(), "rebootkube: metal3/gone: get: ")
}

func TestFakeMethodErrorIsReported(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true)}
	_, _, r := fakeHost(t, h, fence.StateOn)
	r.Method = func(context.Context, *rebootkube.Host) (*fence.Method, error) {
		return nil, errors.New("no BMC address")
	}
	_, err := r.Reconcile(t.Context(), "metal3", "host-0")
	assert.EqualError(t, err, "rebootkube: metal3/host-0: method: no BMC address")
	r.Method = func(context.Context, *rebootkube.Host) (*fence.Method, error) { return nil, nil }
	_, err = r.Reconcile(t.Context(), "metal3", "host-0")
	assert.EqualError(t, err, "rebootkube: metal3/host-0: method: no fence method")
}

// The method gets the host as read, to find its BMC.
func TestFakeMethodSeesTheHost(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true)}
	_, _, r := fakeHost(t, h, fence.StateOn)
	m := method(fake.New(fake.Options{Plugs: []string{""}}))
	var seen *rebootkube.Host
	r.Method = func(_ context.Context, h *rebootkube.Host) (*fence.Method, error) { seen = h; return m, nil }
	_, err := r.Reconcile(t.Context(), "metal3", "host-0")
	require.NoError(t, err)
	require.NotNil(t, seen)
	assert.Equal(t, "host-0", seen.Object.GetName())
	online, _, _ := unstructured.NestedBool(seen.Object.Object, "spec", "online")
	assert.True(t, online)
}

// The Typed store, with a user's Go type, carries a whole reboot out.
func TestFakeTypedStore(t *testing.T) {
	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: `{"mode":"hard"}`}}
	client := newFakeHosts(h.full())
	dev, m := bmc(fence.StateOn)
	typed := &rebootkube.Typed[*BareMetalHost]{
		Client: func(ns string) rebootkube.TypedClient[*BareMetalHost] {
			return typedHosts{client, ns}
		},
		Mapping:           rebootkube.Metal3Mapping(),
		StatusSubresource: true,
	}
	r := reconciler(typed, m)
	assert.Equal(t, []string{reboot.ReasonRebootRequested, reboot.ReasonRemovePlain, reboot.ReasonRebootDone},
		settle(t, r, "metal3", "host-0"))
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, dev.History(""))
	got, err := typedHosts{client, "metal3"}.Get(t.Context(), "host-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Annotations)
	assert.True(t, got.Status.PoweredOn)
	require.NotNil(t, got.Status.Provisioning.LastPoweredOn)
	assert.True(t, got.Status.Provisioning.LastPoweredOn.After(got.Status.Provisioning.PendingRebootSince.Time))
}

func TestFakeInvalidMappingIsReported(t *testing.T) {
	h := host{ns: "metal3", name: "host-0"}
	client := newFakeHosts(h.full())
	_, m := bmc(fence.StateOn)
	store := rebootkube.NewMetal3(client)
	store.Mapping.PendingRebootSince = nil
	_, err := reconciler(store, m).Reconcile(t.Context(), "metal3", "host-0")
	assert.ErrorContains(t, err, "PendingRebootSince is required")
}

// Errors, and the power failure message written to the status, never hold
// the device's credentials.
func TestFakeErrorsHoldNoCredentials(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	defer fake.Forget("bmc-cred")
	p := fence.NewParams("address", "fake://bmc-cred", "username", "admin", "password", secret, "plug", "1",
		"plugs", "1", "power_timeout", "1", "stonith_status_sleep", "0.001")
	m, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "host-0", Name: "bmc", Params: p})
	require.NoError(t, err)
	fake.Named("bmc-cred").Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
	fake.Named("bmc-cred").Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})

	h := host{ns: "metal3", name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}}
	client := newFakeHosts(h.full())
	r := reconciler(rebootkube.NewMetal3(client), m)
	_, err = r.Reconcile(t.Context(), "metal3", "host-0")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	msg := statusString(t, stored(t, client, "metal3", "host-0"), "errorMessage")
	assert.NotEmpty(t, msg)
	assert.NotContains(t, msg, secret)
	t.Logf("error: %v", err)
}
