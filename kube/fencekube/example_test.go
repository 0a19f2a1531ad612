package fencekube_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// A node stops answering: its fencing starts as a NodeFence object (here
// behind fake clients). Once a device confirmed the node off, the taint
// strategy marks it out of service, so that Kubernetes moves its
// StatefulSet pods; once the node is back, the taint goes.
func Example() {
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{fencekube.NodeFenceResource: "NodeFenceList"})
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2"}})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	store := fencekube.NewStore(dyn, fencekube.StoreOptions{})
	rec, _ := flow.Advance(nil, "worker-2", flow.Observation{Now: now}, flow.Options{})
	if _, err := store.Create(ctx, rec); err != nil {
		fmt.Println(err)
		return
	}
	obj, err := dyn.Resource(fencekube.NodeFenceResource).Get(ctx, "worker-2", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	step, _, _ := unstructured.NestedString(obj.Object, "status", "step")
	status, _, _ := unstructured.NestedString(obj.Object, "status", "status")
	fmt.Println("NodeFence", obj.GetName(), step, status, obj.GetFinalizers())

	pods := &fencekube.TaintPods{Client: client, Now: func() time.Time { return now }}
	taints := func() {
		n, _ := client.CoreV1().Nodes().Get(ctx, "worker-2", metav1.GetOptions{})
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
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fencekit.io/v1alpha1", "kind": "NodeFence",
		"metadata": map[string]any{"name": "worker-2"},
		"spec":     map[string]any{"node": "worker-3"},
		"status":   map[string]any{"step": "isolation", "status": "Done"},
	}}
	o, err := fencekube.FromUnstructured(u)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = fencekube.Record(o)
	fmt.Println(err)
	// Output:
	// fencekube: NodeFence worker-2: decode spec.node: malformed NodeFence: "worker-3" is not the object's name "worker-2"
}
