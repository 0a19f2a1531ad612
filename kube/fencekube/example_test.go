package fencekube_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// A node stops answering: its fencing starts as a NodeFence object (here
// behind a fake client: a host's controller-runtime fake client serves
// every port). Once a device confirmed the node off, the taint
// strategy marks it out of service, so that Kubernetes moves its
// StatefulSet pods; once the node is back, the taint goes.
func Example() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = fencekube.AddToScheme(scheme)
	objects := crfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&fencekube.NodeFence{}).
		WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2"}}).Build()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	store := fencekube.NewStore(objects, fencekube.StoreOptions{})
	rec, _ := flow.Advance(nil, "worker-2", flow.Observation{Now: now}, flow.Options{})
	if _, err := store.Create(ctx, rec); err != nil {
		fmt.Println(err)
		return
	}
	var obj fencekube.NodeFence
	if err := objects.Get(ctx, crclient.ObjectKey{Name: "worker-2"}, &obj); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("NodeFence", obj.Name, obj.Status.Step, obj.Status.Status, obj.Finalizers)

	pods := &fencekube.TaintPods{Client: objects, Now: func() time.Time { return now }}
	taints := func() {
		n := &corev1.Node{}
		_ = objects.Get(ctx, crclient.ObjectKey{Name: "worker-2"}, n)
		fmt.Print("taints:")
		for _, t := range n.Spec.Taints {
			fmt.Print(" ", t.ToString())
		}
		fmt.Println()
	}
	_ = pods.Release(ctx, "worker-2", flow.ReleaseStorage) // isolated only: no taint
	taints()
	_ = pods.Release(ctx, "worker-2", flow.ReleasePower) // confirmed off
	taints()
	_ = pods.Restore(ctx, "worker-2") // back and ready
	taints()
	// Output:
	// NodeFence worker-2 isolation New [fencekit.io/restore-pods]
	// taints:
	// taints: node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
	// taints:
}

// A NodeFence that names another node than its own name is refused, with
// the field at fault.
func ExampleRecord() {
	o := &fencekube.NodeFence{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-2"},
		Spec:       fencekube.NodeFenceSpec{Node: "worker-3"},
		Status:     fencekube.NodeFenceStatus{Step: "isolation", Status: "Done"},
	}
	_, err := fencekube.Record(o)
	fmt.Println(err)
	// Output:
	// fencekube: NodeFence worker-2: decode spec.node: malformed NodeFence: "worker-3" is not the object's name "worker-2"
}
