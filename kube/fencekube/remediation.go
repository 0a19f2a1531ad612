package fencekube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/policy"
)

// RemediationResource is the resource of NodeFenceRemediation objects.
var RemediationResource = v1alpha1.GroupVersion.WithResource(v1alpha1.NodeFenceRemediationPlural)

// OpRemediation is acting on a NodeFenceRemediation.
const OpRemediation = "remediation"

// RemediationOptions tune Remediations. Store and Health are required.
type RemediationOptions struct {
	// Namespace holds the remediations (the templates' namespace); ""
	// watches every namespace.
	Namespace string
	// Store is the controller's NodeFence store: the remediations'
	// status is read off the node's record.
	Store *Store
	// Health is the controller's node health: a remediation of a node that
	// does not exist fails.
	Health *Health
	// Resync is how often every remediation is looked at again, besides
	// its changes and its node's record's (default 30 s).
	Resync time.Duration
	// Reader reads the Machines that own remediations, fresh (a
	// manager's APIReader; the Remediations' client when nil).
	Reader client.Reader
	// Logger receives a line per change (discarded when nil).
	Logger *slog.Logger
	// Events, when set, records an event on the remediation at each change
	// of its Processing or Succeeded condition, where a person who uses
	// Node Health Check looks (the fence controller's events are on the
	// Node).
	Events events.EventRecorder
}

// RBAC, with --remediation: the NodeFenceRemediations that Node Health
// Check or Cluster API create (in any namespace: Cluster API creates them
// in the Machines'), read from the cache, their finalizer added and
// removed, their status written; the Machine that owns one names its node
// (status.nodeRef).
// +kubebuilder:rbac:groups=fencekit.io,resources=nodefenceremediations,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=fencekit.io,resources=nodefenceremediations/status,verbs=update
// +kubebuilder:rbac:groups=cluster.x-k8s.io;machine.openshift.io,resources=machines,verbs=get

// Remediations is the remediator's side of Node Health Check's and Cluster
// API's external remediation: it reads the NodeFenceRemediation objects
// (api/v1alpha1) through a manager's cache, tells the fence controller which
// nodes they ask to fence (controller.Requests), and keeps each one's
// status and finalizer:
//
//   - The node is the one the annotation remediation.medik8s.io/node-name
//     names (Node Health Check sets it), else, for a remediation owned by a
//     Cluster API (or OpenShift) Machine, the Machine's status.nodeRef,
//     else the remediation's name.
//   - A remediation asks for one fencing: the node is requested from the
//     remediation's creation until a fencing of the node that began after
//     it is over (fenced and recovered), so that a node Node Health Check
//     has not yet seen healthy again is not fenced twice. A remediation
//     marked timed out by Node Health Check (remediation.medik8s.io/nhc-timed-out)
//     asks for nothing more: Processing False, Succeeded False
//     (RemediationInterruptedByNHC) unless it had succeeded.
//   - Its status mirrors the node's NodeFence: the conditions Processing,
//     Fenced, PodsReleased and Succeeded (see Conditions; Succeeded False
//     on a failed fencing, so that Node Health Check escalates at once), the
//     node's name, the record's message, lastUpdateTime.
//   - It carries the finalizer fencekit.io/remediation. When it is deleted
//     (Node Health Check deletes it once the node is healthy again), the
//     finalizer goes once the node's fencing is over; a fencing still under
//     way on a node that is not ready is abandoned (its NodeFence deleted:
//     the pod treatment is undone, the devices stay as they are) first.
//
// Remediations is a controller-runtime reconciler of
// NodeFenceRemediations (Reconcile): package kube/fencectrl sets it up on
// the fence controller's manager, keyed by remediation, with a watch of
// NodeFences that wakes a node's remediations when its record changes
// (ForNode).
type Remediations struct {
	client client.Client
	reader client.Reader
	opts   RemediationOptions
	log    *slog.Logger

	onChange func(node string)

	mu     sync.Mutex
	nodeOf map[string]string          // remediation key -> its node, once resolved
	byNode map[string]map[string]bool // node -> remediation keys
	wanted map[string]time.Time       // remediation key -> asks for a fencing now, since
	manual map[string]bool            // remediation key -> a person's request (status.manual)
	owners map[string][]string        // remediation key -> the node-lease holders of its owners
}

// NewRemediations returns the Remediations that c reads (a manager's
// client: its cache) and writes. A Machine that owns a remediation is read
// through opts.Reader (the manager's APIReader; c when nil).
func NewRemediations(c client.Client, opts RemediationOptions) *Remediations {
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Remediations{
		client: c, reader: opts.Reader, opts: opts, log: log,
		nodeOf: map[string]string{}, byNode: map[string]map[string]bool{}, wanted: map[string]time.Time{}, manual: map[string]bool{}, owners: map[string][]string{},
	}
	if r.reader == nil {
		r.reader = c
	}
	return r
}

// OnChange has f called with a node's name whenever whether the node is
// requested, or since when, may have changed (wake the controller, or
// enqueue the node). Call it before the manager starts.
func (r *Remediations) OnChange(f func(node string)) { r.onChange = f }

// ForNode returns the remediations of node, to reconcile when its
// NodeFence changed: their status follows the record.
func (r *Remediations) ForNode(node string) []reconcile.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]reconcile.Request, 0, len(r.byNode[node]))
	for k := range r.byNode[node] {
		ns, name, _ := strings.Cut(k, "/")
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
	}
	return out
}

// Watched reports whether a remediation is in the namespace watched
// (RemediationOptions.Namespace, every one when empty).
func (r *Remediations) Watched(namespace string) bool {
	return r.opts.Namespace == "" || namespace == r.opts.Namespace
}

// Requested reports whether a remediation asks for the node's fencing now,
// and since when: its status.startedAt, the latest of several
// (controller.Requests).
func (r *Remediations) Requested(node string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var since time.Time
	ok := false
	for k := range r.byNode[node] {
		if t, w := r.wanted[k]; w {
			ok = true
			if t.After(since) {
				since = t
			}
		}
	}
	return since, ok
}

// Manual reports whether a person asked for node's fencing
// (controller.ManualRequests): a remediation that asks for it now is
// marked status.manual (its Machine carried Cluster API's
// cluster.x-k8s.io/remediate-machine annotation).
func (r *Remediations) Manual(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.byNode[node] {
		if _, w := r.wanted[k]; w && r.manual[k] {
			return true
		}
	}
	return false
}

// Holders returns the node-lease holder identities of the health checks
// whose remediations ask for node's fencing now: Node Health Check takes a
// node's lease (kube/nodelease) as NodeHealthCheck-NAME (or
// MachineHealthCheck-NAME) before it creates the remediation, and the
// remediation it asked for shares it.
func (r *Remediations) Holders(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.byNode[node] {
		if _, w := r.wanted[k]; w {
			out = append(out, r.owners[k]...)
		}
	}
	return out
}

// leaseHolders returns the holder identities under which the health checks
// that own rem hold their node's lease: NodeHealthCheck-NAME and
// MachineHealthCheck-NAME, as Node Health Check writes them, for owners of
// the group remediation.medik8s.io.
func leaseHolders(rem *v1alpha1.NodeFenceRemediation) []string {
	var out []string
	for _, o := range rem.OwnerReferences {
		if g, _, _ := strings.Cut(o.APIVersion, "/"); g != "remediation.medik8s.io" {
			continue
		}
		if o.Kind == "NodeHealthCheck" || o.Kind == "MachineHealthCheck" {
			out = append(out, o.Kind+"-"+o.Name)
		}
	}
	return out
}

var (
	_ controller.Requests       = (*Remediations)(nil)
	_ controller.ManualRequests = (*Remediations)(nil)
)

// Reconcile brings one remediation's status and finalizer up to date
// (reconcile.Reconciler).
func (r *Remediations) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	after, err := r.reconcile(ctx, req.NamespacedName, key)
	switch {
	case apierrors.IsConflict(err):
		// Written by another since the cache's copy: its update event
		// queues it again; this is the backstop.
		r.log.Debug("NodeFenceRemediation changed since it was read", "remediation", key)
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	case err != nil:
		// Retried with the controller's backoff (Resync at most, as
		// kube/fencectrl sets it up).
		return reconcile.Result{}, err
	case after == gone:
		return reconcile.Result{}, nil
	case after == 0:
		after = r.opts.Resync
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// gone is what reconcile returns for a remediation that is gone: it is
// not looked at again.
const gone time.Duration = -1

// conflictRetry is when a remediation written by another since it was read
// is looked at again.
const conflictRetry = time.Second

// Resync is how often each remediation is looked at again
// (RemediationOptions.Resync): also the longest a failed one waits for its
// retry, as kube/fencectrl bounds its controller's backoff.
func (r *Remediations) Resync() time.Duration { return r.opts.Resync }

// setWanted records what a remediation asks for (since when, when wanted),
// and tells the controller when that changed.
func (r *Remediations) setWanted(key, node string, wanted bool, since time.Time) {
	r.mu.Lock()
	oldNode := r.nodeOf[key]
	if old := oldNode; old != node {
		if old != "" {
			delete(r.byNode[old], key)
			if len(r.byNode[old]) == 0 {
				delete(r.byNode, old)
			}
		}
		if node != "" {
			if r.byNode[node] == nil {
				r.byNode[node] = map[string]bool{}
			}
			r.byNode[node][key] = true
			r.nodeOf[key] = node
		} else {
			delete(r.nodeOf, key)
		}
	}
	old, was := r.wanted[key]
	changed := was != wanted || !old.Equal(since)
	if wanted {
		r.wanted[key] = since
	} else {
		delete(r.wanted, key)
		delete(r.manual, key)
		delete(r.owners, key)
	}
	r.mu.Unlock()
	if changed && r.onChange != nil {
		for _, n := range []string{node, oldNode} {
			if n != "" {
				r.onChange(n)
			}
		}
	}
}

// reconcile brings one remediation's status and finalizer up to date, and
// returns when to look at it again.
func (r *Remediations) reconcile(ctx context.Context, name client.ObjectKey, key string) (time.Duration, error) {
	var rem v1alpha1.NodeFenceRemediation
	if err := r.client.Get(ctx, name, &rem); apierrors.IsNotFound(err) {
		r.setWanted(key, "", false, time.Time{})
		return gone, nil
	} else if err != nil {
		return 0, &Error{Kind: v1alpha1.NodeFenceRemediationKind, Name: key, Op: OpRemediation, Err: err}
	}
	// The node is resolved once: the status keeps it, so that a Machine
	// deleted or a nodeRef changed later does not point the remediation
	// at another node's record, or leave its finalizer for ever.
	node := rem.Status.NodeName
	if node == "" {
		var err error
		if node, rem.Status.Manual, err = r.nodeName(ctx, &rem); err != nil {
			r.setWanted(key, "", false, time.Time{})
			if rem.DeletionTimestamp != nil {
				return r.finish(ctx, &rem, "", nil) // it never asked for a node
			}
			return 5 * time.Second, r.writeStatus(ctx, &rem, "", nil, err.Error())
		}
	}
	_, nodeExists := r.opts.Health.Node(node)
	rec, err := r.opts.Store.Get(ctx, node)
	switch {
	case errors.Is(err, controller.ErrNotFound):
		rec = nil
	case err != nil:
		return 0, err
	}
	var started time.Time
	if rem.Status.StartedAt != nil {
		started = rem.Status.StartedAt.Time
	}
	if rec != nil && rec.Closed() && (started.IsZero() || rec.Changed.Before(started)) {
		rec = nil // an earlier incident's, over before this remediation
	}

	if rem.DeletionTimestamp != nil {
		r.setWanted(key, node, false, time.Time{})
		return r.finish(ctx, &rem, node, rec)
	}
	if !hasFinalizer(&rem) {
		rem.Finalizers = append(rem.Finalizers, v1alpha1.RemediationFinalizer)
		if err := r.update(ctx, &rem); err != nil {
			return 0, err
		}
		r.log.Info("NodeFenceRemediation: started", "remediation", key, "node", node)
		return 0, nil // the update comes back through the cache
	}

	if started.IsZero() {
		// Taken up now: the time is written before the node is asked
		// for, so that after a restart a fencing over since then still
		// ends the remediation.
		return 0, r.writeStatus(ctx, &rem, node, rec, "")
	}
	_, timedOut := rem.Annotations[v1alpha1.TimedOutAnnotation]
	over := rec != nil && rec.Closed()
	r.mu.Lock()
	r.manual[key] = rem.Status.Manual
	r.owners[key] = leaseHolders(&rem)
	r.mu.Unlock()
	r.setWanted(key, node, nodeExists && !timedOut && !over, started)
	return 0, r.writeStatus(ctx, &rem, node, rec, "")
}

func hasFinalizer(rem *v1alpha1.NodeFenceRemediation) bool {
	for _, f := range rem.Finalizers {
		if f == v1alpha1.RemediationFinalizer {
			return true
		}
	}
	return false
}

// finishGrace is how long after its deletion a remediation that asked for
// a node and has seen no NodeFence yet keeps its finalizer: a controller that read
// the request just before may still be admitting the fencing (bounded by
// the admission's 30 s) and write the record after.
const finishGrace = 45 * time.Second

// finish handles a remediation being deleted: its finalizer goes once the
// node's fencing is over (or abandoned and undone). A node whose Node
// object is gone is treated as one not back.
func (r *Remediations) finish(ctx context.Context, rem *v1alpha1.NodeFenceRemediation, node string, rec *flow.NodeFence) (time.Duration, error) {
	if !hasFinalizer(rem) {
		return 0, nil
	}
	if c := meta.FindStatusCondition(rem.Status.Conditions, v1alpha1.ConditionSucceeded); rec == nil && node != "" &&
		c != nil && c.Reason == v1alpha1.ReasonRemediationStarted && rem.DeletionTimestamp != nil {
		// It asked for the node and has seen no NodeFence yet.
		if left := finishGrace - time.Since(rem.DeletionTimestamp.Time); left > 0 {
			return min(left, 5*time.Second), nil
		}
	}
	if rec != nil && !rec.Closed() {
		if h, _ := r.opts.Health.Node(node); h.Ready {
			return 2 * time.Second, nil // recovering: wait for the recovery
		}
		if !rec.Deleting {
			// The node is not back: the fencing is abandoned, its pod
			// treatment undone by the controller (the NodeFence's own
			// finalizer), the devices left as they are.
			err := r.client.Delete(ctx, &NodeFence{ObjectMeta: metav1.ObjectMeta{Name: node}})
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, &Error{Kind: Kind, Name: node, Op: OpRemediation, Err: err}
			}
			r.log.Info("NodeFenceRemediation deleted before the node recovered: its fencing is abandoned", "remediation", rem.Namespace+"/"+rem.Name, "node", node)
		}
		return 2 * time.Second, nil
	}
	kept := rem.Finalizers[:0]
	for _, f := range rem.Finalizers {
		if f != v1alpha1.RemediationFinalizer {
			kept = append(kept, f)
		}
	}
	rem.Finalizers = kept
	if err := r.update(ctx, rem); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	r.log.Info("NodeFenceRemediation: finished", "remediation", rem.Namespace+"/"+rem.Name, "node", node)
	return 0, nil
}

// RemediateMachineAnnotation is Cluster API's annotation by which a person
// asks for a Machine's remediation, whatever its health.
const RemediateMachineAnnotation = "cluster.x-k8s.io/remediate-machine"

// nodeName resolves the node a remediation asks to fence, and whether a
// person asked (the owning Machine carries RemediateMachineAnnotation).
func (r *Remediations) nodeName(ctx context.Context, rem *v1alpha1.NodeFenceRemediation) (string, bool, error) {
	if n := rem.Annotations[v1alpha1.NodeNameAnnotation]; n != "" {
		return n, false, nil
	}
	for _, o := range rem.OwnerReferences {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil || o.Kind != "Machine" || (gv.Group != "cluster.x-k8s.io" && gv.Group != "machine.openshift.io") {
			continue
		}
		m := kubeobj.Object(gv.WithKind("Machine"), "", "")
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: rem.Namespace, Name: o.Name}, m); err != nil {
			return "", false, fmt.Errorf("the Machine %s/%s that owns the remediation: %w", rem.Namespace, o.Name, err)
		}
		n, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if n == "" {
			return "", false, fmt.Errorf("the Machine %s/%s that owns the remediation has no node yet (status.nodeRef)", rem.Namespace, o.Name)
		}
		_, manual := m.GetAnnotations()[RemediateMachineAnnotation]
		return n, manual, nil
	}
	return rem.Name, false, nil
}

// writeStatus writes the remediation's status from the node's record (nil
// before the fencing began), when it changed.
func (r *Remediations) writeStatus(ctx context.Context, rem *v1alpha1.NodeFenceRemediation, node string, rec *flow.NodeFence, problem string) error {
	now := time.Now()
	st := rem.Status.DeepCopy()
	st.NodeName = node
	if st.StartedAt == nil {
		t := metav1.NewMicroTime(now.UTC())
		st.StartedAt = &t
	}
	st.ObservedGeneration = rem.Generation
	_, nodeExists := r.opts.Health.Node(node)
	_, timedOut := rem.Annotations[v1alpha1.TimedOutAnnotation]
	set := func(typ string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: rem.Generation, LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second))})
	}
	switch {
	case problem != "":
		st.Message = problem
		set(v1alpha1.ConditionProcessing, metav1.ConditionTrue, v1alpha1.ReasonWaiting, problem)
	case node != "" && !nodeExists:
		st.Message = "node " + node + " does not exist"
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonNodeNotFound, st.Message)
		set(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonNodeNotFound, st.Message)
	case rec != nil:
		st.Message = rec.Message
		st.Conditions = Conditions(rec, st.Conditions, rem.Generation, now)
		for i := range st.Conditions {
			st.Conditions[i].ObservedGeneration = rem.Generation
		}
		remediationConditions(rec, set, st.Conditions)
	default:
		st.Message = "asked to fence node " + node + "; waiting for the fence controller"
		set(v1alpha1.ConditionProcessing, metav1.ConditionTrue, v1alpha1.ReasonRemediationStarted, st.Message)
		set(v1alpha1.ConditionFenced, metav1.ConditionFalse, v1alpha1.ReasonNotFenced, "no device has confirmed the node fenced")
		set(v1alpha1.ConditionPodsReleased, metav1.ConditionFalse, v1alpha1.ReasonNotReleased, "no pod released")
		set(v1alpha1.ConditionSucceeded, metav1.ConditionUnknown, v1alpha1.ReasonRemediationStarted, st.Message)
	}
	if timedOut && !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionSucceeded) {
		msg := "Node Health Check timed the remediation out: no further fencing step is started"
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonInterruptedByNHC, msg)
		set(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonInterruptedByNHC, msg)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSucceeded); c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonFencedReleased {
		c.Reason = v1alpha1.ReasonRemediationSucceeded // as fence-agents-remediation says it
	}
	// Succeeded is the remediation's answer: once False or True, it stays
	// (Node Health Check escalates on False, and a later answer would
	// tell it of a node it has handed to another remediator).
	if prev := meta.FindStatusCondition(rem.Status.Conditions, v1alpha1.ConditionSucceeded); prev != nil && prev.Status != metav1.ConditionUnknown {
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSucceeded); c == nil || c.Status != prev.Status {
			meta.SetStatusCondition(&st.Conditions, *prev)
			if prev.Status == metav1.ConditionFalse {
				set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, prev.Reason, prev.Message)
				if rec != nil && rec.Fenced() {
					st.Message = "the remediation had failed; the node's NodeFence went on since (" + rec.Message + ")"
				}
			}
		}
	}
	r.conditionEvents(rem, st.Conditions)
	if reflect.DeepEqual(st.Conditions, rem.Status.Conditions) && st.NodeName == rem.Status.NodeName &&
		st.Message == rem.Status.Message && st.ObservedGeneration == rem.Status.ObservedGeneration &&
		rem.Status.StartedAt != nil {
		return nil
	}
	t := metav1.NewTime(now)
	st.LastUpdateTime = &t
	rem.Status = *st
	return r.write(ctx, rem, "status")
}

// remediationConditions makes a remediation's conditions say what Node
// Health Check and Cluster API act on, as fence-agents-remediation's do:
//
//   - while the fence controller retries a step whose every level failed
//     once, Processing True and Succeeded Unknown: the remediation has not
//     failed yet (a NodeFence's own Succeeded turns False at once; a
//     remediation's False makes Node Health Check start the next
//     remediator, two actors on one node). Node Health Check's timeout
//     bounds the retries;
//   - a fencing held by an operator's decision (a pause, a maintenance, an
//     exclusion): Processing False, Succeeded Unknown (FencingHeld), the
//     message saying why: nothing is done, nothing failed;
//   - detect-only mode: Processing False, Succeeded False (DetectOnly):
//     this controller will not remediate.
func remediationConditions(rec *flow.NodeFence, set func(typ string, s metav1.ConditionStatus, reason, msg string), cs []metav1.Condition) {
	if c := meta.FindStatusCondition(cs, v1alpha1.ConditionSucceeded); c != nil && c.Reason == v1alpha1.ReasonLevelsFailed {
		set(v1alpha1.ConditionSucceeded, metav1.ConditionUnknown, v1alpha1.ReasonLevelsFailed, c.Message)
	}
	held := rec.Status == flow.StatusNew && !rec.Fenced() && strings.HasPrefix(rec.Message, flow.MsgRefusedByPolicy)
	switch {
	case held && strings.Contains(rec.Message, policy.GateDetectOnly):
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonDetectOnly, rec.Message)
		set(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonDetectOnly, rec.Message)
	case held:
		set(v1alpha1.ConditionProcessing, metav1.ConditionFalse, v1alpha1.ReasonHeld, rec.Message)
		set(v1alpha1.ConditionSucceeded, metav1.ConditionUnknown, v1alpha1.ReasonHeld, rec.Message)
	}
}

// conditionEvents records an event on rem for each change of its
// Processing or Succeeded condition from rem's status to cs.
func (r *Remediations) conditionEvents(rem *v1alpha1.NodeFenceRemediation, cs []metav1.Condition) {
	if r.opts.Events == nil {
		return
	}
	for _, typ := range []string{v1alpha1.ConditionProcessing, v1alpha1.ConditionSucceeded} {
		c := meta.FindStatusCondition(cs, typ)
		if c == nil {
			continue
		}
		if p := meta.FindStatusCondition(rem.Status.Conditions, typ); p != nil && p.Status == c.Status && p.Reason == c.Reason {
			continue
		}
		kind := corev1.EventTypeNormal
		if typ == v1alpha1.ConditionSucceeded && c.Status == metav1.ConditionFalse {
			kind = corev1.EventTypeWarning
		}
		msg := strings.ToValidUTF8(clip(fmt.Sprintf("%s %s: %s", typ, c.Status, c.Message), maxEventMessage-len("...")), "")
		r.opts.Events.Eventf(rem, nil, kind, c.Reason, "Remediate", "%s", msg)
	}
}

// update writes the remediation's metadata (its finalizers).
func (r *Remediations) update(ctx context.Context, rem *v1alpha1.NodeFenceRemediation) error {
	return r.write(ctx, rem, "metadata.finalizers")
}

// write updates the remediation: its status subresource when field is
// "status", else the object.
func (r *Remediations) write(ctx context.Context, rem *v1alpha1.NodeFenceRemediation, field string) error {
	var err error
	if field == "status" {
		err = r.client.Status().Update(ctx, rem)
	} else {
		err = r.client.Update(ctx, rem)
	}
	if err != nil {
		return &Error{Kind: v1alpha1.NodeFenceRemediationKind, Name: rem.Namespace + "/" + rem.Name, Op: OpRemediation, Field: field, Err: err}
	}
	return nil
}
