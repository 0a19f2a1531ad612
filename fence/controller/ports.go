package controller

import (
	"context"
	"errors"
	"time"

	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/flow"
)

// ErrConflict reports that a record changed since it was read (a stale
// Version) or that a record to create exists already. The controller drops
// its work on the node and looks again at the next pass: this is what keeps
// two controllers from fencing one node twice.
var ErrConflict = errors.New("conflict: the NodeFence changed")

// ErrNotFound reports that a node has no NodeFence record.
var ErrNotFound = errors.New("NodeFence not found")

// NodeHealth is a node's health as the controller sees it.
type NodeHealth struct {
	Name string
	// Ready is the node's Ready condition.
	Ready bool
	// Since is when Ready last changed (the condition's
	// lastTransitionTime).
	Since time.Time
	// ControlPlane is true for a control-plane node.
	ControlPlane bool
	// Unschedulable is true for a cordoned node (spec.unschedulable).
	Unschedulable bool
	// LeaseRenewed is when the node's kubelet last renewed its Lease (in
	// kube-node-lease), on the controller's clock: when the controller saw
	// the renewal, not the time the kubelet wrote, which a node's clock
	// could put anywhere (kube/fencekube's Leases does so). Zero when
	// unknown. With Options.LeaseGrace, a node whose lease is older than
	// the grace counts as dead.
	LeaseRenewed time.Time
	// Labels are the node's labels, for the policy gates. The controller
	// never changes them.
	Labels map[string]string
	// SystemUUID is the system UUID of the node's machine, as its kubelet
	// reports it (status.nodeInfo.systemUUID): a method whose device can
	// read its machine's identity switches nothing when they differ
	// (fence.Method.SystemUUID).
	SystemUUID string
	// Addresses are the node's InternalIP addresses (status.addresses): a
	// method whose plug is fence.PlugNodeAddresses gets them as its plug
	// (a Ceph blocklist's).
	Addresses []string

	staleLease bool // set by the controller: its lease is older than LeaseGrace
}

// StaleLease reports whether the controller took the node for dead by its
// lease (Options.LeaseGrace) when it last looked at it.
func (n NodeHealth) StaleLease() bool { return n.staleLease }

// Health tells the nodes' health. kube/fencekube implements it with an
// informer.
type Health interface {
	// Nodes returns every node. It is called once per pass and must be
	// cheap (a cache); the controller does not keep or change the slice.
	Nodes() []NodeHealth
}

// NodeHealthReader is a Health that can also read one node from its cache
// (kube/fencekube.Health can): Reconcile then looks at a healthy node
// without a record alone, without a pass over every node.
type NodeHealthReader interface {
	Node(name string) (NodeHealth, bool)
}

// Requests tells which nodes a health checker outside the controller asks
// to fence: Node Health Check's or Cluster API's remediation resources
// (kube/fencekube.Remediations). With Controller.Requests set, a node is
// fenced when, and only while, it is asked for: the controller's own timer
// (Options.UnhealthyAfter) starts no fencing, so that two remediators never
// act on one node. Recovery is the same either way: a fenced node that is
// ready again is recovered.
//
// A request asks for one fencing: a record that closed (the node fenced
// and recovered) at or after the request's time is that fencing, and the
// node is not fenced again until a newer request. This holds even when the
// requester has not yet seen the record close.
type Requests interface {
	// Requested reports whether the node's fencing is asked for, and since
	// when. It is called for every node at every pass and must be cheap (a
	// cache).
	Requested(node string) (since time.Time, ok bool)
}

// Store persists NodeFence records: a MemoryStore here, a custom resource
// in kube/fencekube. Records are values: the store copies what it is given
// and returns copies.
type Store interface {
	// List returns every record (it may come from a cache).
	List(ctx context.Context) ([]*flow.NodeFence, error)
	// Get returns the node's record, fresh: an error wrapping ErrNotFound
	// when there is none.
	Get(ctx context.Context, node string) (*flow.NodeFence, error)
	// Create stores a new record and returns it with its Version; an error
	// wrapping ErrConflict when the node has one already.
	Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error)
	// Update replaces the record whose Version is nf.Version and returns it
	// with its new Version; an error wrapping ErrConflict when the stored
	// Version differs (or ErrNotFound when it is gone).
	Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error)
	// Forget deletes the record of an abandoned fencing (one whose
	// Deleting is set), once its pods are restored; conflict rules as
	// Update. Forgetting a record that is gone is not an error.
	Forget(ctx context.Context, nf *flow.NodeFence) error
}

// ConfigSource gives the fence configuration (the node-fencing design's
// ConfigMaps, parsed with config.Parse). It may cache; a parse error is
// returned as is, and the controller then fences nothing that needs the
// configuration.
type ConfigSource interface {
	Config(ctx context.Context) (*config.Config, error)
}

// StaticConfig is a ConfigSource that always gives the same configuration.
type StaticConfig struct{ C *config.Config }

// Config returns s.C.
func (s StaticConfig) Config(context.Context) (*config.Config, error) { return s.C, nil }

// Pods carries out the pod treatment after a verified fence and undoes it.
// kube/fencekube implements two strategies: the out-of-service taint, and
// pod deletion. Both methods are idempotent.
type Pods interface {
	// Release releases the node's pods after a verified fence:
	// flow.ReleaseStorage after the node was isolated from its storage
	// (the pods that used that storage), flow.ReleasePower after it was
	// confirmed off (all its pods).
	Release(ctx context.Context, node string, r flow.Release) error
	// Restore undoes the treatment (removes the out-of-service taint) once
	// the node has recovered or its fencing is abandoned.
	Restore(ctx context.Context, node string) error
}

// Holder is a Pods that can keep a node unschedulable (kube/fencekube: a
// NoSchedule taint) from the admission of its fencing until it has been
// healthy for flow.Options.HealthyDelay after its recovery, so that a node
// that flaps takes no new pods in between. Both methods are idempotent. A
// Pods that is not a Holder holds nothing: the hold is recorded as done.
type Holder interface {
	Hold(ctx context.Context, node string) error
	Unhold(ctx context.Context, node string) error
}

// PodsWaiter is a Pods that can tell when a released node's pods are gone.
// The controller switches a fenced node on again (the second half of a
// reboot, or an "on" method after an "off" one) only once they are, or once
// flow.Options.PodsTimeout has passed, so that the node's replacement
// pods start while it is still off, as the Kubernetes non-graceful node
// shutdown design (KEP-2268) expects. A Pods that is not a PodsWaiter is
// taken to be done at once.
type PodsWaiter interface {
	// Gone reports whether the pods released by r are gone from the node
	// (deleted from the API) and its volumes detached; detail says what is
	// left, for the record and events.
	Gone(ctx context.Context, node string, r flow.Release) (gone bool, detail string, err error)
}

// ManualRequests is a Requests that tells a person's request from a health
// checker's (Cluster API's cluster.x-k8s.io/remediate-machine annotation
// on a node's Machine). A node a person asked to fence is fenced though it
// is Ready: its Ready condition is not read until devices powered it off
// (an isolation alone holds while the request stands). A
// health checker's request for a node that is Ready again is not acted
// on: the node recovered.
type ManualRequests interface {
	Manual(node string) bool
}

// PodsNotifier is a PodsWaiter that also tells when the wait may be over,
// so that the node is switched on again the moment its pods are gone, not
// at the next look. WatchPods watches the node's pods and the volume
// attachments until ctx ends, calling changed after each change that may
// end the wait (a pod of the node deleted or ended, a volume attachment
// deleted); it returns when ctx ends, or at once with an error when it
// cannot watch (the controller then looks again every 2 s).
type PodsNotifier interface {
	WatchPods(ctx context.Context, node string, changed func()) error
}

// Events records what happens to a node's fencing, for users (Kubernetes
// events in kube/fencekube). Messages never hold credentials.
type Events interface {
	Event(node string, warning bool, reason, message string)
}

// Kdump tells whether a node is dumping its kernel (fence/kdump's Listener
// implements it). A Kdump that also has a Forget(node string) method (as
// the Listener has) is told when a node's fencing is over (its record
// closed or deleted), so that the node's next dump starts a new hold
// instead of being judged by the first message of the old one.
type Kdump interface {
	Dumping(node string, now time.Time) (dumping bool, detail string)
}

// kdumpForgetter is a Kdump with Forget.
type kdumpForgetter interface {
	Forget(node string)
}

// Ledger is the list of fencings admitted, shared by every controller that
// uses one store, and written with optimistic concurrency: the policy gates
// count the fencings in flight across controllers, not only this process's
// (two controllers without leader election, or a new leader whose cache
// is behind, still admit no more than the policy allows).
type Ledger struct {
	// Admitted holds, by node, when its fencing step was admitted.
	Admitted map[string]time.Time
	// LastStorm is when a controller's storm guard (a gate that is a
	// policy.StormMemory) last saw a storm; zero for none. Every controller
	// restores it into its own guard before asking it, so that a new
	// leader honours the cooldown its predecessor started.
	LastStorm time.Time
	// Version is the store's opaque version of the ledger; empty for a
	// ledger never written.
	Version string
}

// Admissions keeps the Ledger. A Store that implements it (MemoryStore,
// and kube/fencekube's Admissions beside its Store) is used by the
// controller unless Controller.Admissions is set.
type Admissions interface {
	// Ledger reads the ledger, fresh (never from a cache); an empty one,
	// Version "", when none was written yet.
	Ledger(ctx context.Context) (Ledger, error)
	// SetLedger replaces the ledger whose version is l.Version (creating
	// it when that is ""), and returns it with its new Version; an error
	// wrapping ErrConflict when another controller wrote it since.
	SetLedger(ctx context.Context, l Ledger) (Ledger, error)
}

// StorageAddresses tells the addresses a node's storage clients use, where
// they differ from its Node's InternalIP addresses: with Multus or a holder
// pod the storage sees the node at other addresses, and blocklisting the
// InternalIP proves nothing (kube/fencekube's CSIAddonsNodes reads them
// from CSI-Addons' CSIAddonsNode objects).
type StorageAddresses interface {
	// StorageAddresses returns the node's addresses or CIDR prefixes as
	// the storage sees them, and what reports them (for the record); none
	// when nothing reports them (the InternalIP addresses are then used).
	// An error refuses the switch: the addresses are unknown.
	StorageAddresses(ctx context.Context, node string) (addrs []string, source string, err error)
}
