package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// Options tune a Controller. The zero value means the defaults.
type Options struct {
	// Identity names this controller instance in the jobs it starts; two
	// running instances must never share one. Give each replica a stable
	// identity (a StatefulSet pod's name): a restarted instance with the
	// same identity resumes its own unfinished jobs at once; another
	// instance waits Flow.JobTimeout before taking them over. Default: the
	// host name (a pod's name), else "fence-controller".
	Identity string
	// UnhealthyAfter is how long a node must be not ready before it is
	// fenced (default 1 min).
	UnhealthyAfter time.Duration
	// Interval is the time between passes of Run (default 10 s).
	Interval time.Duration
	// Flow tunes the NodeFence flow (power delay, polls, retries).
	Flow flow.Options
	// MaxWorkers bounds the nodes worked on at once (default 16). A node
	// with work waiting for a free worker is picked up at a later pass.
	MaxWorkers int
	// MaxStepsPerWork bounds the transitions one worker makes on a node
	// before handing it back to the next pass (default 64).
	MaxStepsPerWork int
	// LeaseGrace, when above 0, detects a dead node from its kubelet's
	// Lease (NodeHealth.LeaseRenewed) beside its Ready condition: a node
	// whose lease has not been renewed for LeaseGrace counts as not ready,
	// and as unresponsive at once, without waiting for the controller
	// manager to mark it (its node-monitor-grace-period, 40 s by default)
	// and for UnhealthyAfter. A node whose lease is renewed again before
	// its fencing starts is left alone; a lease that stops for most nodes
	// at once (this controller or the API server cut off, not the nodes)
	// is a storm for the storm guard. The trade: a node whose kubelet
	// stalls longer than LeaseGrace (a long pause, an overloaded API
	// server) is fenced though it runs. 0 (the default) is off.
	LeaseGrace time.Duration
	// RefuseConfirmations, when set, says why no person's confirmation
	// (flow.NodeFence.Confirm) is acted on: each is refused with it, in
	// the record and an event. Detect-only mode sets it: no pod is
	// released there, on a person's word either.
	RefuseConfirmations string
}

func (o Options) withDefaults() Options {
	if o.Identity == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			o.Identity = h
		} else {
			o.Identity = "fence-controller"
		}
	}
	if o.UnhealthyAfter <= 0 {
		o.UnhealthyAfter = time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MaxWorkers <= 0 {
		o.MaxWorkers = 16
	}
	if o.MaxStepsPerWork <= 0 {
		o.MaxStepsPerWork = 64
	}
	o.Flow = o.Flow.Defaults()
	return o
}

// Controller fences the nodes that stop answering. Each pass it reads the
// nodes' health and the NodeFence records; every node not ready for
// UnhealthyAfter gets a record, and every record with work to do gets a
// worker, which advances it with flow.Advance: it asks the policy gate
// before a fencing step, persists each transition before acting on it, runs
// the step's switches one at a time through fence.DoPhase (levels in order,
// each level's offs before its ons), releases the node's pods after a
// verified fence and before the ons, restores them after recovery, and
// records events.
//
// The Controller keeps no state that matters: killed at any point, a new
// instance resumes from the records. A switch interrupted before its result
// was persisted is run again; every switch reads the device first, so an
// off (or an on) that happened is not repeated.
//
// The fields are set before Run or Pass and not changed after.
type Controller struct {
	Health Health
	Store  Store
	Config ConfigSource
	// Pods carries out the pod treatment; nil releases nothing (the
	// records still say what was fenced).
	Pods Pods
	// Events records events; nil records none.
	Events Events
	// Gate admits or refuses fencings; nil admits all.
	Gate policy.Gate
	// StorageAddresses tells the addresses the storage sees of a node,
	// for a method whose plug is fence.PlugNodeAddresses (a Ceph
	// blocklist): when it reports some, they are blocklisted instead of
	// the Node's InternalIP addresses. nil: the InternalIP addresses.
	StorageAddresses StorageAddresses
	// Kdump tells which nodes are dumping; nil means none is. It is asked
	// only for nodes whose configuration enables kdump.
	Kdump Kdump
	// Requests, when set, says which nodes an external health checker
	// asks to fence (remediation resources): only those are fenced, and
	// Options.UnhealthyAfter is not used. nil: a node is fenced once it has
	// been not ready for UnhealthyAfter.
	Requests Requests
	// Admissions keeps the ledger of admitted fencings that every
	// controller of the cluster shares, so that the gates count the
	// fencings in flight across controllers; nil means the Store's, when it
	// implements Admissions, else this process's memory only.
	Admissions Admissions
	// ConfirmCheck, when set, proves a person's confirmation of node
	// before it is acted on: that its By wrote it and has the right to
	// (kube/fencekube's ConfirmationProof reads the record its Request
	// names, whose creator the API server wrote, and asks the API server
	// whether that user may confirm). An error refuses it, with the
	// error's text as the reason; one that wraps ErrUnproven refuses that
	// confirmation for good, until it is written again (it is not asked
	// again), while another (the API server did not answer) is asked again
	// at the next pass. nil accepts the confirmations the Store gives: the
	// Store's writer vouches for them (MemoryStore.Confirm).
	ConfirmCheck func(ctx context.Context, node string, c flow.Confirmation) error
	// Registry opens the methods' devices; nil means fence.DefaultRegistry.
	Registry *fence.Registry
	// Observer, when set, sees every attempt of every method (progress).
	Observer fence.Observer
	// Logger receives the controller's logs; nil discards them.
	Logger *slog.Logger
	// WakeNode, when set, has node worked on soon (a controller-runtime
	// reconcile request): a change a watch saw (its pods gone) comes to
	// the node at once. nil wakes Run's next pass.
	WakeNode func(node string)
	// Now is the clock; nil means time.Now.
	Now     func() time.Time
	Options Options

	once sync.Once
	opts Options
	sem  chan struct{}

	admitMu    sync.Mutex // serialises this instance's ledger admissions
	mu         sync.Mutex
	busy       map[string]bool // nodes a worker holds
	health     map[string]NodeHealth
	uuids      map[string]string                  // node -> the last system UUID its health gave, kept when the Node is gone
	addrs      map[string][]string                // node -> the last addresses its health gave, kept when the Node is gone
	view       []policy.Node                      // the cluster as the gates see it, from the last pass
	viewIdx    map[string]int                     // node -> index in view
	admitted   map[string]time.Time               // admissions not yet seen active in the store
	admitQueue []*admitRequest                    // candidates waiting for the next ledger batch (admit)
	finished   map[string]time.Time               // node -> last change of a record whose fencing ran and is over
	inflight   map[string]context.CancelCauseFunc // node -> cancels its fencing switch under way (Withdraw)
	leaseBack  map[string]time.Time               // node -> when its stale lease was renewed again
	unproven   map[string]unproven                // node -> a confirmation ConfirmCheck refused for good
	podWatch   map[string]*podWatch               // node -> the watch of its pods while it waits for them (PodsNotifier)
	recorded   map[string]bool                    // nodes with a record in the last refresh
	last       map[string]lastRecord              // node -> its record as its work last saw it, while a Reconcile follows it
	nextDue    time.Time                          // the earliest time a node's state changes by the clock alone
	lastPass   time.Time                          // when the last pass that read its ports ended
	wake       chan struct{}
	wg         sync.WaitGroup
}

func (c *Controller) init() {
	c.once.Do(func() {
		c.opts = c.Options.withDefaults()
		c.sem = make(chan struct{}, c.opts.MaxWorkers)
		c.wake = make(chan struct{}, 1)
		c.busy = map[string]bool{}
		c.admitted = map[string]time.Time{}
		if c.Logger == nil {
			c.Logger = slog.New(slog.DiscardHandler)
		}
		if c.Now == nil {
			c.Now = time.Now
		}
	})
}

// podsRecheck is how often a node waiting, off, for its pods to be gone is
// looked at again, when no watch tells (PodsNotifier).
const podsRecheck = 2 * time.Second

// podWatch is a watch of a node's pods (PodsNotifier.WatchPods): stop ends
// it; failed is set when it could not watch.
type podWatch struct {
	stop   context.CancelFunc
	failed atomic.Bool
}

// watchPods starts, for a node whose record waits for its pods, a watch of
// them that wakes the node at each change, or ends the watch once the
// record no longer waits. The watch lasts at most the pods' timeout (and a
// minute): the wait's own bound.
func (c *Controller) watchPods(ctx context.Context, node string, rec *flow.NodeFence) {
	n, ok := c.Pods.(PodsNotifier)
	if !ok {
		return
	}
	waiting := rec != nil && rec.WaitingForPods()
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.podWatch[node]
	switch {
	case waiting && w == nil:
		wctx, stop := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Flow.PodsTimeout+time.Minute)
		w = &podWatch{stop: stop}
		if c.podWatch == nil {
			c.podWatch = map[string]*podWatch{}
		}
		c.podWatch[node] = w
		go func() {
			defer stop()
			if err := n.WatchPods(wctx, node, func() { c.wakeNode(node) }); err != nil && wctx.Err() == nil {
				w.failed.Store(true)
				c.Logger.Warn("cannot watch the node's pods: looking every 2 s", "node", node, "err", err)
				return // kept, failed, until the wait ends
			}
			// Ended (its bound, or stopped): a later wait starts another.
			c.mu.Lock()
			if c.podWatch[node] == w {
				delete(c.podWatch, node)
			}
			c.mu.Unlock()
		}()
	case !waiting && w != nil:
		w.stop()
		delete(c.podWatch, node)
	}
}

// watchingPods reports whether a watch tells when node's pods go.
func (c *Controller) watchingPods(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.podWatch[node]
	return w != nil && !w.failed.Load()
}

// wakeNode has node worked on soon.
func (c *Controller) wakeNode(node string) {
	if c.WakeNode != nil {
		c.WakeNode(node)
		return
	}
	c.Wake()
}

// Run makes a pass every Options.Interval until ctx ends, then waits for
// the workers to stop. It returns ctx's error.
func (c *Controller) Run(ctx context.Context) error {
	c.init()
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.Logger.Warn("fence controller pass failed", "err", err)
		}
		wait := c.opts.Interval
		c.mu.Lock()
		if !c.nextDue.IsZero() {
			if d := c.nextDue.Sub(c.Now()); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.Wait()
			return ctx.Err()
		case <-c.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// Wake makes Run pass at once (for example when the health source sees a
// node change). It never blocks.
func (c *Controller) Wake() {
	c.init()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// LastPass returns when the last pass read the nodes and records (zero
// before the first): a liveness probe fails when it grows older than a few
// intervals, so that a controller whose loop hangs is restarted.
func (c *Controller) LastPass() time.Time {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastPass
}

// Interval returns the time between passes: Options.Interval, or its
// default.
func (c *Controller) Interval() time.Duration {
	c.init()
	return c.opts.Interval
}

// Wait waits for the workers started by earlier passes to stop.
func (c *Controller) Wait() { c.wg.Wait() }

// Pass looks at every node once and starts a worker (in a goroutine) for
// each node with work to do. It returns once the workers are started; Wait
// waits for them.
func (c *Controller) Pass(ctx context.Context) error {
	nodes, err := c.Pending(ctx)
	for _, n := range nodes {
		c.spawn(ctx, n)
	}
	return err
}

// Pending looks at every node once, as a pass does, and returns the nodes
// with work to do: a reconciler's backstop (kube/fencectrl enqueues them
// every Options.Interval, beside the watches that wake a node at once).
func (c *Controller) Pending(ctx context.Context) ([]string, error) {
	c.init()
	nodes, recs, wanted, err := c.refresh(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	health := make(map[string]bool, len(nodes))
	byNode := make(map[string]*flow.NodeFence, len(recs))
	for _, r := range recs {
		byNode[r.Node] = r
	}
	for i := range nodes {
		n := &nodes[i]
		health[n.Name] = true
		r := byNode[n.Name]
		if r == nil {
			if wanted[i] {
				out = append(out, n.Name)
			}
			continue
		}
		if !r.Closed() || r.Deleting || wanted[i] {
			out = append(out, n.Name)
		}
	}
	// Records of nodes that no longer exist keep their state; an abandoned
	// one (deleted by a user) is still worked on.
	for _, r := range recs {
		if !health[r.Node] && (r.Deleting || !r.Closed()) {
			out = append(out, r.Node)
		}
	}
	return out, nil
}

// Reconcile looks at the cluster as a pass does and works on one node at
// once, in the caller's goroutine, as far as it goes now: Run's work in the
// form of a work queue's reconciler (kube/fencectrl runs it under a
// controller-runtime manager, whose queue holds one node at a time and
// bounds the workers). It returns when the node is to be looked at again by
// the clock alone (a timer of its fencing), 0 when only a change of the
// node, its record or the configuration can give it work.
func (c *Controller) Reconcile(ctx context.Context, node string) (time.Duration, error) {
	c.init()
	if c.quiet(ctx, node) {
		return 0, nil
	}
	if _, _, _, err := c.refresh(ctx); err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.last == nil {
		c.last = map[string]lastRecord{}
	}
	c.last[node] = lastRecord{}
	c.mu.Unlock()
	err := c.Work(ctx, node)
	c.mu.Lock()
	last := c.last[node]
	delete(c.last, node)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.dueFor(ctx, node, last)
}

// lastRecord is the record of a node as its work last read or wrote it
// (nil: none); seen is false until the work read or wrote it.
type lastRecord struct {
	rec  *flow.NodeFence
	seen bool
}

// noteRecord keeps rec as node's last record while a Reconcile follows
// the node (Reconcile then needs no read of its own to tell when the node
// is due again).
func (c *Controller) noteRecord(node string, rec *flow.NodeFence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.last[node]; ok {
		if rec != nil {
			rec = rec.Clone()
		}
		c.last[node] = lastRecord{rec: rec, seen: true}
	}
}

// dueFor returns when node's state next changes by the clock alone, from
// its record as its work last read or wrote it (last), or read again
// when the work did not.
func (c *Controller) dueFor(ctx context.Context, node string, last lastRecord) (time.Duration, error) {
	if c.idle(node) {
		return 0, nil
	}
	rec := last.rec
	if !last.seen {
		var err error
		rec, err = c.Store.Get(ctx, node)
		switch {
		case errors.Is(err, ErrNotFound):
			rec = nil
		case err != nil:
			return 0, err
		}
	}
	now := c.Now()
	c.mu.Lock()
	h, known := c.health[node]
	c.mu.Unlock()
	var due time.Duration
	soon := func(d time.Duration) {
		if d > 0 && (due == 0 || d < due) {
			due = d
		}
	}
	if known && !h.Ready && c.Requests == nil && (rec == nil || rec.Closed()) {
		soon(h.Since.Add(c.opts.UnhealthyAfter).Sub(now))
	}
	if rec != nil && (!rec.Closed() || rec.Deleting) {
		// In flight: admissions asked again, polls, retries, a job taken
		// over, all within an interval.
		soon(c.opts.Interval)
		if rec.WaitingForPods() && !c.watchingPods(node) {
			soon(min(c.opts.Interval, podsRecheck))
		}
		if known && h.Ready && rec.Step == fence.StepRecovery && rec.Status == flow.StatusDone && rec.Hold && c.opts.Flow.HealthyDelay > 0 {
			// Recovered: it takes pods again once it has been ready for
			// the healthy delay.
			soon(h.Since.Add(c.opts.Flow.HealthyDelay).Sub(now))
		}
		if !rec.FencedAt.IsZero() && rec.Status == flow.StatusRunning {
			// A reboot's on comes once the off has been held MinOff.
			soon(rec.FencedAt.Add(c.opts.Flow.MinOff).Sub(now))
		}
		if at := rec.RetryDue(c.opts.Flow); !at.IsZero() {
			// A retry comes at the end of its backoff, not at the next
			// interval after it.
			soon(max(at.Sub(now), time.Millisecond))
		}
		if at := rec.OffCheckDue(c.opts.Flow, known && h.Ready); !at.IsZero() {
			// Fenced, its pods released: its devices are read again.
			soon(max(at.Sub(now), time.Millisecond))
		}
		if known && !h.Ready && rec.Step == fence.StepIsolation && rec.Status == flow.StatusDone {
			soon(rec.Changed.Add(c.opts.Flow.PowerDelay).Sub(now))
		}
	}
	return due, nil
}

// refresh reads the nodes and the records and updates the view of the
// cluster the gates and the workers use (and, for Run, the time of the
// next change by the clock alone). wanted tells, per node, whether it is a
// candidate for fencing.
func (c *Controller) refresh(ctx context.Context) (nodes []NodeHealth, recs []*flow.NodeFence, wanted []bool, err error) {
	nodes = c.Health.Nodes()
	recs, err = c.Store.List(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fence controller: list NodeFences: %w", err)
	}
	now := c.Now()
	byNode := make(map[string]*flow.NodeFence, len(recs))
	for _, r := range recs {
		byNode[r.Node] = r
	}
	health := make(map[string]NodeHealth, len(nodes))
	view := make([]policy.Node, len(nodes))
	wanted = make([]bool, len(nodes)) // unresponsive for UnhealthyAfter: a candidate
	viewIdx := make(map[string]int, len(nodes))

	var due time.Time
	soon := func(t time.Time) {
		if t.After(now) && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	c.mu.Lock()
	for i, n := range nodes {
		n = c.judged(n, now)
		c.noteLease(n, now)
		health[n.Name] = n
		r := byNode[n.Name]
		if !n.Ready {
			if c.Requests == nil {
				soon(n.Since.Add(c.opts.UnhealthyAfter))
			}
			if r != nil && r.Step == fence.StepIsolation && r.Status == flow.StatusDone {
				soon(r.Changed.Add(c.opts.Flow.PowerDelay))
			}
		}
		if n.Ready && r != nil && r.Step == fence.StepRecovery && r.Status == flow.StatusDone && r.Released != flow.ReleaseNone && !r.Restoring {
			soon(n.Since.Add(c.opts.Flow.HealthyDelay))
		}
		if r != nil && r.Status == flow.StatusRunning && !r.FencedAt.IsZero() {
			soon(r.FencedAt.Add(c.opts.Flow.MinOff))
		}
		if r != nil && r.WaitingForPods() {
			// A fenced node waits, off, for its pods to go: look again
			// soon (unless a watch tells), and at the end of the wait.
			if w := c.podWatch[n.Name]; w == nil || w.failed.Load() {
				soon(now.Add(min(c.opts.Interval, podsRecheck)))
			}
			soon(r.PodsWaitSince.Add(c.opts.Flow.PodsTimeout))
		}
		active := r != nil && r.Active()
		if at, ok := c.admitted[n.Name]; ok {
			if active || ranSince(r, at) || now.Sub(at) > 2*c.opts.Interval+c.opts.Flow.JobTimeout {
				delete(c.admitted, n.Name)
			} else {
				active = true
			}
		}
		// For the gates, a node counts as unresponsive as soon as it is
		// not ready, not only once UnhealthyAfter has passed: the nodes of
		// one failure (a switch, a rack's power) turn not ready spread
		// over a heartbeat interval, and counting only those past
		// UnhealthyAfter would admit the first one before the others
		// count, so that a storm would start with a fencing.
		wanted[i] = c.unresponsive(n, r, now)
		view[i] = policy.Node{Name: n.Name, Labels: n.Labels, ControlPlane: n.ControlPlane, Unschedulable: n.Unschedulable,
			Unresponsive: !n.Ready || wanted[i], Fencing: active}
		viewIdx[n.Name] = i
	}
	finished := make(map[string]time.Time)
	for _, r := range recs {
		if r.Status != flow.StatusNew && !r.Active() {
			finished[r.Node] = r.Changed
		}
	}
	// The system UUID of every node with a record, kept while the record
	// lasts: a fencing goes on for a Node deleted meanwhile, and its
	// methods are still checked against the node's machine.
	uuids := make(map[string]string, len(recs))
	for _, r := range recs {
		if u := health[r.Node].SystemUUID; u != "" {
			uuids[r.Node] = u
		} else if u := c.uuids[r.Node]; u != "" {
			uuids[r.Node] = u
		}
	}
	c.health, c.view, c.viewIdx, c.nextDue, c.finished, c.uuids = health, view, viewIdx, due, finished, uuids
	c.recorded = make(map[string]bool, len(recs))
	for _, r := range recs {
		c.recorded[r.Node] = true
	}
	c.lastPass = now
	c.mu.Unlock()
	return nodes, recs, wanted, nil
}

// unresponsive reports whether the node is to be fenced: asked for, with
// Requests, unless the node's record (r, nil when none) closed since the
// request; else not ready for UnhealthyAfter.
func (c *Controller) unresponsive(n NodeHealth, r *flow.NodeFence, now time.Time) bool {
	if c.Requests != nil {
		since, ok := c.Requests.Requested(n.Name)
		return ok && !(r != nil && r.Closed() && !r.Changed.Before(since))
	}
	return n.staleLease || !n.Ready && now.Sub(n.Since) >= c.opts.UnhealthyAfter
}

// judged returns n as the controller judges it at now: with LeaseGrace, a
// node whose lease is older than the grace is not ready, since the grace
// ran out.
func (c *Controller) judged(n NodeHealth, now time.Time) NodeHealth {
	if c.opts.LeaseGrace > 0 && !n.LeaseRenewed.IsZero() && now.Sub(n.LeaseRenewed) > c.opts.LeaseGrace {
		n.staleLease = true
		if n.Ready {
			n.Ready, n.Since = false, n.LeaseRenewed.Add(c.opts.LeaseGrace)
		}
	}
	return n
}

// noteLease records, with c.mu held, when a node whose lease was stale is
// renewed again: it is ready since then (ReadySince, the healthy delay),
// though its Ready condition never changed.
func (c *Controller) noteLease(n NodeHealth, now time.Time) {
	prev, ok := c.health[n.Name]
	switch {
	case ok && prev.staleLease && !n.staleLease:
		if c.leaseBack == nil {
			c.leaseBack = map[string]time.Time{}
		}
		c.leaseBack[n.Name] = now
	case n.staleLease:
		delete(c.leaseBack, n.Name)
	}
}

// spawn starts a worker on node unless one holds it or none is free.
func (c *Controller) spawn(ctx context.Context, node string) {
	c.mu.Lock()
	if c.busy[node] {
		c.mu.Unlock()
		return
	}
	select {
	case c.sem <- struct{}{}:
	default:
		c.mu.Unlock()
		return // no free worker: a later pass picks the node up
	}
	c.busy[node] = true
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.busy, node)
			c.mu.Unlock()
			<-c.sem
		}()
		if err := c.Work(ctx, node); err != nil && ctx.Err() == nil {
			c.Logger.Warn("fence controller: work on node failed", "node", node, "err", err)
		}
	}()
}

// Work advances one node's record as far as it goes now, carrying out the
// commands. Pass calls it in a worker; tests may call it directly (never
// twice at once for one node).
func (c *Controller) Work(ctx context.Context, node string) error {
	c.init()
	for step := 0; step < c.opts.MaxStepsPerWork; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		more, err := c.advance(ctx, node)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// advance makes one transition of the node's record and carries out its
// commands. It reports whether another transition may follow at once.
// quiet reports whether node is ready (or, with Requests, not asked for)
// and has no record: a reconcile of it has nothing to do, and skips the
// pass over every node (a manager reconciles every node at its start, and
// again at each change of its Ready condition: at 5,000 nodes, a pass
// each). It needs a Health that reads one node (NodeHealthReader); the
// records are the Store's list (a cache, of the few fenced nodes).
func (c *Controller) quiet(ctx context.Context, node string) bool {
	nr, ok := c.Health.(NodeHealthReader)
	if !ok {
		return false
	}
	h, known := nr.Node(node)
	if !known {
		return false
	}
	now := c.Now()
	h = c.judged(h, now)
	if c.Requests != nil {
		if _, asked := c.Requests.Requested(node); asked {
			return false
		}
	} else if !h.Ready {
		return false
	}
	recs, err := c.Store.List(ctx)
	if err != nil || slices.ContainsFunc(recs, func(r *flow.NodeFence) bool { return r.Node == node }) {
		return false
	}
	c.mu.Lock()
	if c.health != nil {
		c.noteLease(h, now)
		c.health[node] = h
	}
	c.mu.Unlock()
	return true
}

// idle reports whether node, as the last refresh saw it, has no record and
// is not a candidate for fencing: nothing to read from the API server.
// (A reconcile of every node at a start, or of a node whose Ready changed,
// would otherwise read each node's record once: at 5,000 nodes, minutes
// of the client's rate limit in front of a fencing.) A record created
// since has its own watch event.
func (c *Controller) idle(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recorded == nil || c.recorded[node] {
		return false
	}
	h, known := c.health[node]
	if !known {
		return true
	}
	if c.Requests != nil {
		_, asked := c.Requests.Requested(node)
		return !asked
	}
	return c.judged(h, c.Now()).Ready
}

func (c *Controller) advance(ctx context.Context, node string) (bool, error) {
	if c.idle(node) {
		return false, nil
	}
	rec, err := c.Store.Get(ctx, node)
	switch {
	case errors.Is(err, ErrNotFound):
		rec = nil
	case err != nil:
		return false, fmt.Errorf("get NodeFence: %w", err)
	}
	c.noteRecord(node, rec)
	if rec != nil && rec.Closed() {
		c.forgetDump(node)
	}
	now := c.Now()
	c.mu.Lock()
	h, known := c.health[node]
	c.mu.Unlock()
	h = c.judged(h, now)
	unresp := known && c.unresponsive(h, rec, now)
	if rec == nil && !unresp {
		return false, nil
	}
	obs := flow.Observation{Now: now, Ready: known && h.Ready, Unresponsive: unresp, Owner: c.opts.Identity,
		ConfirmBlocked: c.opts.RefuseConfirmations}
	if rec != nil {
		obs.Deleting = rec.Deleting
		obs.Withdrawn = c.withdrawn(node)
	}
	if unresp && known && h.Ready && (rec == nil || rec.Step != fence.StepRecovery && !rec.PoweredOff && !rec.ConfirmedOff) {
		if m, ok := c.Requests.(ManualRequests); ok && m.Manual(node) {
			// A person asked: the node is fenced though it is Ready; its
			// Ready condition is read again once it is off (after a
			// reboot's on, it is back), and through its recovery (a
			// record that recovers is not reopened while the request
			// stands). An isolation alone holds while the request
			// stands.
			obs.Ready = false
		}
	}
	if obs.Ready {
		obs.ReadySince = h.Since
		c.mu.Lock()
		if back := c.leaseBack[node]; back.After(obs.ReadySince) {
			obs.ReadySince = back // its lease was stale, its Ready condition never changed
		}
		c.mu.Unlock()
	}
	if rec != nil && rec.ConfirmPending() && obs.ConfirmBlocked == "" && c.ConfirmCheck != nil {
		obs.ConfirmBlocked = c.proveConfirmation(ctx, node, rec.Confirm)
	}
	cfg, nc := c.nodeConfig(ctx, node, &obs)
	if nc != nil && nc.Kdump && c.Kdump != nil {
		obs.Dumping, obs.DumpDetail = c.Kdump.Dumping(node, now)
	}
	next, cmds := flow.Advance(rec, node, obs, c.opts.Flow)
	if hasCmd(cmds, flow.CmdCheckOff) {
		obs.Off = c.checkOff(ctx, cfg, rec)
		next, cmds = flow.Advance(rec, node, obs, c.opts.Flow)
	}
	if hasCmd(cmds, flow.CmdCheckPods) {
		obs.Pods = c.checkPods(ctx, node, rec)
		next, cmds = flow.Advance(rec, node, obs, c.opts.Flow)
	}
	switch {
	case hasCmd(cmds, flow.CmdAdmit) && c.Requests != nil && !unresp:
		// No request asks for the node any more (its remediation is gone,
		// or its checker timed it out and moved to another remediator):
		// no further fencing step starts; what undoes the fencing needs
		// no admission and goes on.
		obs.Admission = &flow.Admission{Reason: "no remediation asks for the node: no further fencing step starts"}
		next, cmds = flow.Advance(rec, node, obs, c.opts.Flow)
	case hasCmd(cmds, flow.CmdAdmit):
		d := c.admit(ctx, next)
		obs.Admission = &flow.Admission{Admit: d.Admit, Reason: d.String()}
		if d.Admit {
			obs.Admission.Reason = ""
		}
		next, cmds = flow.Advance(rec, node, obs, c.opts.Flow)
		if d.Admit {
			defer c.unadmit(node, next)
		}
	}
	saved := rec
	if rec == nil || !reflect.DeepEqual(rec, next) {
		if saved, err = c.save(ctx, rec, next); err != nil {
			return false, err
		}
	}
	c.watchPods(ctx, node, saved)
	for _, cmd := range cmds {
		if cmd.Kind == flow.CmdEvent {
			c.event(node, cmd)
		}
	}
	for _, cmd := range cmds {
		switch cmd.Kind {
		case flow.CmdHold, flow.CmdUnhold:
			hold := cmd.Kind == flow.CmdHold
			if h, ok := c.Pods.(Holder); ok {
				op, err := h.Unhold, error(nil)
				if hold {
					op = h.Hold
				}
				if err = op(ctx, node); err != nil {
					c.event(node, flow.Command{Warning: true, Reason: flow.ReasonHoldFailed,
						Message: fmt.Sprintf("%s the node failed, will retry: %v", map[bool]string{true: "holding (NoSchedule)", false: "ending the hold of"}[hold], err)})
					if !hold {
						return false, nil
					}
					continue // the fencing goes on: the hold is asked again at the next pass
				}
			}
			saved.HeldNode(hold)
			if saved, err = c.save(ctx, saved, saved); err != nil {
				return false, err
			}
			if !hold {
				return true, nil
			}
			// Held: the switch that follows may run.
		case flow.CmdRunJob:
			c.runJob(ctx, cfg, saved, cmd.Job)
			if _, err := c.save(ctx, saved, saved); err != nil {
				return false, err
			}
			return true, nil
		case flow.CmdReleasePods:
			if c.Pods != nil {
				if err := c.Pods.Release(ctx, node, cmd.Release); err != nil {
					c.event(node, flow.Command{Warning: true, Reason: flow.ReasonPodsNotReleased,
						Message: fmt.Sprintf("releasing the node's pods (%s) failed, will retry: %v", cmd.Release, err)})
					return false, nil
				}
				c.event(node, flow.Command{Reason: flow.ReasonPodsReleased, Message: podsReleased(cmd.Release)})
			}
			saved.ReleasedPods(cmd.Release)
			if _, err := c.save(ctx, saved, saved); err != nil {
				return false, err
			}
			return true, nil
		case flow.CmdRestorePods:
			if c.Pods != nil {
				if err := c.Pods.Restore(ctx, node); err != nil {
					c.event(node, flow.Command{Warning: true, Reason: flow.ReasonPodsNotRestored,
						Message: fmt.Sprintf("restoring the node's pods failed, will retry: %v", err)})
					return false, nil
				}
				c.event(node, flow.Command{Reason: flow.ReasonPodsRestored, Message: "pod treatment undone"})
			}
			saved.RestoredPods()
			if _, err := c.save(ctx, saved, saved); err != nil {
				return false, err
			}
			return true, nil
		case flow.CmdForget:
			if err := c.Store.Forget(ctx, saved); err != nil {
				return false, fmt.Errorf("forget NodeFence: %w", err)
			}
			c.noteRecord(node, nil)
			c.forgetDump(node)
			return false, nil
		}
	}
	return saved != rec, nil
}

// forgetDump tells the Kdump, when it can forget, that node's fencing is
// over.
func (c *Controller) forgetDump(node string) {
	if f, ok := c.Kdump.(kdumpForgetter); ok {
		f.Forget(node)
	}
}

// checkPods answers CmdCheckPods: whether the node's released pods are
// gone, from the pod treatment when it can tell (PodsWaiter); there is
// nothing to wait for when it cannot.
func (c *Controller) checkPods(ctx context.Context, node string, rec *flow.NodeFence) *flow.PodsCheck {
	w, ok := c.Pods.(PodsWaiter)
	if !ok || rec == nil {
		return &flow.PodsCheck{Gone: true, Detail: "the pod treatment does not wait"}
	}
	gone, detail, err := w.Gone(ctx, node, rec.Released)
	if err != nil {
		return &flow.PodsCheck{Detail: "cannot tell: " + err.Error()}
	}
	return &flow.PodsCheck{Gone: gone, Detail: detail}
}

// checkOff answers CmdCheckOff: it reads again, switching nothing, the
// devices whose required off fenced the node in its current attempt
// (each through fence.ReadState, the machine's identity first), one after the
// other, each within the job timeout.
func (c *Controller) checkOff(ctx context.Context, cfg *config.Config, rec *flow.NodeFence) *flow.OffCheck {
	out := &flow.OffCheck{Known: true}
	var details []string
	seen := map[string]bool{}
	for _, j := range rec.Jobs {
		if j.Phase != fence.ActionOff || !j.OK || j.BestEffort || seen[j.Method] {
			continue
		}
		seen[j.Method] = true
		st, err := c.readState(ctx, cfg, rec.Node, j.Method)
		switch {
		case err != nil:
			out.Known = false
			details = append(details, j.Method+": cannot read: "+err.Error())
		case st == fence.StateOn:
			out.On = append(out.On, j.Method)
			details = append(details, j.Method+": on")
		case st == fence.StateOff:
			details = append(details, j.Method+": off")
		default:
			out.Known = false
			details = append(details, j.Method+": unknown")
		}
	}
	out.Detail = strings.Join(details, "; ")
	if c.Logger != nil {
		c.Logger.Debug("fenced node's devices read again", "node", rec.Node, "read", out.Detail)
	}
	return out
}

// readState reads the state of the node's method, switching nothing.
func (c *Controller) readState(ctx context.Context, cfg *config.Config, node, method string) (fence.State, error) {
	if cfg == nil {
		return fence.StateUnknown, fmt.Errorf("%w: no fence configuration", fence.ErrConfig)
	}
	m, err := cfg.OpenMethod(ctx, c.Registry, node, method, c.Logger)
	if err != nil {
		return fence.StateUnknown, err
	}
	defer m.Close()
	if _, err := c.identify(ctx, m, node); err != nil {
		return fence.StateUnknown, err
	}
	if c.Observer != nil {
		m.Options.Observer = c.Observer
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.Flow.JobTimeout)
	defer cancel()
	res, err := fence.ReadState(rctx, m)
	if err != nil {
		return fence.StateUnknown, err
	}
	return res.State, nil
}

func hasCmd(cmds []flow.Command, k flow.CommandKind) bool {
	for _, c := range cmds {
		if c.Kind == k {
			return true
		}
	}
	return false
}

func podsReleased(r flow.Release) string {
	switch r {
	case flow.ReleasePower:
		return "node confirmed off: its pods are released"
	case flow.ReleaseDump:
		return "node dumping its kernel: its pods are released"
	}
	return "node confirmed isolated from its storage: the pods that used it are released"
}

// save creates or updates next (prev is what was read: nil for a create).
// It updates next's Version in place and returns it.
func (c *Controller) save(ctx context.Context, prev, next *flow.NodeFence) (*flow.NodeFence, error) {
	var out *flow.NodeFence
	var err error
	if next.Version == "" && prev == nil {
		out, err = c.Store.Create(ctx, next)
	} else {
		out, err = c.Store.Update(ctx, next)
	}
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w (node %s: another controller acted; looking again at the next pass)", err, next.Node)
		}
		return nil, fmt.Errorf("save NodeFence of node %s: %w", next.Node, err)
	}
	next.Version = out.Version
	c.noteRecord(next.Node, next)
	return next, nil
}

func (c *Controller) event(node string, cmd flow.Command) {
	lvl := slog.LevelInfo
	if cmd.Warning {
		lvl = slog.LevelWarn
	}
	c.Logger.Log(context.Background(), lvl, cmd.Message, "node", node, "reason", cmd.Reason)
	if c.Events != nil {
		c.Events.Event(node, cmd.Warning, cmd.Reason, cmd.Message)
	}
}

// nodeConfig fills obs.Steps or obs.ConfigErr. A source may return a
// partial configuration with an error (config.ParsePartial): the nodes
// it holds are fenced as configured, the others get their own errors.
func (c *Controller) nodeConfig(ctx context.Context, node string, obs *flow.Observation) (*config.Config, *config.NodeConfig) {
	cfg, err := c.Config.Config(ctx)
	if cfg == nil {
		if err == nil {
			err = fmt.Errorf("%w: no fence configuration", fence.ErrConfig)
		}
		obs.ConfigErr = err
		return nil, nil
	}
	nc, ok := cfg.Node(node)
	if !ok {
		switch mine := config.ErrorsFor(err, node); {
		case mine != nil:
			obs.ConfigErr = mine
		case err != nil:
			obs.ConfigErr = fmt.Errorf("%w: node %s has no valid fence configuration; the configuration has errors: %w", config.ErrNodeNotConfigured, node, err)
		default:
			obs.ConfigErr = fmt.Errorf("%w: node %s has no fence-config-%s ConfigMap", config.ErrNodeNotConfigured, node, node)
		}
		return cfg, nil
	}
	obs.Steps = nc.Steps
	obs.Actions = nc.Actions
	if obs.Steps == nil {
		obs.Steps = map[fence.Step][][]string{}
	}
	return cfg, nc
}

// admit asks the gate, with the fencings in flight counted: the records'
// (Active), this instance's admissions the store does not show yet, and,
// with an admission ledger, every controller's admissions. With a ledger,
// the admissions asked for while another is written are decided together
// (admitBatch): one read and one write of the ledger for all of them, the
// gates asked for each in turn with those before it counted. The write has
// optimistic concurrency: of two controllers admitting at once, one writes
// first and the other asks its gates again with the first one's
// admissions counted.
func (c *Controller) admit(ctx context.Context, nf *flow.NodeFence) policy.Decision {
	led := c.Admissions
	if led == nil {
		led, _ = c.Store.(Admissions)
	}
	if led == nil {
		return c.decide(ctx, nf, nil, true)
	}
	// One batch at a time in this instance: its workers would otherwise
	// race each other for the ledger. A worker queues its candidate, then
	// takes the lock; whoever holds it decides every candidate queued so
	// far, so that the nodes of a rack that fail together take one ledger
	// write or two, not one each. Conflicts are then left to other
	// instances only.
	req := &admitRequest{nf: nf}
	c.mu.Lock()
	c.admitQueue = append(c.admitQueue, req)
	c.mu.Unlock()
	c.admitMu.Lock()
	defer c.admitMu.Unlock()
	c.mu.Lock()
	batch := c.admitQueue
	c.admitQueue = nil
	c.mu.Unlock()
	if len(batch) > 0 {
		c.admitBatch(ctx, led, batch)
	}
	// req was decided by this batch or by one before it (queued before
	// this worker took the lock, so before the holder then took the queue).
	return req.decision
}

// admitRequest is a candidate waiting for its admission, and the decision.
type admitRequest struct {
	nf       *flow.NodeFence
	decision policy.Decision
}

// admitBatch decides the candidates of batch against the ledger led,
// read once and written once for all of them (again on a conflict). The
// ledger's requests are bounded: a request that hangs (a network
// partition) must not hold every other admission behind the lock.
func (c *Controller) admitBatch(ctx context.Context, led Admissions, batch []*admitRequest) {
	ctx, cancel := context.WithTimeout(ctx, admitTimeout)
	defer cancel()
	// The decisions are given to the candidates only once the ledger
	// holds them: one that stopped half-way (a gate that panicked, which
	// the manager recovers) leaves none of them admitted.
	decided := false
	defer func() {
		if !decided {
			for _, r := range batch {
				r.decision = policy.Refuse("admissions", "the admission stopped before it was decided; asked again at the next pass")
			}
		}
	}()
	give := func(ds []policy.Decision) {
		for i, r := range batch {
			r.decision = ds[i]
		}
		decided = true
	}
	refuseAll := func(format string, args ...any) {
		ds := make([]policy.Decision, len(batch))
		for i := range ds {
			ds[i] = policy.Refuse("admissions", format, args...)
		}
		give(ds)
	}
	const tries = 5
	for range tries {
		l, err := led.Ledger(ctx)
		if err != nil {
			refuseAll("cannot read the admissions the controllers share (nothing is fenced without them): %v", err)
			return
		}
		now := c.Now()
		l.Admitted = c.prune(l.Admitted, now)
		mem, _ := c.Gate.(policy.StormMemory)
		if mem != nil && !l.LastStorm.IsZero() {
			mem.RecordStorm(l.LastStorm) // a storm another controller saw
		}
		if l.Admitted == nil {
			l.Admitted = map[string]time.Time{}
		}
		ds := make([]policy.Decision, len(batch))
		var admitted []string
		for i, r := range batch {
			// The batch's admissions before r are in l.Admitted: the
			// gates count them as in flight.
			ds[i] = c.decide(ctx, r.nf, l.Admitted, false)
			if ds[i].Admit {
				l.Admitted[r.nf.Node] = now
				admitted = append(admitted, r.nf.Node)
			}
		}
		kept := l.LastStorm
		if mem != nil && mem.LastStorm().After(l.LastStorm) {
			l.LastStorm = mem.LastStorm()
		}
		if len(admitted) == 0 {
			// Refusals only. The last storm is kept for the next leader,
			// at most once per stormPersistEvery: every refused candidate
			// of a storm sees it at every pass, and a write each would
			// load the API server when it can least afford it. A conflict
			// leaves it to the next refusal, which sees the storm again.
			if l.LastStorm.Sub(kept) >= stormPersistEvery {
				if _, err := led.SetLedger(ctx, l); err != nil && !errors.Is(err, ErrConflict) {
					c.Logger.Warn("fence controller: cannot keep the last storm in the admission ledger", "err", err)
				}
			}
			give(ds)
			return
		}
		if _, err := led.SetLedger(ctx, l); err != nil {
			if errors.Is(err, ErrConflict) {
				continue // another controller admitted a fencing: ask again
			}
			for i := range ds {
				if ds[i].Admit {
					ds[i] = policy.Refuse("admissions", "cannot write the admission to the ledger the controllers share: %v", err)
				}
			}
			give(ds)
			return
		}
		c.mu.Lock()
		for _, n := range admitted {
			c.admitted[n] = now
			if i, ok := c.viewIdx[n]; ok {
				c.view[i].Fencing = true
			}
		}
		c.mu.Unlock()
		give(ds)
		return
	}
	refuseAll("the admissions the controllers share changed %d times while this one wrote; asked again at the next pass", tries)
}

// admitTimeout bounds one admission's requests to the ledger.
const admitTimeout = 30 * time.Second

// stormPersistEvery is how far the last storm the guard saw may run ahead
// of the one kept in the ledger before a refusal writes it: a new leader's
// cooldown may end that much early, no more.
const stormPersistEvery = 5 * time.Second

// ranSince reports whether r shows that a fencing admitted at at has run
// and is over: r changed at or after at, and is neither active nor New. Between
// an admission and the first write of its work the record is still New,
// so a clock that differs between controllers cannot make an admission
// look finished before its fencing was recorded.
func ranSince(r *flow.NodeFence, at time.Time) bool {
	return r != nil && r.Status != flow.StatusNew && !r.Active() && !r.Changed.Before(at)
}

// prune returns the ledger's admissions still in flight: those of nodes
// whose record is active, and those too recent for their record to show
// (the record is written right after the admission).
func (c *Controller) prune(in map[string]time.Time, now time.Time) map[string]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]time.Time, len(in))
	grace := 2*c.opts.Interval + time.Minute
	for n, at := range in {
		i, known := c.viewIdx[n]
		switch {
		case !c.finished[n].IsZero() && !c.finished[n].Before(at):
			// The record shows the admitted fencing ran and is over (see
			// ranSince): it is in flight no more.
		case known && c.view[i].Fencing && now.Sub(at) < c.opts.Flow.JobTimeout+grace:
			// The record shows it active; a fencing that stopped being
			// recorded as active for this long is taken as over.
			out[n] = at
		case now.Sub(at) < grace:
			out[n] = at
		}
	}
	return out
}

// decide asks the gate, with the fencings in flight marked: the view's,
// this instance's recent admissions, and ledger's. With mark, an admitted
// candidate is marked in flight in the view (and, without a ledger, in
// this instance's admissions) at once; admitBatch marks its own once the
// ledger holds them.
func (c *Controller) decide(ctx context.Context, nf *flow.NodeFence, ledger map[string]time.Time, mark bool) policy.Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Gate == nil {
		if ledger == nil {
			c.admitted[nf.Node] = c.Now()
		}
		return policy.Admitted()
	}
	cand := policy.Candidate{Node: policy.Node{Name: nf.Node, Unresponsive: true}, Step: nf.Step.String()}
	cl := policy.Cluster{Now: c.Now(), Nodes: c.view}
	if i, ok := c.viewIdx[nf.Node]; ok {
		cand.Node = c.view[i]
	}
	// Mark the fencings admitted since the view was built, here and, with
	// a ledger, by every controller.
	if len(c.admitted) > 0 || len(ledger) > 0 {
		cl.Nodes = make([]policy.Node, len(c.view))
		copy(cl.Nodes, c.view)
		for _, m := range []map[string]time.Time{c.admitted, ledger} {
			for n := range m {
				if i, ok := c.viewIdx[n]; ok && n != nf.Node {
					cl.Nodes[i].Fencing = true
				}
			}
		}
	}
	d := c.Gate.Admit(ctx, cand, cl)
	if d.Admit && ledger == nil {
		c.admitted[nf.Node] = cl.Now
	}
	if d.Admit && mark {
		if i, ok := c.viewIdx[nf.Node]; ok {
			c.view[i].Fencing = true
		}
	}
	return d
}

// unadmit drops an admission that did not lead to a running step (the
// save failed).
func (c *Controller) unadmit(node string, next *flow.NodeFence) {
	if next != nil && next.Status == flow.StatusRunning && next.Version != "" {
		return
	}
	c.mu.Lock()
	delete(c.admitted, node)
	c.mu.Unlock()
}

// runJob runs job i of rec and records its outcome in rec.
func (c *Controller) runJob(ctx context.Context, cfg *config.Config, rec *flow.NodeFence, i int) {
	j := rec.Jobs[i]
	out := flow.JobOutcome{}
	defer func() { rec.FinishJob(i, out, c.Now()) }()
	if cfg == nil {
		out.Err = fmt.Errorf("%w: no fence configuration", fence.ErrConfig)
		return
	}
	m, err := cfg.OpenMethod(ctx, c.Registry, rec.Node, j.Method, c.Logger)
	if err != nil {
		out.Err = err
		return
	}
	defer m.Close()
	if out.Target, err = c.identify(ctx, m, rec.Node); err != nil {
		out.Err = err
		return
	}
	if m.SystemUUID == "" && c.Logger != nil {
		c.Logger.Debug("the node reports no system UUID: its machine's identity is not checked", "node", rec.Node, "method", j.Method)
	}
	out.BestEffort = m.BestEffort
	if c.Observer != nil {
		m.Options.Observer = c.Observer
	}
	jctx, cancel := context.WithTimeout(ctx, c.opts.Flow.JobTimeout)
	defer cancel()
	if j.Step != fence.StepRecovery && rec.FencedAt.IsZero() {
		// A switch of a fencing not yet done: withdrawn with its request,
		// before it starts (the request may have gone since the
		// record's advance), or while it runs (Withdraw).
		wctx, wcancel := context.WithCancelCause(jctx)
		defer wcancel(nil)
		c.mu.Lock()
		if c.inflight == nil {
			c.inflight = map[string]context.CancelCauseFunc{}
		}
		c.inflight[rec.Node] = wcancel
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, rec.Node)
			c.mu.Unlock()
		}()
		if c.withdrawn(rec.Node) {
			out.Err = fence.NotDone(errWithdrawn)
			return
		}
		jctx = wctx
	}
	out.Result, out.Err = fence.DoPhase(jctx, m, j.Action, j.Phase)
	if cause := context.Cause(jctx); errors.Is(cause, errWithdrawn) && out.Err != nil {
		out.Err = fmt.Errorf("%w (%w)", out.Err, errWithdrawn)
	}
}

// identify gives m what the controller knows of node's machine: its system
// UUID, which the device's machine must have before a switch, and, for a
// plug that stands for them (fence.PlugNodeAddresses), its addresses: those
// StorageAddresses reports, else the Node's InternalIP addresses, the last
// ones known when the Node object is gone (a fencing goes on for a deleted
// Node). It returns what the plug became and who reported it (Job.Target),
// and an error, not done, when the storage's addresses cannot be read or
// one of them is another ready node's: blocklisting it would cut a live
// node from its storage while this one's pods move.
func (c *Controller) identify(ctx context.Context, m *fence.Method, node string) (string, error) {
	var storage []string
	source := ""
	if m.Plug == fence.PlugNodeAddresses && c.StorageAddresses != nil {
		var err error
		if storage, source, err = c.StorageAddresses.StorageAddresses(ctx, node); err != nil {
			return "", fence.NotDone(fmt.Errorf("the addresses the storage sees of node %s cannot be read: %w", node, err))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.health[node]
	if h.SystemUUID != "" {
		if c.uuids == nil {
			c.uuids = map[string]string{}
		}
		c.uuids[node] = h.SystemUUID
	}
	if len(h.Addresses) > 0 {
		if c.addrs == nil {
			c.addrs = map[string][]string{}
		}
		c.addrs[node] = h.Addresses
	}
	m.SystemUUID = c.uuids[node]
	if m.Plug != fence.PlugNodeAddresses {
		return "", nil
	}
	addrs := c.addrs[node]
	if len(storage) > 0 {
		addrs = storage
	} else {
		source = "the Node's InternalIP addresses"
	}
	if other, addr, held := c.heldByOther(node, addrs); held {
		return "", fence.NotDone(fmt.Errorf("%w: %s, an address of node %s's storage (%s), covers %s, an address of node %s, which is ready: not blocklisted",
			fence.ErrConfig, addr, node, source, other.addr, other.node))
	}
	m.Plug = strings.Join(addrs, ",")
	if m.Plug == "" {
		return "", nil
	}
	return m.Plug + " (" + source + ")", nil
}

// heldBy is an address of another node.
type heldBy struct{ node, addr string }

// heldByOther returns the first of addrs (addresses or CIDR prefixes) that
// covers an address of a ready node other than node, with c.mu held.
func (c *Controller) heldByOther(node string, addrs []string) (heldBy, string, bool) {
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				continue // the driver refuses it
			}
			p = netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-(p.Addr().BitLen()-p.Addr().Unmap().BitLen()))
		for _, name := range slices.Sorted(maps.Keys(c.health)) {
			h := c.health[name]
			if name == node || !h.Ready {
				continue
			}
			for _, oa := range h.Addresses {
				if ip, err := netip.ParseAddr(oa); err == nil && p.Contains(ip.Unmap()) {
					return heldBy{name, oa}, a, true
				}
			}
		}
	}
	return heldBy{}, "", false
}

// errWithdrawn is why a fencing switch was not started, or cancelled: the
// request that asked for the fencing was withdrawn.
var errWithdrawn = errors.New("the request for this fencing was withdrawn")

// withdrawn reports whether the node's fencing was asked for by a request
// (Requests) that no longer asks.
func (c *Controller) withdrawn(node string) bool {
	if c.Requests == nil {
		return false
	}
	_, ok := c.Requests.Requested(node)
	return !ok
}

// Withdraw is told that the request for node's fencing may have been
// withdrawn (its remediation changed): when no request asks for the node
// any more, the switch of a fencing that is under way on it, before the
// node was fenced, is cancelled through its context (a device that can
// stop does; the outcome of one that cannot is unknown, never a fence),
// and no further switch starts (the record's next advance fails the step,
// FenceWithdrawn). It never blocks.
func (c *Controller) Withdraw(node string) {
	c.init()
	if !c.withdrawn(node) {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[node]
	c.mu.Unlock()
	if cancel != nil {
		cancel(errWithdrawn)
		c.Logger.Warn("fence controller: a switch under way was cancelled: the request for the fencing was withdrawn", "node", node)
	}
}

// ErrUnproven marks a ConfirmCheck refusal that holds until the
// confirmation is written again: its record does not name its writer, or
// the writer may not confirm.
var ErrUnproven = errors.New("the confirmation is not proven")

// unproven is a confirmation ConfirmCheck refused for good, and why.
type unproven struct {
	c   flow.Confirmation
	why string
}

// proveConfirmation asks ConfirmCheck about node's pending confirmation c;
// it returns why it is refused, or "". A confirmation refused for good is
// not asked about again until it is written again: no later change of
// policy or rights revives it.
func (c *Controller) proveConfirmation(ctx context.Context, node string, conf *flow.Confirmation) string {
	c.mu.Lock()
	u, ok := c.unproven[node]
	c.mu.Unlock()
	if ok && u.c.Same(conf) {
		return u.why
	}
	err := c.ConfirmCheck(ctx, node, *conf)
	if err == nil {
		return ""
	}
	why := err.Error()
	if errors.Is(err, ErrUnproven) {
		why = strings.TrimPrefix(why, ErrUnproven.Error()+": ")
		c.mu.Lock()
		if c.unproven == nil {
			c.unproven = map[string]unproven{}
		}
		c.unproven[node] = unproven{c: *conf, why: why}
		c.mu.Unlock()
	}
	return why
}
