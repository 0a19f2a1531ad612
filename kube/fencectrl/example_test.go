package fencectrl_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/drivers/fake"
	_ "github.com/fencekit/fencekit/drivers/ipmi"    // registers "ipmi" (fence_ipmilan)
	_ "github.com/fencekit/fencekit/drivers/redfish" // registers "redfish" (fence_redfish)
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/kube/fencectrl"
	"github.com/fencekit/fencekit/policy"
)

// staticHealth is a Health of fixed nodes.
type staticHealth []controller.NodeHealth

func (h staticHealth) Nodes() []controller.NodeHealth { return h }

// The reconciler a manager runs, called as its work queue calls it: one
// request per node. worker-2 has been not ready for two minutes: its
// reconcile powers it off through its PDU outlet (a fake device here) and
// asks to be called again within an interval, while its fencing is under
// way; worker-1, ready, has nothing to do.
func ExampleReconciler() {
	ctx := context.Background()
	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-pdu-off-worker-2", Data: map[string]string{
			"method.properties": "driver=fake\naddress=fake://example-pdu\nplug=2\naction=off\nstonith_status_sleep=0\n"}},
		{Name: "fence-config-worker-2", Data: map[string]string{"config.properties": "power_management=pdu-off\n"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pdu := fake.NewNamed("example-pdu", fake.Options{})
	defer fake.Forget("example-pdu")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := controller.NewMemoryStore()
	r := &fencectrl.Reconciler{Controller: &controller.Controller{
		Health: staticHealth{
			{Name: "worker-1", Ready: true, Since: now.Add(-time.Hour)},
			{Name: "worker-2", Ready: false, Since: now.Add(-2 * time.Minute)},
			{Name: "worker-3", Ready: true, Since: now.Add(-time.Hour)},
		},
		Store: store, Config: controller.StaticConfig{C: cfg}, Now: func() time.Time { return now },
		Options: controller.Options{UnhealthyAfter: time.Minute, Interval: 10 * time.Second},
	}}
	for _, node := range []string{"worker-1", "worker-2"} {
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: again after %v\n", node, res.RequeueAfter)
	}
	nf, _ := store.Get(ctx, "worker-2")
	fmt.Println("worker-2:", nf.Step, nf.Status, "powered off:", nf.PoweredOff, "outlet 2:", pdu.Truth("2"))
	// Output:
	// worker-1: again after 0s
	// worker-2: again after 10s
	// worker-2: power_management Done powered off: true outlet 2: off
}

// The fence controller in a controller-runtime manager: the manager's
// cache (CacheOptions keeps its Nodes small and its ConfigMaps and Secrets
// to the controller's namespace), clients, event recorder and leader
// election; one reconcile per node, four at once. What a host must do: the
// scheme with fencekit's API types, the drivers its methods name imported
// for their registration (here IPMI and Redfish), and leader election on.
func Example_manager() {
	ctx := ctrl.SetupSignalHandler()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: scheme, Cache: fencectrl.CacheOptions("fencing"),
		LeaderElection: true, LeaderElectionID: "fencekit", LeaderElectionNamespace: "fencing",
	})
	if err != nil {
		panic(err)
	}
	r, err := fencectrl.New(ctx, mgr, fencectrl.Options{
		Namespace: "fencing", Secrets: true, Gate: policy.Default(),
		Controller: controller.Options{UnhealthyAfter: time.Minute, MaxWorkers: 4},
	})
	if err != nil {
		panic(err)
	}
	if err := r.SetupWithManager(ctx, mgr, crcontroller.Options{}); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
