package fencectrl_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencectrl"
	"github.com/fencekit/fencekit/kube/rebootkube"
)

// The metal3 reboot reconciler under a manager on a real API server: a
// host annotated reboot.metal3.io is switched off and on through its
// (fake) BMC, and the annotation is removed, by the manager's work queue.
func TestManagerRebootReconciler(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, filepath.Join("..", "rebootkube", "testdata", "baremetalhost-crd.yaml"))
	ctx := t.Context()
	ns := c.Namespace(t)
	gvk := schema.GroupVersionKind{Group: "metal3.io", Version: "v1alpha1", Kind: "BareMetalHost"}
	hosts := c.Dynamic().Resource(gvk.GroupVersion().WithResource("baremetalhosts")).Namespace(ns)

	host := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"name": "host-0", "namespace": ns},
		"spec":     map[string]any{"online": true},
	}}
	_, err := hosts.Create(ctx, host, metav1.CreateOptions{})
	require.NoError(t, err)
	status, err := json.Marshal(map[string]any{"status": map[string]any{"poweredOn": true, "provisioning": map[string]any{"state": "provisioned"}}})
	require.NoError(t, err)
	_, err = hosts.Patch(ctx, "host-0", types.MergePatchType, status, metav1.PatchOptions{}, "status")
	require.NoError(t, err)

	bmc := fake.New(fake.Options{Plugs: []string{""}})
	method := &fence.Method{Name: "bmc", Node: "host-0", Driver: "fake", Device: bmc,
		Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 2 * time.Second, IOTimeout: 2 * time.Second}}
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	rr := &fencectrl.RebootReconciler{GVK: gvk, MaxConcurrentReconciles: 2, Poll: time.Second, Reconciler: &rebootkube.Reconciler{
		Hosts:       rebootkube.NewMetal3(c.Objects()),
		Method:      func(context.Context, *rebootkube.Host) (*fence.Method, error) { return method, nil },
		SoftTimeout: time.Second,
	}}
	require.NoError(t, rr.SetupWithManager(ctx, mgr, crcontroller.Options{}))
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the manager did not stop")
		}
	})

	ann, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"reboot.metal3.io": `{"mode":"hard"}`}}})
	require.NoError(t, err)
	_, err = hosts.Patch(ctx, "host-0", types.MergePatchType, ann, metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h, err := hosts.Get(ctx, "host-0", metav1.GetOptions{})
		require.NoError(t, err)
		_, annotated := h.GetAnnotations()["reboot.metal3.io"]
		last, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "lastPoweredOn")
		return !annotated && last != ""
	}, 20*time.Second, 20*time.Millisecond, "rebooted and the annotation removed")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, bmc.History(""))
}
