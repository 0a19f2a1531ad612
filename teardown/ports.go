package teardown

import (
	"context"
	"errors"
	"time"
)

// ErrNodeNotFound reports that the node does not exist in the cluster (the
// teardown design's 404 NotFound). Ports wrap it.
var ErrNodeNotFound = errors.New("node not found")

// Node is what a teardown needs to know about a Kubernetes node.
type Node struct {
	// Name is the node's name (the teardown design's node_id: its hostname).
	Name string
	// Unschedulable is true when the node is cordoned.
	Unschedulable bool
	// Labels are the node's labels.
	Labels map[string]string
	// KubeletReady is true when the node's Ready condition is True.
	KubeletReady bool
	// LastHeartbeat is the Ready condition's last heartbeat time.
	LastHeartbeat time.Time
	// LeaseRenewed is the renew time of the node's Lease in
	// kube-node-lease, zero when there is none.
	LeaseRenewed time.Time
	// Addresses are the node's addresses (status.addresses: InternalIP,
	// ExternalIP, Hostname), in any order; may be empty. The remove-etcd
	// step matches etcd members' URLs against them.
	Addresses []string
}

// Pod is a pod bound to a node, as a teardown sees it.
type Pod struct {
	Namespace, Name string
	// DaemonSet is true when a DaemonSet controls the pod.
	DaemonSet bool
	// Mirror is true for a static (mirror) pod.
	Mirror bool
	// Terminating is true when the pod has a deletion timestamp.
	Terminating bool
	// Finished is true when the pod succeeded or failed.
	Finished bool
}

// DrainOptions are kubectl drain's settings.
type DrainOptions struct {
	// Timeout bounds the whole drain (kubectl drain --timeout).
	Timeout time.Duration
	// GracePeriod is given to every evicted pod (--grace-period); zero
	// leaves each pod its own terminationGracePeriodSeconds, as kubectl
	// does.
	GracePeriod time.Duration
	// Force also deletes pods that no controller manages (--force).
	Force bool
	// IgnoreDaemonSets leaves DaemonSet pods in place (--ignore-daemonsets).
	IgnoreDaemonSets bool
	// DeleteEmptyDirData allows evicting pods with emptyDir volumes
	// (--delete-emptydir-data, formerly --delete-local-data).
	DeleteEmptyDirData bool
}

// DrainProgress is reported while a drain runs.
type DrainProgress struct {
	// Node is the node being drained.
	Node string
	// Pending is the number of pods still to leave the node.
	Pending int
	// Done names the pods (namespace/name) that left since the last report.
	Done []string
	// Message is a readable line, such as kubectl drain prints.
	Message string
}

// Cluster is the Kubernetes side of a teardown. kube/teardownkube
// implements it with client-go; every method returns an error wrapping
// ErrNodeNotFound when the node does not exist.
type Cluster interface {
	// Node returns the node.
	Node(ctx context.Context, name string) (*Node, error)
	// Pods lists the pods bound to the node.
	Pods(ctx context.Context, name string) ([]Pod, error)
	// Drain cordons the node and evicts (or, with Force, deletes) its pods
	// with kubectl drain's semantics, respecting PodDisruptionBudgets, and
	// reports progress when progress is not nil. It returns when no pod
	// that the options cover is left, or with an error.
	Drain(ctx context.Context, name string, opts DrainOptions, progress func(DrainProgress)) error
	// SetLabels sets (value non-nil) or removes (value nil) labels on the
	// node in one update. Removing an absent label is not an error.
	SetLabels(ctx context.Context, name string, labels map[string]*string) error
	// DeleteNode deletes the Node object.
	DeleteNode(ctx context.Context, name string) error
}

// Member is one member of an etcd cluster.
type Member struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// Etcd is one etcd cluster. teardown/etcdv3 implements it with the etcd v3
// client.
type Etcd interface {
	// Members lists the cluster's members.
	Members(ctx context.Context) ([]Member, error)
	// RemoveMember removes a member by ID.
	RemoveMember(ctx context.Context, id uint64) error
	// MemberHealth returns nil when the member answers as healthy (serves a
	// linearizable read and has no alarm), an error saying why otherwise.
	MemberHealth(ctx context.Context, m Member) error
}

// Wipe says which disks a destroy wipes.
type Wipe uint8

const (
	// WipeAll wipes every local disk (the teardown design's default, per
	// datacenter policy for reuse).
	WipeAll Wipe = iota
	// WipeOSDisk wipes only the OS disk (preserve-local-storage).
	WipeOSDisk
)

// DestroyOptions are what a destroy is asked to do.
type DestroyOptions struct {
	// Wipe says which disks to wipe.
	Wipe Wipe
	// Revision is the ID of the design revision the node will be
	// redeployed with (the teardown design's design_id, which Drydock's
	// destroy node takes beside the node); 0 when the executor has no
	// revision store. A provisioner records it with the node.
	Revision int
}

// Provisioner resets a server to a re-provisionable state (the teardown
// design's Drydock destroy node), in the design's order: Destroy wipes the
// disks while the provisioner still holds the server, the node is then shut
// down (the power-off step, verified through the fence core), and Release
// removes it from the provisioner last, so that a server is never released
// while it may still run.
type Provisioner interface {
	// Destroy wipes the node's disks as asked, for the design revision,
	// and returns once the provisioner reports the wipe done. Destroying a
	// node already destroyed for the same options is not an error
	// (reruns).
	Destroy(ctx context.Context, node string, opts DestroyOptions) error
	// Release removes the node from the provisioner. It is called only
	// after the node was confirmed off. Releasing a node the provisioner
	// no longer holds is not an error (reruns).
	Release(ctx context.Context, node string) error
}

// Tag is a revision tag such as site-action-success with body
// "dag_id:<id>".
type Tag struct {
	Name string
	Body string
}

// Revision is one revision of the site design.
type Revision struct {
	ID        int
	Committed bool
	Tags      []Tag
	Created   time.Time
}

// RevisionStore holds the design revisions and their tags (Deckhand, in
// Airship's teardown design). NewMemoryRevisions is an in-memory one.
type RevisionStore interface {
	// Revisions lists every revision, oldest first.
	Revisions(ctx context.Context) ([]Revision, error)
	// AddTag tags a revision.
	AddTag(ctx context.Context, id int, tag Tag) error
}
