package fencegroupkube_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/kube/fencegroupkube"
)

// Labels on Nodes and the budget in a PodDisruptionBudget, from a health
// cache (here a fixed status; in a controller, fencegroup.CLI and the
// health's Run).
func Example() {
	ctx := context.Background()
	// A client that reads the API server in a controller (client.New);
	// here controller-runtime's fake one.
	client := fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{"fencegroup.rook.io/rook-ceph": ""}}},
	).Build()
	status := &fencegroup.Status{
		NumPGs: 256, NumPools: 3,
		PGs: []fencegroup.PGCount{{State: "active+clean", Count: 250}, {State: "active+undersized+degraded", Count: 6}},
		Placement: []fencegroup.OSD{
			{ID: 0, Host: "worker-0", State: fencegroup.OSDUp},
			{ID: 1, Host: "worker-1", State: fencegroup.OSDDown},
		},
	}
	health, _ := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		return status, nil
	}), fencegroup.HealthOptions{})
	_, _ = health.Refresh(ctx)

	r := &fencegroupkube.Reconciler{
		Cluster:  "rook-ceph",
		Health:   health,
		Machines: &fencegroupkube.Nodes{Client: client},
		Budgets:  []fencegroupkube.BudgetWriter{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "rook-ceph"}},
	}
	res, err := r.Reconcile(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Applied {
		fmt.Println(c)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	_ = client.Get(ctx, crclient.ObjectKey{Namespace: "rook-ceph", Name: "fencegroup-rook-ceph"}, pdb)
	fmt.Printf("%s: maxUnavailable %s (%s)\n", pdb.Name, pdb.Spec.MaxUnavailable, pdb.Annotations[fencegroupkube.ReasonAnnotation])
	// Output:
	// add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0 of Ceph cluster rook-ceph)
	// add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1 of Ceph cluster rook-ceph)
	// remove fencegroup.rook.io/rook-ceph from gpu-0 (runs no OSD of Ceph cluster rook-ceph)
	// fencegroup-rook-ceph: maxUnavailable 0 (6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph)
}
