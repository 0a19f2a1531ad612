package bmhfence_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/drivers/fake"
	_ "github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/bmhfence"
	"github.com/fencekit/fencekit/kube/rebootkube"
)

// Integration tests: BareMetalHosts on the shared real API server (the
// metal3 CRD rebootkube's tests install), the baremetal-operator's part
// played by rebootkube.Reconciler, which powers the host through a live
// IPMI simulator (OpenIPMI's ipmi_sim) with the ipmi driver; the fence
// engine drives the host through the bmh driver, as a fence configuration
// would.

func TestMain(m *testing.M) { kubetest.Main(m) }

var gvr = schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}

type world struct {
	t       *testing.T
	dyn     dynamic.Interface // the test's own requests, as the operator's
	objects crclient.Client   // the driver's client
	ns      string
	sim     *ipmisim.Sim
	reg     *fence.Registry
}

func newWorld(t *testing.T) *world {
	c := kubetest.Shared(t)
	c.InstallCRD(t, "../rebootkube/testdata/baremetalhost-crd.yaml")
	w := &world{t: t, dyn: c.Dynamic(), objects: c.Objects(), ns: c.Namespace(t), sim: ipmisim.StartIPMISim(t, ipmisim.SimOptions{})}
	w.reg = fence.NewRegistry()
	require.NoError(t, w.reg.Register(bmhfence.Driver(rebootkube.NewMetal3(w.objects))))
	return w
}

func (w *world) hosts() dynamic.ResourceInterface { return w.dyn.Resource(gvr).Namespace(w.ns) }

// createHost creates a provisioned host, on, as the operator reports it.
func (w *world) createHost(name string) {
	w.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"name": name, "namespace": w.ns},
		"spec":     map[string]any{"online": true},
	}}
	_, err := w.hosts().Create(w.t.Context(), obj, metav1.CreateOptions{})
	require.NoError(w.t, err)
	w.patchStatus(name, map[string]any{"poweredOn": true, "provisioning": map[string]any{"state": "provisioned"}})
}

func (w *world) patchStatus(name string, status map[string]any) {
	w.t.Helper()
	data, err := json.Marshal(map[string]any{"status": status})
	require.NoError(w.t, err)
	_, err = w.hosts().Patch(w.t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	require.NoError(w.t, err)
}

func (w *world) annotations(name string) map[string]string {
	w.t.Helper()
	obj, err := w.hosts().Get(w.t.Context(), name, metav1.GetOptions{})
	require.NoError(w.t, err)
	return obj.GetAnnotations()
}

// operator runs the Reconciler on the host every 100 ms, powering it
// through ipmi_sim, until the test ends or stop is called.
func (w *world) operator(name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	bmc, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: name, Name: "bmc", Driver: "ipmi", Params: fence.Params{
		"address": w.sim.URL(), "username": w.sim.User, "password": w.sim.Password, "lanplus": "1",
		"power_timeout": "10"}})
	require.NoError(w.t, err)
	bmc.Options.PollInterval = 100 * time.Millisecond
	r := &rebootkube.Reconciler{
		Hosts:  rebootkube.NewMetal3(w.objects),
		Method: func(context.Context, *rebootkube.Host) (*fence.Method, error) { return bmc, nil },
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := r.Reconcile(ctx, w.ns, name); err != nil && ctx.Err() == nil && !errors.Is(err, rebootkube.ErrConflict) {
				w.t.Logf("operator: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	w.t.Cleanup(stop)
	return stop
}

// method opens the bmh method of the host, as a fence configuration
// would name it.
func (w *world) method(name string, timeout time.Duration) *fence.Method {
	w.t.Helper()
	m, err := w.reg.Open(w.t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "bmh-" + name, Params: fence.Params{
		"address": "bmh://" + w.ns + "/" + name, "power_timeout": strconv.Itoa(int(timeout / time.Second))}})
	require.NoError(w.t, err)
	m.Options.PollInterval = 100 * time.Millisecond
	return m
}

func (w *world) truth() fence.State {
	w.t.Helper()
	s, err := w.sim.Truth()
	require.NoError(w.t, err)
	return s
}

// Off holds the host off through the operator, confirmed from the status
// the operator writes; on lets it on again; a reboot does both.
func TestIntegrationFenceThroughTheOperator(t *testing.T) {
	w := newWorld(t)
	w.createHost("host-0")
	w.operator("host-0")
	m := w.method("host-0", 20*time.Second)
	ctx := t.Context()

	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced(), "the operator reported the host off")
	assert.Equal(t, fence.StateOff, w.truth(), "ipmi_sim's chassis is off")
	assert.Equal(t, `{"mode":"hard"}`, w.annotations("host-0")["reboot.metal3.io/"+bmhfence.DefaultKey])
	time.Sleep(500 * time.Millisecond) // five passes of the operator
	assert.Equal(t, fence.StateOff, w.truth(), "held off while the annotation stands")

	res, err = fence.Do(ctx, m, fence.ActionStatus)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, res.State)

	res, err = fence.Do(ctx, m, fence.ActionOn)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, res.State)
	assert.Equal(t, fence.StateOn, w.truth())
	assert.NotContains(t, w.annotations("host-0"), "reboot.metal3.io/"+bmhfence.DefaultKey)

	res, err = fence.Do(ctx, m, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced(), "off confirmed in the reboot")
	assert.NoError(t, res.OnErr)
	assert.Equal(t, fence.StateOn, w.truth())
}

// Without an operator to act, the annotation alone is not a fence: the off
// is not confirmed and the outcome is a failure. A host that does not
// exist is a configuration error; a host whose operator records a failed
// power operation reads unknown.
func TestIntegrationNoConfirmationNoFence(t *testing.T) {
	w := newWorld(t)
	w.createHost("host-1")
	stop := w.operator("host-1")
	stop() // the operator is down
	m := w.method("host-1", 2*time.Second)
	res, err := fence.Do(t.Context(), m, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res != nil && res.Fenced())
	assert.True(t, fence.IsOutcomeUnknown(err), "an unconfirmed off is an unknown outcome: %v", err)
	assert.Equal(t, fence.StateOn, w.truth(), "nothing touched the BMC")

	_, err = fence.Do(t.Context(), w.method("no-such-host", 2*time.Second), fence.ActionStatus)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrConfig)
	assert.Contains(t, err.Error(), w.ns+"/no-such-host")

	// A host the operator reports off, that nothing holds off, is not
	// taken for fenced: the off writes the annotation and waits for the
	// operator (down here).
	w.createHost("host-2")
	w.patchStatus("host-2", map[string]any{"poweredOn": false})
	m2 := w.method("host-2", 2*time.Second)
	res, err = fence.Do(t.Context(), m2, fence.ActionStatus)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, res.State, "off but not held: on")
	res, err = fence.Do(t.Context(), m2, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res != nil && res.Fenced(), "never fenced by a stale or unheld off")
	assert.Equal(t, `{"mode":"hard"}`, w.annotations("host-2")["reboot.metal3.io/"+bmhfence.DefaultKey])

	// pendingRebootSince left from an earlier reboot (older than the last
	// power on), the host reported off and held by the annotation: the
	// operator has not taken this hold, so it is no proof.
	w.patchStatus("host-2", map[string]any{"provisioning": map[string]any{
		"pendingRebootSince": "2026-01-01T10:00:00Z", "lastPoweredOn": "2026-01-01T10:05:00Z"}})
	res, err = fence.Do(t.Context(), m2, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res != nil && res.Fenced(), "never fenced by a pendingRebootSince older than the last power on")

	w.patchStatus("host-1", map[string]any{"errorType": "power management error", "errorMessage": "BMC unreachable"})
	res, err = fence.Do(t.Context(), m, fence.ActionStatus)
	require.Error(t, err)
	if res != nil {
		assert.Equal(t, fence.StateUnknown, res.State)
	}
}

// Bad addresses and parameters are refused before any I/O, naming the
// field.
func TestCheck(t *testing.T) {
	reg := fence.NewRegistry()
	require.NoError(t, reg.Register(bmhfence.Driver(nil)))
	for _, tc := range []struct {
		params fence.Params
		field  string
	}{
		{fence.Params{"address": "bmh://metal3"}, "plug"},
		{fence.Params{"address": "bmh://Metal3/host-0"}, "address"},
		{fence.Params{"address": "bmh://metal3/host_0"}, "address"},
		{fence.Params{"address": "bmh://metal3:80/host-0"}, "address"},
		{fence.Params{"address": "bmh://metal3/host-0", "plug": "host-1"}, "plug"},
		{fence.Params{"address": "bmh://metal3/host-0", "reboot_key": "a/b"}, "reboot_key"},
	} {
		_, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "m", Params: tc.params})
		require.Error(t, err, "%v", tc.params)
		var fe *fence.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, tc.field, fe.Field, "%v: %v", tc.params, err)
	}
	_, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "m", Params: fence.Params{"address": "bmh://metal3", "plug": "host-0"}})
	require.Error(t, err, "no client")
	assert.ErrorIs(t, err, fence.ErrConfig)
}

// A host the operator does not manage (detached, paused, or with a power
// management error recorded) fails at once, not done, with nothing
// written: the next level is tried without waiting out the power timeout,
// which here is a minute.
func TestIntegrationUnmanagedHostFailsFast(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		host  string
		patch func(name string)
	}{
		{"host-detached", func(name string) { w.annotate(name, bmhfence.AnnotationDetached, "") }},
		{"host-paused", func(name string) { w.annotate(name, bmhfence.AnnotationPaused, "") }},
		{"host-pm-error", func(name string) {
			w.patchStatus(name, map[string]any{"errorType": "power management error", "errorMessage": "BMC unreachable"})
		}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			w.createHost(tc.host)
			tc.patch(tc.host)
			start := time.Now()
			res, err := fence.Do(t.Context(), w.method(tc.host, time.Minute), fence.ActionOff)
			require.Error(t, err)
			assert.Less(t, time.Since(start), 10*time.Second, "failed fast, not after the power timeout")
			assert.False(t, res != nil && res.Fenced())
			assert.True(t, fence.IsNotDone(err), "%v", err)
			assert.ErrorIs(t, err, bmhfence.ErrNotManaged)
			assert.NotContains(t, w.annotations(tc.host), "reboot.metal3.io/"+bmhfence.DefaultKey, "nothing written")
		})
	}
}

// annotate sets an annotation of a host.
func (w *world) annotate(name, key, value string) {
	w.t.Helper()
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	require.NoError(w.t, err)
	_, err = w.hosts().Patch(w.t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{})
	require.NoError(w.t, err)
}

// A host whose spec.disablePowerOff is true is never counted off: its
// operator would reboot it, not hold it off. The bmh level fails at once,
// not done, nothing written, and the node's next level (here a PDU
// outlet) fences it; the host's BMC is never switched. An annotation
// someone else writes is refused by the reboot path too: the Reconciler,
// in the operator's place, does not switch the host off.
func TestIntegrationPowerOffDisabled(t *testing.T) {
	w := newWorld(t)
	const host = "host-no-power-off"
	w.createHost(host)
	_, err := w.hosts().Patch(t.Context(), host, types.MergePatchType, []byte(`{"spec":{"disablePowerOff":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	w.operator(host)

	pdu := fake.NewNamed("pdu-"+w.ns, fake.Options{Plugs: []string{"1"}})
	t.Cleanup(func() { fake.Forget("pdu-" + w.ns) })
	outlet, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "pdu", Driver: "fake",
		Params: fence.Params{"address": "fake://pdu-" + w.ns, "plug": "1", "stonith_status_sleep": "0"}})
	require.NoError(t, err)
	levels := []fence.Level{{Methods: []*fence.Method{w.method(host, time.Minute)}}, {Methods: []*fence.Method{outlet}}}
	res, err := fence.DoLevels(t.Context(), "worker-1", levels, fence.ActionOff)
	require.NoError(t, err)
	require.True(t, res.Fenced, "fenced")
	assert.Equal(t, 1, res.Level, "by the second level")
	require.Len(t, res.Levels, 2)
	bmh := res.Levels[0].Err
	require.Error(t, bmh)
	assert.ErrorIs(t, bmh, bmhfence.ErrPowerOffDisabled)
	assert.True(t, fence.IsNotDone(bmh), "%v", bmh)
	assert.Contains(t, bmh.Error(), "spec.disablePowerOff")
	assert.NotContains(t, w.annotations(host), "reboot.metal3.io/"+bmhfence.DefaultKey, "nothing written")
	assert.Equal(t, fence.StateOff, pdu.Truth("1"))
	_, err = fence.Do(t.Context(), w.method(host, time.Minute), fence.ActionStatus)
	assert.ErrorIs(t, err, bmhfence.ErrPowerOffDisabled, "its status is no proof either")

	// Another client asks for a hard reboot: the reboot path refuses the off.
	w.annotate(host, "reboot.metal3.io/other", `{"mode":"hard"}`)
	r := &rebootkube.Reconciler{Hosts: rebootkube.NewMetal3(w.objects), Method: func(context.Context, *rebootkube.Host) (*fence.Method, error) {
		return w.method(host, time.Minute), nil
	}}
	_, err = r.Reconcile(t.Context(), w.ns, host)
	require.ErrorIs(t, err, rebootkube.ErrPowerOffDisabled)
	assert.Equal(t, fence.StateOn, w.truth(), "the host's BMC never switched")
}
