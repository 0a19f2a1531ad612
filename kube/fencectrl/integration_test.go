package fencectrl_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/kube/fencectrl"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/policy"
)

// TestMain stops the shared API server of the integration tests.
func TestMain(m *testing.M) { kubetest.Main(m) }

// The fence controller added to a controller-runtime manager on a real API
// server: a node that stops answering is fenced (its outlet confirmed off,
// the out-of-service taint), the events go through the manager's recorder,
// and the manager's informers are the only ones: one watch of Nodes, one of
// NodeFences, one of the namespace's ConfigMaps.
func TestManager(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, filepath.Join("..", "..", "config", "crd", "fencekit.io_nodefences.yaml"))
	ctx := t.Context()
	admin := c.Client()
	ns := c.Namespace(t)
	prefix := kubetest.UniqueName(t)
	node := prefix + "-w1"

	pdu := fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: []string{"1"}})
	t.Cleanup(func() { fake.Forget(prefix + "-pdu") })
	for name, body := range map[string]string{
		"fence-method-pdu-off-" + node: "driver=fake\naddress=fake://" + prefix + "-pdu\nplug=1\naction=off\nstonith_status_sleep=0\n",
		"fence-config-" + node:         "power_management=pdu-off\n",
	} {
		key := "method.properties"
		if strings.HasPrefix(name, "fence-config-") {
			key = "config.properties"
		}
		_, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{key: body}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.WithoutCancel(ctx), node, metav1.DeleteOptions{}) })
	setReady := func(status corev1.ConditionStatus, since time.Time) {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		require.NoError(t, err)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	setReady(corev1.ConditionTrue, time.Now().Add(-time.Hour))

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cfg := c.Config()
	w := kubetest.CountWatches(cfg)
	var logs testtool.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:  logr.FromSlogHandler(logger.Handler()),
		Scheme:  scheme,
		Cache:   fencectrl.CacheOptions(ns),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	require.NoError(t, err)
	// One node alone in this cluster: the storm guard would count it as
	// all of them; one fencing at a time is the policy here.
	r, err := fencectrl.New(ctx, mgr, fencectrl.Options{Namespace: ns, Logger: logger, Gate: policy.MaxInFlight{N: 1}, Controller: controller.Options{
		Identity: prefix, UnhealthyAfter: time.Second, MaxWorkers: 4,
		Flow: flow.Options{PodsTimeout: 2 * time.Second},
	}})
	require.NoError(t, err)
	require.NoError(t, r.SetupWithManager(ctx, mgr, crcontroller.Options{}))
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the manager did not stop")
		}
	})

	// The node stops answering: fenced by the manager's reconciler.
	setReady(corev1.ConditionFalse, time.Now())
	reader := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	require.Eventually(t, func() bool {
		nf, err := reader.Get(ctx, node)
		return err == nil && nf.PoweredOff && nf.Released == flow.ReleasePower
	}, 30*time.Second, 20*time.Millisecond, "fenced by the manager's reconciler")
	assert.Equal(t, fence.StateOff, pdu.Truth("1"))
	require.Eventually(t, func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && fencekube.HasOutOfServiceTaint(n)
	}, 10*time.Second, 20*time.Millisecond)

	// The events, recorded by the manager's recorder (events.k8s.io).
	require.Eventually(t, func() bool {
		l, err := admin.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, e := range l.Items {
			if e.Regarding.Name == node && e.Reason == flow.ReasonPowerFenced && e.ReportingController == fencectrl.Name {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "a %s event from %s", flow.ReasonPowerFenced, fencectrl.Name)

	// One watch a resource: the adapters read the manager's informers.
	assert.Equal(t, 1, w.Count("/api/v1/nodes"), "Nodes watched once")
	assert.Equal(t, 1, w.Count("/apis/fencekit.io/v1alpha1/nodefences"), "NodeFences watched once: %v", w)
	assert.Equal(t, 1, w.Count("/api/v1/namespaces/"+ns+"/configmaps"), "ConfigMaps watched once, in the namespace only")
}
