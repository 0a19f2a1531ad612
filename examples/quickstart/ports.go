package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// timeline prints lines stamped with the time since the scenario started.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "[+%6.3fs] %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

// since returns the seconds from the scenario's start to at.
func (t *timeline) since(at time.Time) float64 { return at.Sub(t.start).Seconds() }

// observe prints every attempt the engine reports.
func (t *timeline) observe(e fence.Event) {
	what := fmt.Sprintf("%-10s %-7s", e.Method, e.Phase)
	switch e.Outcome {
	case fence.OutcomeConfirmed:
		t.printf("    %s confirmed %s by the device after %d read(s), %v", what, e.State, e.Polls, round(e.Duration))
	case fence.OutcomeAlready:
		t.printf("    %s already %s: nothing to do", what, e.State)
	default:
		t.printf("    %s %s: %v", what, e.Outcome, e.Err)
	}
}

// round keeps three significant digits of a duration, at most.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// health is the controller's view of the nodes (an informer on Node
// objects in a cluster), driven by the scenario.
type health struct {
	mu      sync.Mutex
	nodes   []controller.NodeHealth
	changed func()
}

// newHealth returns the nodes, all Ready for an hour.
func newHealth(names []string) *health {
	h := &health{}
	since := time.Now().Add(-time.Hour)
	for _, n := range names {
		h.nodes = append(h.nodes, controller.NodeHealth{Name: n, Ready: true, Since: since})
	}
	return h
}

// onChange sets the function called after every change (the controller's
// Wake, as an informer's event handler would).
func (h *health) onChange(f func()) {
	h.mu.Lock()
	h.changed = f
	h.mu.Unlock()
}

// Nodes returns every node.
func (h *health) Nodes() []controller.NodeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nodes)
}

// set changes a node's Ready condition.
func (h *health) set(node string, ready bool) {
	h.mu.Lock()
	for i := range h.nodes {
		if n := &h.nodes[i]; n.Name == node && n.Ready != ready {
			n.Ready, n.Since = ready, time.Now()
		}
	}
	changed := h.changed
	h.mu.Unlock()
	if changed != nil {
		changed()
	}
}

func (h *health) ready(node string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes {
		if n.Name == node {
			return n.Ready
		}
	}
	return false
}

// podLog is the pod treatment: it prints what a Kubernetes implementation
// (kube/fencekube's TaintPods) does to the node, and records it.
type podLog struct {
	tl    *timeline
	mu    sync.Mutex
	calls []string
}

// Release prints the release of the node's pods after a verified fence.
func (p *podLog) Release(_ context.Context, node string, r flow.Release) error {
	switch r {
	case flow.ReleaseStorage:
		p.tl.printf("pods: %s is cut from its storage: the pods that used it may start elsewhere (no taint yet: the out-of-service taint needs a node verified off)", node)
	case flow.ReleaseDump:
		p.tl.printf("pods: %s is dumping its kernel: taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute applied before the device fence", node)
	case flow.ReleasePower:
		p.tl.printf("pods: %s is verified off: taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute applied; Kubernetes deletes its pods and detaches their volumes", node)
	default:
		return fmt.Errorf("node %s: unknown pod release %q", node, r)
	}
	p.record("release " + node + " " + string(r))
	return nil
}

// Gone tells whether the released pods are gone (controller.PodsWaiter):
// the controller switches a power-fenced node on again only then. Here
// Kubernetes is imagined, and the pods are gone at once.
func (p *podLog) Gone(_ context.Context, node string, r flow.Release) (bool, string, error) {
	p.tl.printf("pods: %s's pods are gone and their volumes detached: the node may be switched on again", node)
	p.record("gone " + node)
	return true, "", nil
}

// Restore prints the undoing of the treatment.
func (p *podLog) Restore(_ context.Context, node string) error {
	p.tl.printf("pods: %s is back: out-of-service taint removed; pods may be scheduled on it again", node)
	p.record("restore " + node)
	return nil
}

func (p *podLog) record(call string) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
}

func (p *podLog) done() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// eventLog prints the controller's events, as Kubernetes events would show
// them.
type eventLog struct{ tl *timeline }

// Event prints one event.
func (e eventLog) Event(node string, warning bool, reason, message string) {
	kind := "Normal"
	if warning {
		kind = "Warning"
	}
	e.tl.printf("event %s %s %s: %s", node, kind, reason, message)
}

// shownGate asks a gate and prints its answers. After its first admission
// it also asks a fresh copy of the default policy what it would answer if
// the node whatIf stopped answering too: the real gate is not asked, since
// its storm guard would remember the storm and hold every fencing for its
// cooldown.
type shownGate struct {
	gate   policy.Gate
	tl     *timeline
	whatIf string
	once   sync.Once
}

// Admit asks the gate and prints its decision.
func (g *shownGate) Admit(ctx context.Context, c policy.Candidate, cl policy.Cluster) policy.Decision {
	d := g.gate.Admit(ctx, c, cl)
	g.tl.printf("policy: %s of %s %s", c.Step, c.Node.Name, d)
	if d.Admit {
		g.once.Do(func() { g.askWhatIf(ctx, c, cl) })
	}
	return d
}

func (g *shownGate) askWhatIf(ctx context.Context, c policy.Candidate, cl policy.Cluster) {
	view := policy.Cluster{Now: cl.Now, Nodes: slices.Clone(cl.Nodes)}
	for i := range view.Nodes {
		if n := &view.Nodes[i]; n.Name == g.whatIf {
			n.Unresponsive = true
			d := policy.Default().Admit(ctx, policy.Candidate{Node: *n, Step: c.Step}, view)
			g.tl.printf("policy: (had %s stopped answering too, its %s would be %s)", n.Name, c.Step, d)
			return
		}
	}
}

// journal is a Store that keeps every finished job it persists: a NodeFence
// holds the jobs of its current step only.
type journal struct {
	*controller.MemoryStore
	mu   sync.Mutex
	seen map[jobKey]bool
	all  map[string][]flow.Job
}

type jobKey struct {
	node         string
	step         fence.Step
	level, index int
	started      int64
}

func newJournal() *journal {
	return &journal{MemoryStore: controller.NewMemoryStore(), seen: map[jobKey]bool{}, all: map[string][]flow.Job{}}
}

// Create stores a new record and keeps its finished jobs.
func (j *journal) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	out, err := j.MemoryStore.Create(ctx, nf)
	if err == nil {
		j.keep(out)
	}
	return out, err
}

// Update replaces a record and keeps its finished jobs.
func (j *journal) Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	out, err := j.MemoryStore.Update(ctx, nf)
	if err == nil {
		j.keep(out)
	}
	return out, err
}

func (j *journal) keep(nf *flow.NodeFence) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, x := range nf.Jobs {
		if x.Finished.IsZero() {
			continue
		}
		k := jobKey{nf.Node, x.Step, x.Level, x.Index, x.Started.UnixNano()}
		if !j.seen[k] {
			j.seen[k] = true
			j.all[nf.Node] = append(j.all[nf.Node], x)
		}
	}
}

// jobs returns the node's finished jobs, in the order they were persisted.
func (j *journal) jobs(node string) []flow.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.all[node])
}
