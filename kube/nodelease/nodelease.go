// Package nodelease keeps one actor per node: the per-node Lease by which
// the remediation and maintenance operators of a cluster (medik8s's Node
// Health Check, its node-maintenance operator, self-node-remediation)
// agree that a single one of them works on a node at a time.
//
// The convention is medik8s's common lease package's: a
// coordination.k8s.io/v1 Lease named node-NAME (the node's name in lower
// case) in the namespace medik8s-leases, owned by the Node, whose
// spec.holderIdentity names the actor and whose spec.renewTime plus
// spec.leaseDurationSeconds is when it lapses. Whoever finds the lease
// absent, lapsed or its own takes or renews it; whoever finds another
// holder's valid lease leaves the node alone; the holder deletes it when
// done.
//
// fencekit holds a node's lease from the admission of its fencing to the
// end of its recovery: Manager.Gate takes it (a policy gate, asked before
// every step of a fencing, last of the gates), Manager.Run renews it while
// the node's record is open and deletes it once the record is closed. A
// fencing is refused, with the holder and the lapse in the reason, while
// another actor holds the node, with one exception that the operators
// agree on: a remediation that Node Health Check asked for shares Node
// Health Check's own lease (Options.Shared).
//
// One difference from medik8s's package, on the safe side: a lease whose
// renew time lies in the future (its holder's clock ahead of this
// process's) counts as held until its renew time plus its duration, where
// medik8s's package counts it lapsed and takes it over.
package nodelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/policy"
)

// Defaults of Options.
const (
	// DefaultNamespace is the namespace of the node leases (medik8s's
	// default; its operators read LEASE_NAMESPACE to change it).
	DefaultNamespace = "medik8s-leases"
	// DefaultHolder is fencekit's holder identity.
	DefaultHolder = "fencekit"
	// DefaultDuration is the length of the leases fencekit takes: a
	// controller that dies leaves the node to the others this long after
	// its last renewal. It renews at a third of it.
	DefaultDuration = 2 * time.Minute
)

// GateNodeLease names the refusals of Manager.Gate.
const GateNodeLease = "node-lease"

// Name returns the name of node's Lease: node-NAME in lower case.
func Name(node string) string { return strings.ToLower("node-" + node) }

// Options tune a Manager. The zero value takes the defaults.
type Options struct {
	// Namespace holds the leases; "" means DefaultNamespace.
	Namespace string
	// Holder is this actor's identity in the leases; "" means
	// DefaultHolder. Every replica of one controller gives the same, so
	// that a new leader renews what its predecessor took.
	Holder string
	// Duration is the length of the leases taken; 0 means
	// DefaultDuration. Below 3 s is refused.
	Duration time.Duration
	// Shared, when set, returns the holders whose lease a fencing of node
	// shares instead of taking its own: Node Health Check's
	// (NodeHealthCheck-NAME) while a remediation it owns asks for the
	// node. A lease such a holder has is neither taken over nor renewed
	// nor deleted: it is its owner's.
	Shared func(node string) []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per lease taken, renewed late or released
	// (discarded when nil).
	Logger *slog.Logger
}

// RBAC: deploy/node-lease.yaml, applied on its own (kustomize would move
// its Role into the controller's namespace): the namespace, and a Role in it
// to get, list, create, update and delete its Leases. The Node is read for
// the owner reference (the controller reads Nodes anyway).

// Manager takes, renews and releases fencekit's node leases. It is safe
// for concurrent use.
type Manager struct {
	c    client.Client
	opts Options
	log  *slog.Logger
}

// New returns a Manager that reads and writes the leases through c (a
// client that reads the API server, not a cache: a lease is judged on its
// latest write).
func New(c client.Client, opts Options) (*Manager, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Holder == "" {
		opts.Holder = DefaultHolder
	}
	if opts.Duration == 0 {
		opts.Duration = DefaultDuration
	}
	if opts.Duration < 3*time.Second {
		return nil, fmt.Errorf("nodelease: the lease duration %s is under 3s", opts.Duration)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{c: c, opts: opts, log: log}, nil
}

// Holder returns this actor's holder identity.
func (m *Manager) Holder() string { return m.opts.Holder }

// HeldError is the refusal of a node another actor holds.
type HeldError struct {
	Node, Holder string
	// Until is when the holder's lease lapses unless renewed.
	Until time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("node %s is held by %s (its Lease %s lapses at %s unless renewed)",
		e.Node, e.Holder, Name(e.Node), e.Until.UTC().Format(time.RFC3339))
}

// lapse returns when l lapses, and whether it has the fields to say.
func lapse(l *coordinationv1.Lease) (time.Time, bool) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second), true
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Acquire takes node's lease for this holder, or renews it when this
// holder has it and a third of its duration has passed since its last
// renewal. It returns nil, without writing, when a holder of
// Options.Shared has it; a *HeldError when another holder's lease is
// valid; any other error when the lease cannot be read or written (the
// caller refuses: it cannot know who holds the node).
func (m *Manager) Acquire(ctx context.Context, node string) error {
	now := m.opts.Now()
	var l coordinationv1.Lease
	err := m.c.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: Name(node)}, &l)
	if apierrors.IsNotFound(err) {
		return m.create(ctx, node, now)
	}
	if err != nil {
		return fmt.Errorf("reading the Lease %s/%s: %w", m.opts.Namespace, Name(node), err)
	}
	h := holder(&l)
	until, ok := lapse(&l)
	if h != m.opts.Holder && h != "" && ok && now.Before(until) {
		if m.opts.Shared != nil && slices.Contains(m.opts.Shared(node), h) {
			return nil
		}
		return &HeldError{Node: node, Holder: h, Until: until}
	}
	if h == m.opts.Holder && ok && l.Spec.RenewTime.Add(m.opts.Duration/3).After(now) &&
		!l.Spec.RenewTime.After(now) && until.Sub(now) >= m.opts.Duration*2/3 {
		return nil // renewed lately
	}
	mt := metav1.NewMicroTime(now)
	if h != m.opts.Holder || !ok {
		// Taken over (a lapsed lease of another, or one without a
		// holder): a transition, as medik8s's package counts them.
		l.Spec.AcquireTime = &mt
		n := int32(1)
		if l.Spec.LeaseTransitions != nil {
			n = *l.Spec.LeaseTransitions + 1
		}
		l.Spec.LeaseTransitions = &n
	}
	l.Spec.HolderIdentity = &m.opts.Holder
	secs := int32(m.opts.Duration / time.Second)
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &mt
	if ref, ok := m.owner(ctx, node); ok {
		l.OwnerReferences = []metav1.OwnerReference{ref}
	}
	// The update carries the resourceVersion read: another actor's write
	// in between is a conflict, never overwritten.
	if err := m.c.Update(ctx, &l); err != nil {
		return fmt.Errorf("taking the Lease %s/%s (held by %q before): %w", m.opts.Namespace, Name(node), h, err)
	}
	m.note(node, h != m.opts.Holder)
	return nil
}

func (m *Manager) create(ctx context.Context, node string, now time.Time) error {
	mt := metav1.NewMicroTime(now)
	secs := int32(m.opts.Duration / time.Second)
	zero := int32(0)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.opts.Namespace, Name: Name(node)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &m.opts.Holder, LeaseDurationSeconds: &secs,
			AcquireTime: &mt, RenewTime: &mt, LeaseTransitions: &zero},
	}
	if ref, ok := m.owner(ctx, node); ok {
		l.OwnerReferences = []metav1.OwnerReference{ref}
	}
	err := m.c.Create(ctx, l)
	if apierrors.IsNotFound(err) {
		// No namespace yet: created, as medik8s's package does at its
		// start (deploy/node-lease.yaml creates it beforehand for a
		// controller that may not create namespaces).
		nerr := m.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.opts.Namespace}})
		if nerr != nil && !apierrors.IsAlreadyExists(nerr) {
			return fmt.Errorf("the namespace %s of the node leases does not exist and cannot be created (apply deploy/node-lease.yaml): %w", m.opts.Namespace, nerr)
		}
		err = m.c.Create(ctx, l)
	}
	if err != nil {
		// AlreadyExists: another actor created it in between; the next
		// pass reads whose it is.
		return fmt.Errorf("creating the Lease %s/%s: %w", m.opts.Namespace, Name(node), err)
	}
	m.note(node, true)
	return nil
}

func (m *Manager) note(node string, taken bool) {
	if taken {
		m.log.Info("node lease taken", "node", node, "lease", m.opts.Namespace+"/"+Name(node), "holder", m.opts.Holder)
	}
}

// owner returns the Node as the lease's owner (as medik8s's package
// writes it: the lease goes with the Node); false when the Node cannot be
// read (the lease is written without).
func (m *Manager) owner(ctx context.Context, node string) (metav1.OwnerReference, bool) {
	var n corev1.Node
	if err := m.c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return metav1.OwnerReference{}, false
	}
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}, true
}

// Release deletes node's lease if this holder has it (with a
// precondition on its resourceVersion, so that a lease another actor took
// in between stays). A lease that is absent, or another's, is left.
func (m *Manager) Release(ctx context.Context, node string) error {
	var l coordinationv1.Lease
	err := m.c.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: Name(node)}, &l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the Lease %s/%s: %w", m.opts.Namespace, Name(node), err)
	}
	if holder(&l) != m.opts.Holder {
		return nil
	}
	err = m.c.Delete(ctx, &l, client.Preconditions{ResourceVersion: &l.ResourceVersion, UID: &l.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing the Lease %s/%s: %w", m.opts.Namespace, Name(node), err)
	}
	m.log.Info("node lease released", "node", node, "lease", m.opts.Namespace+"/"+Name(node))
	return nil
}

// Sync renews the lease of every node of open that this holder has, and
// releases this holder's leases of every other node: open is the set of
// nodes whose fencing is open (admitted and not yet recovered). The
// leases are listed from the namespace, so that a new leader releases
// what its predecessor took. A node of open whose lease is absent is not
// taken here: the gate takes it before the next step.
func (m *Manager) Sync(ctx context.Context, open map[string]bool) error {
	var ls coordinationv1.LeaseList
	if err := m.c.List(ctx, &ls, client.InNamespace(m.opts.Namespace)); err != nil {
		return fmt.Errorf("listing the Leases of %s: %w", m.opts.Namespace, err)
	}
	byLease := make(map[string]string, len(open))
	for n, ok := range open {
		if ok {
			byLease[Name(n)] = n
		}
	}
	var errs []error
	for i := range ls.Items {
		l := &ls.Items[i]
		if holder(l) != m.opts.Holder {
			continue
		}
		if node, ok := byLease[l.Name]; ok {
			if err := m.Acquire(ctx, node); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		err := m.c.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion, UID: &l.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("releasing the Lease %s/%s: %w", m.opts.Namespace, l.Name, err))
			continue
		}
		m.log.Info("node lease released", "lease", m.opts.Namespace+"/"+l.Name)
	}
	return errors.Join(errs...)
}

// Run calls Sync with the nodes open returns every third of the lease duration until ctx
// ends; errors are logged, and tried again at the next round.
func (m *Manager) Run(ctx context.Context, open func(context.Context) (map[string]bool, error)) error {
	t := time.NewTicker(m.opts.Duration / 3)
	defer t.Stop()
	for {
		nodes, err := open(ctx)
		if err == nil {
			err = m.Sync(ctx, nodes)
		}
		if err != nil && ctx.Err() == nil {
			m.log.Warn("node leases: not renewed or released this round", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Gate returns the policy gate that takes the candidate's lease, and
// refuses while another actor holds the node or while its lease cannot be
// read or written. Put it last among the gates (policy.All asks them in
// order and stops at the first refusal): a lease is then taken only for a
// fencing every other gate admitted.
func (m *Manager) Gate() policy.Gate {
	return policy.GateFunc(func(ctx context.Context, c policy.Candidate, _ policy.Cluster) policy.Decision {
		err := m.Acquire(ctx, c.Node.Name)
		var held *HeldError
		switch {
		case err == nil:
			return policy.Admitted()
		case errors.As(err, &held):
			d := policy.Refuse(GateNodeLease, "%s: another actor works on the node (a remediation or a maintenance); fencekit acts once its lease is released or lapses", held.Error())
			if wait := held.Until.Sub(m.opts.Now()); wait > 0 {
				d.RetryAfter = wait
			}
			return d
		default:
			return policy.Refuse(GateNodeLease, "node %s: whether another actor holds it is unknown: %v", c.Node.Name, err)
		}
	})
}
