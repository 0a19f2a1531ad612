package teardownkube_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
)

// A node with a ReplicaSet pod and a DaemonSet pod is drained (the
// DaemonSet pod stays), its role labels removed, and the node deleted.
// The clientset is a fake one that carries out evictions; in a controller
// it is the cluster's.
func Example() {
	ctx := context.Background()
	yes := true
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2",
		Labels: map[string]string{"openstack-control-plane": "enabled", "kubernetes.io/hostname": "node-2"}}}
	agent := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", UID: "ds-1"}}
	pod := func(ns, name, kind, owner string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: kind, Name: owner, UID: types.UID("uid-" + owner), Controller: &yes}}},
			Spec:   corev1.PodSpec{NodeName: "node-2"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	client := fake.NewClientset(node, agent,
		pod("default", "web-1", "ReplicaSet", "web"), pod("kube-system", "agent-x7", "DaemonSet", "agent"))
	// The fake clientset offers the eviction API and evicts at once.
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1", Namespaced: true}}}}
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, client.Tracker().Delete(podsGVR, ev.Namespace, ev.Name)
	})

	c := teardownkube.New(client, teardownkube.Options{})
	err := c.Drain(ctx, "node-2", teardown.DrainOptions{
		Timeout: time.Minute, GracePeriod: 30 * time.Second, IgnoreDaemonSets: true,
	}, func(p teardown.DrainProgress) {
		fmt.Printf("[%d pending] %s\n", p.Pending, p.Message)
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	pods, _ := c.Pods(ctx, "node-2")
	fmt.Printf("left: %+v\n", pods)

	if err := c.SetLabels(ctx, "node-2", map[string]*string{"openstack-control-plane": nil}); err != nil {
		fmt.Println("error:", err)
		return
	}
	n, _ := c.Node(ctx, "node-2")
	fmt.Println("cordoned:", n.Unschedulable, "labels:", n.Labels)

	if err := c.DeleteNode(ctx, "node-2"); err != nil {
		fmt.Println("error:", err)
		return
	}
	_, err = c.Node(ctx, "node-2")
	fmt.Println(errors.Is(err, teardown.ErrNodeNotFound), err)
	// Output:
	// [0 pending] node/node-2 cordoned
	// [1 pending] WARNING: ignoring DaemonSet-managed Pods: kube-system/agent-x7
	// [1 pending] evicting pod default/web-1
	// [0 pending] pod default/web-1 evicted
	// [0 pending] node/node-2 drained
	// left: [{Namespace:kube-system Name:agent-x7 DaemonSet:true Mirror:false Terminating:false Finished:false}]
	// cordoned: true labels: map[kubernetes.io/hostname:node-2]
	// true teardownkube: node node-2: get: node not found: nodes "node-2" not found
}
