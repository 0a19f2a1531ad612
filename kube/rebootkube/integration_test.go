package rebootkube_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/rebootkube"
	"github.com/fencekit/fencekit/reboot"
)

// kube is one integration test's view of the shared API server: its
// namespace, the BareMetalHost CRD installed.
type kube struct {
	t  *testing.T
	c  *kubetest.Cluster
	ns string
}

func newKube(t *testing.T) *kube {
	c := kubetest.Shared(t)
	c.InstallCRD(t, "testdata/baremetalhost-crd.yaml")
	return &kube{t: t, c: c, ns: c.Namespace(t)}
}

// gvr is the BareMetalHosts' resource, for the test's own dynamic client.
var gvr = schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}

func (k *kube) hosts() dynamic.ResourceInterface {
	return k.c.Dynamic().Resource(gvr).Namespace(k.ns)
}

// create creates the host (in k's namespace) and writes its status.
func (k *kube) create(h host) {
	k.t.Helper()
	h.ns = k.ns
	obj, status := h.object()
	_, err := k.hosts().Create(k.t.Context(), obj, metav1.CreateOptions{})
	require.NoError(k.t, err)
	data, err := json.Marshal(map[string]any{"status": status})
	require.NoError(k.t, err)
	_, err = k.hosts().Patch(k.t.Context(), h.name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	require.NoError(k.t, err)
}

func (k *kube) get(name string) *unstructured.Unstructured {
	k.t.Helper()
	obj, err := k.hosts().Get(k.t.Context(), name, metav1.GetOptions{})
	require.NoError(k.t, err)
	return obj
}

// annotate sets (value non-nil) or removes (nil) one annotation, as
// another client would, with a merge patch.
func (k *kube) annotate(name, key string, value *string) {
	k.t.Helper()
	var v any
	if value != nil {
		v = *value
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	require.NoError(k.t, err)
	_, err = k.hosts().Patch(context.Background(), name, types.MergePatchType, data, metav1.PatchOptions{})
	require.NoError(k.t, err)
}

// setState changes the provisioning state, as the provisioner would.
func (k *kube) setState(name, state string) {
	k.t.Helper()
	data, err := json.Marshal(map[string]any{"status": map[string]any{"provisioning": map[string]any{"state": state}}})
	require.NoError(k.t, err)
	_, err = k.hosts().Patch(k.t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	require.NoError(k.t, err)
}

// reconciler returns a Reconciler of the BareMetalHosts of k's namespace
// (through a hookStore), and its host's BMC: a fake device guarded against
// a power on while the host has a keyed reboot annotation.
func (k *kube) reconciler(name string, initial fence.State) (*rebootkube.Reconciler, *hookStore, *guardDevice) {
	hs := &hookStore{Store: rebootkube.NewMetal3(k.c.Objects())}
	dev := &guardDevice{Device: fake.New(fake.Options{Plugs: []string{""}, Initial: initial}), check: noKeyedAnnotation(k.c.Objects(), k.ns, name)}
	k.t.Cleanup(func() { assert.Empty(k.t, dev.Violations(), "powered on while a keyed annotation existed") })
	return reconciler(hs, method(dev)), hs, dev
}

func statusTime(t *testing.T, obj *unstructured.Unstructured, field string) time.Time {
	t.Helper()
	s, _, err := unstructured.NestedString(obj.Object, "status", "provisioning", field)
	require.NoError(t, err)
	if s == "" {
		return time.Time{}
	}
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

// assertRebooted checks the status of a host whose reboot is done.
func assertRebooted(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	pending, last := statusTime(t, obj, "pendingRebootSince"), statusTime(t, obj, "lastPoweredOn")
	assert.False(t, pending.IsZero(), "pendingRebootSince recorded")
	assert.False(t, pending.After(last), "no reboot pending: lastPoweredOn %v, pendingRebootSince %v", last, pending)
	on, found, _ := unstructured.NestedBool(obj.Object, "status", "poweredOn")
	assert.True(t, found && on, "poweredOn recorded")
	for k := range obj.GetAnnotations() {
		assert.False(t, reboot.IsAnnotation(k), "reboot annotation %s left", k)
	}
}

// "The basic annotation form (reboot.metal3.io) triggers the controller to
// power cycle the Host ... and the controller removes the annotation once
// it restores power", soft by default: here the graceful off is refused,
// so the host is switched off hard.
func TestIntegrationPlainSoftRebootFallsBackToHard(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: "", "example.com/owner": "team-a"}})
	r, _, dev := k.reconciler("host-0", fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})

	assert.Equal(t, []string{reboot.ReasonRebootRequested, reboot.ReasonRemovePlain, reboot.ReasonRebootDone},
		settle(t, r, k.ns, "host-0"))
	assert.Equal(t, 1, dev.Calls(fake.OpSoftOff), "soft first")
	assert.Equal(t, 2, dev.Calls(fake.OpSet), "then hard off, and on")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, dev.History(""))
	obj := k.get("host-0")
	assertRebooted(t, obj)
	assert.Equal(t, map[string]string{"example.com/owner": "team-a"}, obj.GetAnnotations())
	_, has, _ := unstructured.NestedString(obj.Object, "status", "errorType")
	assert.False(t, has)
}

// "In the case of multiple clients, the controller will wait for all
// annotations of the form reboot.metal3.io/{key} to be removed before
// powering on the Host", and "a hard shutdown request takes priority".
func TestIntegrationTwoKeyedClientsHoldTheHostOff(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.KeyedAnnotation("remediation"): "machine-uid-1",
			reboot.KeyedAnnotation("storage"): `{"mode":"hard"}`}})
	r, _, dev := k.reconciler("host-0", fence.StateOn)

	d, err := r.Reconcile(t.Context(), k.ns, "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonRebootRequested, d.Reason)
	assert.Equal(t, reboot.Hard, d.Mode)
	assert.Zero(t, dev.Calls(fake.OpSoftOff), "a hard request from any client wins")

	for _, key := range []string{"remediation", "storage"} {
		for range 3 {
			d, err = r.Reconcile(t.Context(), k.ns, "host-0")
			require.NoError(t, err)
			assert.True(t, d.HeldOff, d.String())
			assert.True(t, d.Nothing())
		}
		assert.Equal(t, fence.StateOff, dev.Truth(""))
		k.annotate("host-0", reboot.KeyedAnnotation(key), nil) // the client is done
	}
	assert.Equal(t, []string{reboot.ReasonRebootDone}, settle(t, r, k.ns, "host-0"))
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, dev.History(""))
	assertRebooted(t, k.get("host-0"))
}

// A client adding an unrelated annotation between the read and the removal
// of the plain annotation: the removal succeeds and the new annotation
// survives.
func TestIntegrationConcurrentUnrelatedAnnotationSurvives(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z", lastOn: "2024-05-01T10:00:00Z",
		annotations: map[string]string{reboot.Annotation: `{"mode":"hard"}`}})
	r, hs, dev := k.reconciler("host-0", fence.StateOff)
	hs.beforeRemove = func() { k.annotate("host-0", "example.com/new", ptr("added meanwhile")) }

	d, err := r.Reconcile(t.Context(), k.ns, "host-0")
	require.NoError(t, err)
	assert.Equal(t, reboot.ReasonRemovePlain, d.Reason)
	assert.Equal(t, map[string]string{"example.com/new": "added meanwhile"}, k.get("host-0").GetAnnotations())

	assert.Equal(t, []string{reboot.ReasonRebootDone}, settle(t, r, k.ns, "host-0"))
	assert.Equal(t, fence.StateOn, dev.Truth(""))
	obj := k.get("host-0")
	assertRebooted(t, obj)
	assert.Equal(t, map[string]string{"example.com/new": "added meanwhile"}, obj.GetAnnotations())
}

// A client changing the very annotation being removed, between the read
// and the removal: the removal conflicts and removes nothing, and the new
// value is there for the next decision.
func TestIntegrationConcurrentChangeOfRemovedAnnotationConflicts(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z", lastOn: "2024-05-01T10:00:00Z",
		annotations: map[string]string{reboot.Annotation: "", "example.com/owner": "team-a"}})
	r, hs, dev := k.reconciler("host-0", fence.StateOff)
	hs.beforeRemove = func() { k.annotate("host-0", reboot.Annotation, ptr("machine-uid-2")) }

	d, err := r.Reconcile(t.Context(), k.ns, "host-0")
	assert.Equal(t, reboot.ReasonRemovePlain, d.Reason)
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	t.Logf("conflict: %v", err)
	var e *rebootkube.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "metadata.annotations[reboot.metal3.io]", e.Field)
	assert.NotContains(t, err.Error(), "machine-uid-2")
	assert.Equal(t, map[string]string{reboot.Annotation: "machine-uid-2", "example.com/owner": "team-a"},
		k.get("host-0").GetAnnotations(), "nothing lost")
	assert.Zero(t, dev.Calls(fake.OpSet))

	assert.Equal(t, []string{reboot.ReasonRemovePlain, reboot.ReasonRebootDone}, settle(t, r, k.ns, "host-0"))
	assertRebooted(t, k.get("host-0"))
}

// A keyed client changing its annotation while the host is deprovisioned:
// the removal of all the reboot annotations conflicts as a whole.
func TestIntegrationConcurrentChangeDuringDeprovisioningConflicts(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "deprovisioning", poweredOn: ptr(false),
		annotations: map[string]string{reboot.KeyedAnnotation("a"): "", reboot.KeyedAnnotation("b"): ""}})
	r, hs, _ := k.reconciler("host-0", fence.StateOff)
	hs.beforeRemove = func() { k.annotate("host-0", reboot.KeyedAnnotation("b"), ptr(`{"mode":"hard"}`)) }
	_, err := r.Reconcile(t.Context(), k.ns, "host-0")
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	assert.Len(t, k.get("host-0").GetAnnotations(), 2, "the patch failed as a whole")
	assert.Equal(t, []string{reboot.ReasonDeprovisioning}, settle(t, r, k.ns, "host-0"))
	assert.Empty(t, k.get("host-0").GetAnnotations())
}

// "The controller automatically removes all annotations with the
// reboot.metal3.io prefix if the Host is deprovisioned", here in the
// middle of a phased reboot; the pending reboot is cancelled and the power
// is left to the deprovisioning.
func TestIntegrationDeprovisioningRemovesAllRebootAnnotations(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: "", reboot.KeyedAnnotation("a"): "uid-a",
			reboot.KeyedAnnotation("b"): "", "example.com/keep": "k"}})
	r, _, dev := k.reconciler("host-0", fence.StateOn)
	assert.Equal(t, []string{reboot.ReasonRebootRequested, reboot.ReasonRemovePlain}, settle(t, r, k.ns, "host-0"))
	assert.Equal(t, fence.StateOff, dev.Truth(""), "held off")
	assert.False(t, statusTime(t, k.get("host-0"), "pendingRebootSince").IsZero())

	k.setState("host-0", "deprovisioning")
	dev.ResetCalls()
	assert.Equal(t, []string{reboot.ReasonDeprovisioning}, settle(t, r, k.ns, "host-0"))
	obj := k.get("host-0")
	assert.Equal(t, map[string]string{"example.com/keep": "k"}, obj.GetAnnotations())
	assert.True(t, statusTime(t, obj, "pendingRebootSince").IsZero(), "pending reboot cancelled")
	assert.Zero(t, dev.Calls(fake.OpSet)+dev.Calls(fake.OpSoftOff), "the deprovisioning owns the power")
}

// A keyed annotation added after the decision to power on, before the
// power on: the host is not powered on, and the next decision holds it off.
func TestIntegrationKeyedAnnotationAddedBeforePowerOnHoldsTheHost(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(false),
		pending: "2024-05-01T11:00:00Z", lastOn: "2024-05-01T10:00:00Z"})
	r, hs, dev := k.reconciler("host-0", fence.StateOff)
	hs.afterGet = func(n int) {
		if n == 1 {
			k.annotate("host-0", reboot.KeyedAnnotation("late"), ptr(""))
		}
	}
	d, err := r.Reconcile(t.Context(), k.ns, "host-0")
	assert.True(t, d.PowerOn)
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	assert.Zero(t, dev.Calls(fake.OpSet))

	d, err = r.Reconcile(t.Context(), k.ns, "host-0")
	require.NoError(t, err)
	assert.True(t, d.HeldOff)
	assert.Equal(t, fence.StateOff, dev.Truth(""))
}

// The pendingRebootSince write carries the resourceVersion the decision
// was made on: a change meanwhile (even an unrelated one) makes it
// conflict, and no power operation follows.
func TestIntegrationPendingWriteHasAResourceVersionPrecondition(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}})
	r, hs, dev := k.reconciler("host-0", fence.StateOn)
	hs.beforeWrite = func(precondition bool) {
		assert.True(t, precondition)
		k.annotate("host-0", "example.com/other", ptr("x"))
	}
	d, err := r.Reconcile(t.Context(), k.ns, "host-0")
	assert.True(t, d.SetPendingRebootSince)
	require.ErrorIs(t, err, rebootkube.ErrConflict)
	assert.True(t, apierrors.IsConflict(err))
	assert.Zero(t, dev.Calls(fake.OpSoftOff)+dev.Calls(fake.OpSet))
	assert.True(t, statusTime(t, k.get("host-0"), "pendingRebootSince").IsZero())

	assert.Equal(t, []string{reboot.ReasonRebootRequested, reboot.ReasonRemovePlain, reboot.ReasonRebootDone},
		settle(t, r, k.ns, "host-0"))
	assertRebooted(t, k.get("host-0"))
	assert.Equal(t, map[string]string{"example.com/other": "x"}, k.get("host-0").GetAnnotations())
}

// A resource with a status subresource written without it: the server
// ignores the status, and the Store says so instead of going on.
func TestIntegrationStatusWrittenWithoutTheSubresourceIsDetected(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: ""}})
	store := rebootkube.NewMetal3(k.c.Objects())
	store.StatusSubresource = false
	dev, m := bmc(fence.StateOn)
	_, err := reconciler(store, m).Reconcile(t.Context(), k.ns, "host-0")
	require.Error(t, err)
	assert.ErrorContains(t, err, "write-status status.provisioning.pendingRebootSince: the server did not store the value written (the resource may have a status subresource")
	assert.Zero(t, dev.Calls(fake.OpSoftOff)+dev.Calls(fake.OpSet), "no power operation without the record")
}

var serverGVR = schema.GroupVersionResource{Group: "example.fencekit.io", Version: "v1", Resource: "servers"}

// serverGVK is its kind.
var serverGVK = schema.GroupVersionKind{Group: "example.fencekit.io", Version: "v1", Kind: "Server"}

// serverMapping is the mapping of the user's own Server type.
func serverMapping() rebootkube.Mapping {
	return rebootkube.Mapping{
		PoweredOn:         rebootkube.ParsePath("status.power.on"),
		Online:            rebootkube.ParsePath("spec.wantOn"),
		ProvisioningState: rebootkube.ParsePath("status.phase"),
		Provisioning: func(phase string) reboot.Provisioning {
			switch phase {
			case "Active":
				return reboot.Provisioned
			case "Retiring":
				return reboot.Deprovisioning
			}
			return reboot.NotProvisioned
		},
		PendingRebootSince: rebootkube.ParsePath("status.reboot.pendingSince"),
		LastPoweredOn:      rebootkube.ParsePath("status.reboot.lastOn"),
		ErrorType:          rebootkube.ParsePath("status.power.fault"),
		PowerErrorType:     "power",
		ErrorMessage:       rebootkube.ParsePath("status.power.faultMessage"),
		Force:              rebootkube.ParsePath("spec.forceReboot"),
	}
}

// A type of the user's, with its own mapping and no status subresource:
// a forced reboot of a host that is not provisioned, with a power failure
// on the way.
func TestIntegrationUserTypeWithoutStatusSubresource(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, "testdata/server-crd.yaml")
	ns := c.Namespace(t)
	servers := c.Dynamic().Resource(serverGVR).Namespace(ns)
	_, err := servers.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.fencekit.io/v1", "kind": "Server",
		"metadata": map[string]any{"name": "srv-1", "annotations": map[string]any{reboot.KeyedAnnotation("ops"): ""}},
		"spec":     map[string]any{"wantOn": true, "forceReboot": true},
		"status":   map[string]any{"phase": "Available", "power": map[string]any{"on": true}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	dev, m := bmc(fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail, Times: 1})
	dev.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail, Times: 1})
	r := reconciler(&rebootkube.Hosts{Client: c.Objects(), Kind: serverGVK, Mapping: serverMapping()}, m)

	_, err = r.Reconcile(t.Context(), ns, "srv-1")
	require.Error(t, err)
	obj, err := servers.Get(t.Context(), "srv-1", metav1.GetOptions{})
	require.NoError(t, err)
	fault, _, _ := unstructured.NestedString(obj.Object, "status", "power", "fault")
	assert.Equal(t, "power", fault)

	d, err := r.Reconcile(t.Context(), ns, "srv-1")
	require.NoError(t, err)
	assert.Equal(t, reboot.ModePowerFailed, d.ModeSource)
	d, err = r.Reconcile(t.Context(), ns, "srv-1")
	require.NoError(t, err)
	assert.True(t, d.HeldOff)

	_, err = servers.Patch(t.Context(), "srv-1", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/annotations/reboot.metal3.io~1ops"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{reboot.ReasonRebootDone}, settle(t, r, ns, "srv-1"))
	assert.Equal(t, fence.StateOn, dev.Truth(""))
	obj, err = servers.Get(t.Context(), "srv-1", metav1.GetOptions{})
	require.NoError(t, err)
	on, _, _ := unstructured.NestedBool(obj.Object, "status", "power", "on")
	assert.True(t, on)
	pending, _, _ := unstructured.NestedString(obj.Object, "status", "reboot", "pendingSince")
	last, _, _ := unstructured.NestedString(obj.Object, "status", "reboot", "lastOn")
	assert.NotEmpty(t, pending)
	assert.GreaterOrEqual(t, last, pending)
	_, has, _ := unstructured.NestedString(obj.Object, "status", "power", "fault")
	assert.False(t, has, "power fault cleared")

	// Told of a status subresource the resource does not have, the Store
	// says so.
	_, err = servers.Patch(t.Context(), "srv-1", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"reboot.metal3.io":""}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	r.Hosts = &rebootkube.Hosts{Client: c.Objects(), Kind: serverGVK, Mapping: serverMapping(), StatusSubresource: true}
	_, err = r.Reconcile(t.Context(), ns, "srv-1")
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err))
	assert.ErrorContains(t, err, "the resource may have no status subresource")
}

// The Typed store with a user's Go type, on the real API server.
func TestIntegrationTypedStore(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "externally provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: `{"mode":"hard"}`}})
	typed := &rebootkube.Typed[*BareMetalHost]{
		Client: func(ns string) rebootkube.TypedClient[*BareMetalHost] {
			return typedHosts{k.c.Objects(), ns}
		},
		Mapping:           rebootkube.Metal3Mapping(),
		StatusSubresource: true,
	}
	dev := &guardDevice{Device: fake.New(fake.Options{Plugs: []string{""}}), check: noKeyedAnnotation(k.c.Objects(), k.ns, "host-0")}
	r := reconciler(typed, method(dev))
	assert.Equal(t, []string{reboot.ReasonRebootRequested, reboot.ReasonRemovePlain, reboot.ReasonRebootDone},
		settle(t, r, k.ns, "host-0"))
	assert.Zero(t, dev.Calls(fake.OpSoftOff))
	assertRebooted(t, k.get("host-0"))
	assert.Empty(t, dev.Violations())
}

// The client's side: a fencing client asks for a hard reboot with its
// keyed annotation; the operator (here the Reconciler, playing the
// baremetal-operator) switches the host off and holds it off while the
// annotation stands; the client reads the host off from the status; it
// removes its annotation and the operator switches the host on.
func TestIntegrationClientHoldsTheHostOff(t *testing.T) {
	k := newKube(t)
	k.create(host{name: "host-0", online: true, state: "provisioned", poweredOn: ptr(true)})
	operator, _, dev := k.reconciler("host-0", fence.StateOn)
	client := &rebootkube.Client{Hosts: rebootkube.NewMetal3(k.c.Objects())}
	ctx := t.Context()

	st, _, err := client.Power(ctx, k.ns, "host-0")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)

	require.NoError(t, client.RequestReboot(ctx, k.ns, "host-0", "fencekit", reboot.Hard))
	require.NoError(t, client.RequestReboot(ctx, k.ns, "host-0", "fencekit", reboot.Hard), "again: harmless")
	assert.Equal(t, `{"mode":"hard"}`, k.get("host-0").GetAnnotations()["reboot.metal3.io/fencekit"])
	settle(t, operator, k.ns, "host-0")
	assert.Equal(t, fence.StateOff, dev.Truth(""), "the operator switched it off")
	st, h, err := client.Power(ctx, k.ns, "host-0")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "the client reads it off")
	assert.False(t, h.PendingRebootSince.IsZero())
	settle(t, operator, k.ns, "host-0")
	assert.Equal(t, fence.StateOff, dev.Truth(""), "held off while the keyed annotation stands")

	require.NoError(t, client.ReleaseReboot(ctx, k.ns, "host-0", "fencekit"))
	require.NoError(t, client.ReleaseReboot(ctx, k.ns, "host-0", "fencekit"), "again: harmless")
	settle(t, operator, k.ns, "host-0")
	assert.Equal(t, fence.StateOn, dev.Truth(""))
	st, _, err = client.Power(ctx, k.ns, "host-0")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	assert.Error(t, client.ReleaseReboot(ctx, k.ns, "host-0", ""), "the plain annotation is the operator's to remove")
}
