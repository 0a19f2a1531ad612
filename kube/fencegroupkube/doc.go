// Package fencegroupkube keeps a Ceph cluster's fence group in Kubernetes,
// as package fencegroup computes it: the label fencegroup.rook.io/<cluster>
// on the machines that run the cluster's OSDs, and the budget (maxUnavailable
// 1 when every PG is active+clean, else 0) in the object the host
// application wants it in.
//
// # Parts
//
// Every part reads and writes through a controller-runtime client that
// reads the API server (client.New on the manager's configuration, or a
// host's fake client in its tests): the lists go by pages, which a cache
// cannot serve, and a budget is compared with what the server holds.
//
// A MachineStore lists the machines and writes their labels: Nodes (a node
// also goes by its kubernetes.io/hostname), or Machines, cluster-api
// Machines of one namespace read as unstructured objects (OpenShiftMachines,
// machine.openshift.io/v1beta1 as the design has them;
// ClusterAPIMachinesV1Beta2, cluster.x-k8s.io/v1beta2, which Cluster API
// stores since v1.11; ClusterAPIMachines, its deprecated v1beta1; or
// another kind with the same fields; a Machine also goes by its
// status.nodeRef.name). A label
// is added or removed with a JSON merge patch that names that label only
// (LabelPatch), so other clients' labels are never touched, and writing it
// twice changes nothing.
//
// A BudgetWriter writes the budget: MachineDisruptionBudget, the design's
// healthchecking.openshift.io/v1alpha1 object whose spec.selector picks the
// labelled Machines, or PodDisruptionBudget, a policy/v1 budget as Rook
// keeps today (its selector picks pods: by default those carrying the
// fence-group label, or Rook's app=rook-ceph-osd). Both are named
// BudgetName(cluster) unless told otherwise, select with GroupSelector
// (the label, with the Exists operator), record the budget's reason in the
// ReasonAnnotation annotation, and are only written when something
// differs: read, compare, then create or update with the resourceVersion
// read, tried again a few times when another client wrote meanwhile.
//
// A Reconciler makes one pass from a health snapshot (a *fencegroup.Health
// shared with the fence controller's gate): it writes a budget of 0 first,
// adds labels, removes labels (never while the health is stale: a label is
// only removed on a fresh placement), and writes a budget of 1 last, so
// that the group stays protected while it changes. Run repeats it.
//
// # Permissions
//
// With Nodes and a PodDisruptionBudget, the identity needs list and patch on
// nodes, and get, create and update on poddisruptionbudgets in the budget's
// namespace (the integration tests reconcile with exactly that). With
// Machines and a MachineDisruptionBudget: list and patch on the Machines'
// resource, get, create and update on machinedisruptionbudgets.
//
// # Errors
//
// Every error of the package is an *Error naming the kind of object, the
// object, the operation and the field, wrapping the API server's error (so
// apierrors.IsForbidden and the like still work). A Reconcile whose step
// fails goes on with the others, which each protect on their own, and
// returns the errors joined.
package fencegroupkube
