// Package teardowntest holds in-memory implementations of the ports of
// package teardown (Cluster, Etcd, Provisioner), for tests, examples and
// dry runs of a teardown; fence/fencetest's Clock is the fake clock they
// run on. Each is safe for concurrent use and
// takes a Hook for fault injection: a function called before every
// operation whose error fails it. Hooks may be called concurrently (the
// executor reads the health of a cluster's members at once) and outside the
// fake's lock, so a hook may call the fake's methods.
//
//	clock := fencetest.NewClock(time.Now())
//	cluster := teardowntest.NewCluster()
//	cluster.Now = clock.Now // kubelets renew their leases until labelled
//	cluster.AddNode(teardown.Node{Name: "node-3", Labels: ...}, pods...)
//	x := &teardown.Executor{Cluster: cluster, Now: clock.Now, Sleep: clock.Sleep, ...}
package teardowntest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/fencekit/fencekit/teardown"
)

// Cluster operations, as a Hook sees them.
const (
	OpNode       = "node"
	OpPods       = "pods"
	OpDrain      = "drain"
	OpSetLabels  = "set-labels"
	OpDeleteNode = "delete-node"
)

// Cluster is an in-memory teardown.Cluster: nodes and the pods bound to
// them. Drain follows kubectl drain's rules on the fake's pods: it cordons,
// leaves DaemonSet pods (with IgnoreDaemonSets) and mirror pods, refuses
// DaemonSet pods without IgnoreDaemonSets and pods no controller manages
// without Force, fails on a pod Block was called for (a
// PodDisruptionBudget that never allows the eviction), and removes the
// others, reporting progress.
type Cluster struct {
	// Now, when set, runs a kubelet on every node: each read of a node
	// renews its lease and heartbeat to Now() unless the node carries
	// promenade-decomission=enabled (the kubelet then stops, unless
	// KeepKubelet says it does not) or its kubelet was stopped with
	// StopKubelet.
	Now func() time.Time
	// Hook, when set, is called before every operation with its name (the
	// Op constants) and the node; its error fails the operation.
	Hook func(op, node string) error

	mu        sync.Mutex
	nodes     map[string]*teardown.Node
	pods      map[string][]teardown.Pod
	unmanaged map[string]bool
	blocked   map[string]bool
	stopped   map[string]bool
	keep      map[string]bool
	calls     []string
}

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{nodes: map[string]*teardown.Node{}, pods: map[string][]teardown.Pod{},
		unmanaged: map[string]bool{}, blocked: map[string]bool{}, stopped: map[string]bool{}, keep: map[string]bool{}}
}

// AddNode adds (or replaces) a node and the pods bound to it.
func (c *Cluster) AddNode(n teardown.Node, pods ...teardown.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.Labels = maps.Clone(n.Labels)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Addresses = slices.Clone(n.Addresses)
	c.nodes[n.Name] = &n
	c.pods[n.Name] = slices.Clone(pods)
}

// SetPods replaces the pods bound to a node.
func (c *Cluster) SetPods(node string, pods ...teardown.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[node] = slices.Clone(pods)
}

// Unmanaged marks a pod (namespace/name) as managed by no controller: a
// drain deletes it only with Force.
func (c *Cluster) Unmanaged(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unmanaged[pod] = true
}

// Block makes the eviction of a pod (namespace/name) fail, as a
// PodDisruptionBudget that allows no disruption does.
func (c *Cluster) Block(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocked[pod] = true
}

// StopKubelet stops (or with false, restarts) a node's kubelet: its lease
// is no longer renewed.
func (c *Cluster) StopKubelet(node string, stop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped[node] = stop
}

// KeepKubelet makes a node's kubelet ignore (or with false, obey) the
// decommission label, as when the DaemonSet that stops it cannot run.
func (c *Cluster) KeepKubelet(node string, keep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep[node] = keep
}

// Get returns a copy of a node, and whether it exists.
func (c *Cluster) Get(node string) (teardown.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[node]
	if !ok {
		return teardown.Node{}, false
	}
	return copyNode(n), true
}

// PodsOf returns a copy of the pods bound to a node.
func (c *Cluster) PodsOf(node string) []teardown.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pods[node])
}

// Calls returns the operations done so far, as "op node".
func (c *Cluster) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func copyNode(n *teardown.Node) teardown.Node {
	x := *n
	x.Labels = maps.Clone(n.Labels)
	x.Addresses = slices.Clone(n.Addresses)
	return x
}

// enter records a call, runs the hook and checks ctx; c.mu is not held.
func (c *Cluster) enter(ctx context.Context, op, node string) error {
	c.mu.Lock()
	c.calls = append(c.calls, op+" "+node)
	c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Hook != nil {
		return c.Hook(op, node)
	}
	return nil
}

// node returns the node or an error wrapping teardown.ErrNodeNotFound;
// c.mu is held.
func (c *Cluster) node(name string) (*teardown.Node, error) {
	n, ok := c.nodes[name]
	if !ok {
		return nil, fmt.Errorf("node %q: %w", name, teardown.ErrNodeNotFound)
	}
	return n, nil
}

// Node returns a copy of the node, first renewing its lease if its kubelet
// runs (see Cluster.Now).
func (c *Cluster) Node(ctx context.Context, name string) (*teardown.Node, error) {
	if err := c.enter(ctx, OpNode, name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(name)
	if err != nil {
		return nil, err
	}
	labelled := n.Labels[teardown.DecommissionLabel] == teardown.DecommissionValue
	if c.Now != nil && !c.stopped[name] && (!labelled || c.keep[name]) {
		now := c.Now()
		n.LeaseRenewed, n.LastHeartbeat, n.KubeletReady = now, now, true
	}
	x := copyNode(n)
	return &x, nil
}

// Pods returns the pods bound to the node.
func (c *Cluster) Pods(ctx context.Context, name string) ([]teardown.Pod, error) {
	if err := c.enter(ctx, OpPods, name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.node(name); err != nil {
		return nil, err
	}
	return slices.Clone(c.pods[name]), nil
}

// Drain cordons the node and removes its pods as kubectl drain would (see
// Cluster).
func (c *Cluster) Drain(ctx context.Context, name string, opts teardown.DrainOptions, progress func(teardown.DrainProgress)) error {
	if err := c.enter(ctx, OpDrain, name); err != nil {
		return err
	}
	c.mu.Lock()
	n, err := c.node(name)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	n.Unschedulable = true
	var keep []teardown.Pod
	var evicted []string
	var errs []error
	for _, p := range c.pods[name] {
		id := p.Namespace + "/" + p.Name
		switch {
		case p.Mirror:
			keep = append(keep, p)
		case p.DaemonSet && opts.IgnoreDaemonSets:
			keep = append(keep, p)
		case p.DaemonSet:
			keep = append(keep, p)
			errs = append(errs, fmt.Errorf("cannot delete DaemonSet-managed pod %s (use IgnoreDaemonSets)", id))
		case c.unmanaged[id] && !opts.Force:
			keep = append(keep, p)
			errs = append(errs, fmt.Errorf("cannot delete pod %s: not managed by a controller (use Force)", id))
		case c.blocked[id]:
			keep = append(keep, p)
			errs = append(errs, fmt.Errorf("cannot evict pod %s: it would violate the pod's disruption budget", id))
		default:
			evicted = append(evicted, id)
		}
	}
	c.pods[name] = keep
	c.mu.Unlock()
	if progress != nil && len(evicted) > 0 {
		progress(teardown.DrainProgress{Node: name, Pending: len(errs), Done: evicted,
			Message: fmt.Sprintf("evicted %d pods from %s", len(evicted), name)})
	}
	if len(errs) > 0 {
		return fmt.Errorf("drain node %s: %w", name, errors.Join(errs...))
	}
	return nil
}

// SetLabels sets or removes labels on the node.
func (c *Cluster) SetLabels(ctx context.Context, name string, labels map[string]*string) error {
	if err := c.enter(ctx, OpSetLabels, name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(name)
	if err != nil {
		return err
	}
	for k, v := range labels {
		if v == nil {
			delete(n.Labels, k)
		} else {
			n.Labels[k] = *v
		}
	}
	return nil
}

// DeleteNode deletes the node and its pods.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	if err := c.enter(ctx, OpDeleteNode, name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.node(name); err != nil {
		return err
	}
	delete(c.nodes, name)
	delete(c.pods, name)
	return nil
}

// Etcd operations, as a Hook sees them.
const (
	OpMembers      = "members"
	OpRemoveMember = "remove-member"
	OpMemberHealth = "member-health"
)

// Etcd is an in-memory etcd cluster: a member list and each member's
// health.
type Etcd struct {
	// Hook, when set, is called before every operation with its name (the
	// Op constants) and the member's ID (0 for OpMembers); its error fails
	// the operation.
	Hook func(op string, id uint64) error

	mu      sync.Mutex
	members []teardown.Member
	health  map[uint64]error
	removed []uint64
}

// NewEtcd returns a cluster of the members, all healthy.
func NewEtcd(members ...teardown.Member) *Etcd {
	return &Etcd{members: slices.Clone(members), health: map[uint64]error{}}
}

// SetHealth makes a member unhealthy (err not nil) or healthy (nil).
func (e *Etcd) SetHealth(id uint64, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.health[id] = err
}

// Removed returns the IDs removed so far, in order.
func (e *Etcd) Removed() []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.removed)
}

func (e *Etcd) enter(ctx context.Context, op string, id uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.Hook != nil {
		return e.Hook(op, id)
	}
	return nil
}

// Members returns a copy of the member list.
func (e *Etcd) Members(ctx context.Context) ([]teardown.Member, error) {
	if err := e.enter(ctx, OpMembers, 0); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]teardown.Member, len(e.members))
	for i, m := range e.members {
		m.PeerURLs, m.ClientURLs = slices.Clone(m.PeerURLs), slices.Clone(m.ClientURLs)
		out[i] = m
	}
	return out, nil
}

// RemoveMember removes a member; an unknown ID is an error wrapping
// teardown.ErrMemberNotFound.
func (e *Etcd) RemoveMember(ctx context.Context, id uint64) error {
	if err := e.enter(ctx, OpRemoveMember, id); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.members, func(m teardown.Member) bool { return m.ID == id })
	if i < 0 {
		return fmt.Errorf("member %x: %w", id, teardown.ErrMemberNotFound)
	}
	e.members = slices.Delete(e.members, i, i+1)
	e.removed = append(e.removed, id)
	return nil
}

// MemberHealth returns the member's health as set by SetHealth; a member
// no longer in the cluster is unhealthy.
func (e *Etcd) MemberHealth(ctx context.Context, m teardown.Member) error {
	if err := e.enter(ctx, OpMemberHealth, m.ID); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.ContainsFunc(e.members, func(x teardown.Member) bool { return x.ID == m.ID }) {
		return fmt.Errorf("member %x: %w", m.ID, teardown.ErrMemberNotFound)
	}
	return e.health[m.ID]
}

// Provisioner is an in-memory teardown.Provisioner: it records which nodes
// it destroyed and how, and which it released.
type Provisioner struct {
	// Hook, when set, is called before every Destroy; its error fails it.
	Hook func(node string, opts teardown.DestroyOptions) error
	// ReleaseHook, when set, is called before every Release; its error
	// fails it.
	ReleaseHook func(node string) error

	mu        sync.Mutex
	destroyed map[string]teardown.DestroyOptions
	released  map[string]bool
	calls     int
}

// Destroy records the node as destroyed with opts; destroying it again is
// not an error.
func (p *Provisioner) Destroy(ctx context.Context, node string, opts teardown.DestroyOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.Hook != nil {
		if err := p.Hook(node, opts); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed == nil {
		p.destroyed = map[string]teardown.DestroyOptions{}
	}
	p.destroyed[node] = opts
	p.calls++
	return nil
}

// Release records the node as released; releasing it again is not an
// error.
func (p *Provisioner) Release(ctx context.Context, node string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.ReleaseHook != nil {
		if err := p.ReleaseHook(node); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released == nil {
		p.released = map[string]bool{}
	}
	p.released[node] = true
	return nil
}

// Destroyed returns how a node was wiped, and whether it was destroyed.
func (p *Provisioner) Destroyed(node string) (teardown.Wipe, bool) {
	o, ok := p.DestroyedWith(node)
	return o.Wipe, ok
}

// DestroyedWith returns the options of a node's last destroy, and whether
// it was destroyed.
func (p *Provisioner) DestroyedWith(node string) (teardown.DestroyOptions, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.destroyed[node]
	return o, ok
}

// Released reports whether the node was released.
func (p *Provisioner) Released(node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.released[node]
}

// Calls counts the successful Destroy calls.
func (p *Provisioner) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

var (
	_ teardown.Cluster     = (*Cluster)(nil)
	_ teardown.Etcd        = (*Etcd)(nil)
	_ teardown.Provisioner = (*Provisioner)(nil)
)
