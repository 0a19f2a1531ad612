package rebootkube_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fakebmc "github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/rebootkube"
)

// A BareMetalHost asks for a reboot with the plain annotation; the
// Reconciler notes it, switches the host off gracefully through its BMC
// (here a fake one, behind a fake client), removes the annotation
// and switches the host on again, recording both times in the status.
func Example() {
	ctx := context.Background()
	host := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1",
		"kind":       "BareMetalHost",
		"metadata": map[string]any{
			"namespace": "metal3", "name": "worker-3", "resourceVersion": "1",
			"annotations": map[string]any{"reboot.metal3.io": ""},
		},
		"spec":   map[string]any{"online": true},
		"status": map[string]any{"poweredOn": true, "provisioning": map[string]any{"state": "provisioned"}},
	}}
	// A manager's client in a controller; here a fake one, which like a
	// server keeps the status apart (a status subresource).
	client := fake.NewClientBuilder().WithObjects(host).WithStatusSubresource(host).Build()

	bmc := fakebmc.New(fakebmc.Options{Plugs: []string{""}})
	method := &fence.Method{Name: "bmc", Node: "worker-3", Driver: "fake", Device: bmc,
		Options: fence.Options{PollInterval: 10 * time.Millisecond}}
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

	r := &rebootkube.Reconciler{
		Hosts: rebootkube.NewMetal3(client),
		Method: func(ctx context.Context, h *rebootkube.Host) (*fence.Method, error) {
			return method, nil // in a controller: the BMC named by the host's spec
		},
		SoftTimeout: 5 * time.Minute,
		Now:         func() time.Time { now = now.Add(time.Second); return now },
	}
	for {
		d, err := r.Reconcile(ctx, "metal3", "worker-3")
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if d.Nothing() {
			break
		}
		fmt.Println(d.Reason)
	}

	h, err := r.Hosts.Get(ctx, "metal3", "worker-3")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("annotations:", h.Annotations)
	fmt.Println("pendingRebootSince:", h.PendingRebootSince.Format(time.RFC3339))
	fmt.Println("lastPoweredOn:", h.LastPoweredOn.Format(time.RFC3339))
	fmt.Println("poweredOn:", h.PoweredOn, "BMC:", bmc.History(""))
	// Output:
	// reboot requested: pendingRebootSince noted, powering off
	// host off: removing the served reboot.metal3.io annotation before powering on
	// reboot done: no reboot annotation left, powering on
	// annotations: map[]
	// pendingRebootSince: 2024-05-01T12:00:01Z
	// lastPoweredOn: 2024-05-01T12:00:03Z
	// poweredOn: true BMC: [on off on]
}
