package networkfence

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/controller"
)

// CSIAddonsNodeKind is CSI-Addons' CSIAddonsNode: one per CSI driver's
// sidecar on a node, whose status.networkFenceClientStatus lists the CIDRs
// the storage sees the node's clients at.
var CSIAddonsNodeKind = schema.GroupVersionKind{Group: "csiaddons.openshift.io", Version: "v1alpha1", Kind: "CSIAddonsNode"}

// RBAC: the CSIAddonsNodes, listed for the addresses the storage sees of a
// node (a storage isolation's plug).
// +kubebuilder:rbac:groups=csiaddons.openshift.io,resources=csiaddonsnodes,verbs=list

// Clients tells the addresses the storage sees of a node from CSI-Addons'
// CSIAddonsNode objects (controller.StorageAddresses): the CIDRs of every
// client detail of status.networkFenceClientStatus of the CSIAddonsNodes
// whose spec.driver.nodeID is the node, in every namespace. With Multus
// or a holder pod these are not the Node's InternalIP addresses, and a
// blocklist of the InternalIP proves nothing. A cluster without the
// CSIAddonsNode kind, or without one for the node, reports none (the
// InternalIP addresses are used, and the record says so).
type Clients struct {
	// Reader lists the CSIAddonsNodes; it should read the API server (a
	// manager's APIReader): an isolation is judged on the latest report.
	Reader client.Reader
}

var _ controller.StorageAddresses = (*Clients)(nil)

// StorageAddresses returns node's CIDRs as CSI-Addons reports them, sorted
// and without repeats, and the CSIAddonsNodes that report them.
func (c *Clients) StorageAddresses(ctx context.Context, node string) ([]string, string, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(CSIAddonsNodeKind.GroupVersion().WithKind(CSIAddonsNodeKind.Kind + "List"))
	if err := c.Reader.List(ctx, l); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, "", nil // CSI-Addons is not installed
		}
		return nil, "", fmt.Errorf("listing the CSIAddonsNodes: %w", err)
	}
	var cidrs, from []string
	for i := range l.Items {
		u := &l.Items[i]
		id, _, _ := unstructured.NestedString(u.Object, "spec", "driver", "nodeID")
		if id != node {
			continue
		}
		statuses, _, err := unstructured.NestedSlice(u.Object, "status", "networkFenceClientStatus")
		if err != nil {
			return nil, "", fmt.Errorf("CSIAddonsNode %s/%s: status.networkFenceClientStatus: %w", u.GetNamespace(), u.GetName(), err)
		}
		n := len(cidrs)
		for _, st := range statuses {
			m, _ := st.(map[string]any)
			details, _, _ := unstructured.NestedSlice(m, "ClientDetails")
			for _, d := range details {
				dm, _ := d.(map[string]any)
				cs, _, err := unstructured.NestedStringSlice(dm, "cidrs")
				if err != nil {
					return nil, "", fmt.Errorf("CSIAddonsNode %s/%s: a client's cidrs: %w", u.GetNamespace(), u.GetName(), err)
				}
				cidrs = append(cidrs, cs...)
			}
		}
		if len(cidrs) > n {
			from = append(from, u.GetNamespace()+"/"+u.GetName())
		}
	}
	if len(cidrs) == 0 {
		return nil, "", nil
	}
	slices.Sort(cidrs)
	slices.Sort(from)
	return slices.Compact(cidrs), "CSIAddonsNode " + strings.Join(from, ", ") + ", as the storage sees the node", nil
}
