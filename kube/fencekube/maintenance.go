package fencekube

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/policy"
)

// NodeMaintenanceResource is the resource of medik8s' node-maintenance-
// operator: a cluster-scoped NodeMaintenance names a node (spec.nodeName)
// that someone is working on (spec.reason).
var NodeMaintenanceResource = schema.GroupVersionResource{Group: "nodemaintenance.medik8s.io", Version: "v1beta1", Resource: "nodemaintenances"}

// RBAC: the NodeMaintenances of medik8s' node-maintenance-operator, listed
// every few seconds while a fencing asks; nothing when the operator is not
// installed.
// +kubebuilder:rbac:groups=nodemaintenance.medik8s.io,resources=nodemaintenances,verbs=list

// NodeMaintenances reads the NodeMaintenance objects for the gate
// policy.UnderMaintenance (its List is a policy.MaintenanceSource). A
// cluster without the resource (the operator not installed) has none. A
// list is kept for TTL: the gate asks at every admission.
type NodeMaintenances struct {
	// Client reads the API server (a manager's APIReader).
	Client client.Reader
	// TTL is how long a list is kept (default 5 s).
	TTL time.Duration

	mu   sync.Mutex
	at   time.Time
	last []policy.Maintenance
}

// List returns the maintenances in force (policy.MaintenanceSource).
func (n *NodeMaintenances) List(ctx context.Context) ([]policy.Maintenance, error) {
	ttl := n.TTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	n.mu.Lock()
	if !n.at.IsZero() && time.Since(n.at) < ttl {
		defer n.mu.Unlock()
		return n.last, nil
	}
	n.mu.Unlock()
	l := kubeobj.List(NodeMaintenanceResource.GroupVersion().WithKind("NodeMaintenance"))
	err := n.Client.List(ctx, l)
	var out []policy.Maintenance
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// No such resource: the operator is not installed.
	case err != nil:
		return nil, fmt.Errorf("listing the NodeMaintenances (%s): %w", NodeMaintenanceResource.GroupResource(), err)
	default:
		for i := range l.Items {
			u := &l.Items[i]
			if u.GetDeletionTimestamp() != nil {
				continue
			}
			node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
			reason, _, _ := unstructured.NestedString(u.Object, "spec", "reason")
			if node != "" {
				out = append(out, policy.Maintenance{Node: node, Name: u.GetName(), Reason: clip(reason, 256)})
			}
		}
	}
	n.mu.Lock()
	n.at, n.last = time.Now(), out
	n.mu.Unlock()
	return out, nil
}
