package teardown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/enum"
)

// StepKind names a step of a teardown.
type StepKind uint8

// The steps, in the order a plan runs them.
const (
	// StepDrain cordons the node and evicts its pods (the teardown design's
	// Promenade drain).
	StepDrain StepKind = iota + 1
	// StepClearLabels removes the labels added to the node and waits for
	// its pods to settle.
	StepClearLabels
	// StepRemoveEtcd removes the node's etcd members from their clusters,
	// refusing to break a quorum.
	StepRemoveEtcd
	// StepEtcdReady waits until the etcd clusters are healthy, ignoring
	// the node.
	StepEtcdReady
	// StepShutdownKubelet labels the node promenade-decomission=enabled
	// and waits for its kubelet to stop reporting; best effort.
	StepShutdownKubelet
	// StepDestroyNode has the provisioner wipe the node's disks for the
	// design revision (the teardown design's Drydock destroy node).
	StepDestroyNode
	// StepPowerOff powers the node off through the fence core and requires
	// the device's confirmation (the teardown design's "the target node
	// should be shut down").
	StepPowerOff
	// StepReleaseNode removes the node, confirmed off, from the provisioner
	// (the teardown design's "the target node should be removed from the
	// provisioner", after it is shut down).
	StepReleaseNode
	// StepRemoveFromCluster deletes the Node after the teardown design's 409
	// checks.
	StepRemoveFromCluster
)

var stepNames = [...]string{
	StepDrain:             "drain",
	StepClearLabels:       "clear-labels",
	StepRemoveEtcd:        "remove-etcd",
	StepEtcdReady:         "etcd-ready",
	StepShutdownKubelet:   "shutdown-kubelet",
	StepDestroyNode:       "destroy-node",
	StepPowerOff:          "power-off",
	StepReleaseNode:       "release-node",
	StepRemoveFromCluster: "remove-from-cluster",
}

// String returns the step's name, as the teardown design's API paths spell
// them ("drain", "clear-labels", "remove-etcd", ...).
func (k StepKind) String() string {
	return enum.Name(stepNames[:], k, "step")
}

// Reason returns the reason a failure of this step reports in its own
// status response (DrainNodeError, ClearLabelsError, ...).
func (k StepKind) Reason() Reason {
	switch k {
	case StepDrain:
		return ReasonDrainNodeError
	case StepClearLabels:
		return ReasonClearLabelsError
	case StepRemoveEtcd:
		return ReasonRemoveEtcdError
	case StepEtcdReady:
		return ReasonEtcdNotAccessible
	case StepShutdownKubelet:
		return ReasonShutdownKubeletError
	case StepDestroyNode, StepPowerOff, StepReleaseNode:
		return ReasonDestroyNodeError
	case StepRemoveFromCluster:
		return ReasonDeleteNodeError
	}
	return ReasonInternalError
}

// decommission reports whether the step belongs to the teardown design's
// Promenade decommission, whose failures a plan reports as
// DisassociateStepFailure.
func (k StepKind) decommission() bool { return k >= StepDrain && k <= StepShutdownKubelet }

// timeout returns the step's timeout among t.
func (k StepKind) timeout(t Timeouts) time.Duration {
	switch k {
	case StepDrain:
		return t.Drain
	case StepClearLabels:
		return t.ClearLabels
	case StepRemoveEtcd:
		return t.RemoveEtcd
	case StepEtcdReady:
		return t.EtcdReady
	case StepShutdownKubelet:
		return t.ShutdownKubelet
	case StepDestroyNode:
		return t.DestroyNode
	case StepPowerOff:
		return t.PowerOff
	case StepReleaseNode:
		return t.ReleaseNode
	case StepRemoveFromCluster:
		return t.RemoveFromCluster
	}
	return 0
}

// Step is one step of a plan.
type Step struct {
	// Kind says what the step does.
	Kind StepKind
	// Timeout bounds the step; zero takes the default of its kind.
	Timeout time.Duration
	// StopsPlan is true when a failure of the step stops the plan: true for
	// every step but shutdown-kubelet, which the teardown design lets fail
	// (the destroy shuts the kubelet down anyway).
	StopsPlan bool
	// Detail says what the step will do, for a dry run.
	Detail string
}

// Name returns the step's name ("drain", ...).
func (s Step) Name() string { return s.Kind.String() }

// Describe returns one line: the name, the timeout, whether a failure stops
// the plan, and what the step will do.
func (s Step) Describe() string {
	stops := "stops the plan on failure"
	if !s.StopsPlan {
		stops = "best effort"
	}
	return fmt.Sprintf("%s [timeout %v, %s]: %s", s.Name(), s.Timeout, stops, s.Detail)
}

// Plan is a validated teardown of one node: the ordered steps an Executor
// runs. A plan may be cut to some of its steps (the teardown design's
// per-step APIs): Run runs the steps it holds, in order, each of which
// checks on its own what it needs. Running a plan again continues a partial
// run: every step finds what is already done and reports it Skipped.
type Plan struct {
	// Node is the node torn down.
	Node string
	// Request is the request the plan was made from, timeouts at their
	// defaults.
	Request Request
	// Addresses are the node's addresses (its Node's, then the request's),
	// by which remove-etcd finds its members.
	Addresses []string
	// Revision is the ID of the design revision chosen for the redeploy
	// (the design reference); 0 when the executor has no revision store.
	Revision int
	// Notes are remarks made while planning, such as a skipped
	// intermediate-commits check.
	Notes []string
	// Steps are the steps, in order.
	Steps []Step
}

// Plan validates a request and makes its plan, reading but changing
// nothing: the request's fields (400 BadRequest), the node (404 NotFound),
// and, with a revision store, the target revision (412
// PreconditionFailed when it does not exist, or when committed revisions
// without a site-action tag lie between the last site action and it, unless
// AllowIntermediateCommits, which logs that the check is skipped). The
// error is an *Error, or several joined; StatusOf turns it into the status
// response.
func (x *Executor) Plan(ctx context.Context, req Request) (*Plan, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if x.Cluster == nil {
		return nil, &Error{Node: req.Node, Reason: ReasonInternalError, Err: fmt.Errorf("no cluster: %w", ErrNotConfigured)}
	}
	req = req.withDefaults()
	n, err := x.Cluster.Node(ctx, req.Node)
	if errors.Is(err, ErrNodeNotFound) {
		return nil, &Error{Node: req.Node, Field: FieldNode, Reason: ReasonNotFound, Err: err}
	}
	if err != nil {
		return nil, &Error{Node: req.Node, Reason: ReasonInternalError, Err: fmt.Errorf("read the node: %w", err)}
	}
	p := &Plan{Node: req.Node, Request: req}
	for _, a := range slices.Concat(n.Addresses, req.Addresses) {
		if a != "" && !slices.Contains(p.Addresses, a) {
			p.Addresses = append(p.Addresses, a)
		}
	}
	if x.Revisions != nil {
		if err := x.planRevision(ctx, p); err != nil {
			return nil, err
		}
	} else {
		p.Notes = append(p.Notes, "no revision store: the target revision is not checked")
	}
	p.Steps = x.steps(p, n)
	return p, nil
}

// planRevision chooses the design revision and checks for intermediate
// commits.
func (x *Executor) planRevision(ctx context.Context, p *Plan) error {
	req := p.Request
	revs, err := x.Revisions.Revisions(ctx)
	if err != nil {
		return &Error{Node: req.Node, Reason: ReasonInternalError, Err: fmt.Errorf("read the design revisions: %w", err)}
	}
	rev, err := SelectRevision(revs, req.Target, req.Revision)
	if err != nil {
		return &Error{Node: req.Node, Field: ParamTargetRevision, Reason: ReasonPreconditionFailed, Err: err}
	}
	p.Revision = rev.ID
	inter := IntermediateCommits(revs, rev.ID)
	if len(inter) == 0 {
		return nil
	}
	ids := joinInts(inter)
	if !req.AllowIntermediateCommits {
		return &Error{Node: req.Node, Field: ParamAllowIntermediateCommits, Reason: ReasonPreconditionFailed,
			Err: fmt.Errorf("%w: revisions %s were committed after the last site action and before revision %d; set allow-intermediate-commits=true to go on", ErrIntermediateCommits, ids, rev.ID)}
	}
	note := fmt.Sprintf("intermediate committed revisions check skipped (allow-intermediate-commits): revisions %s lie between the last site action and revision %d", ids, rev.ID)
	p.Notes = append(p.Notes, note)
	x.logger().LogAttrs(ctx, slog.LevelWarn, "teardown: intermediate committed revisions check skipped (allow-intermediate-commits)",
		slog.String("node", p.Node), slog.Int("revision", rev.ID), slog.String("intermediate", ids))
	return nil
}

// steps builds the steps of a plan.
func (x *Executor) steps(p *Plan, n *Node) []Step {
	req, t, node := p.Request, p.Request.Timeouts, p.Node
	step := func(k StepKind, detail string) Step {
		return Step{Kind: k, Timeout: k.timeout(t), StopsPlan: k != StepShutdownKubelet, Detail: detail}
	}
	labels := "every label but the kubelet's own"
	if len(req.Labels) > 0 {
		labels = "the labels " + strings.Join(req.Labels, ", ")
	}
	now := ClearableLabels(n.Labels, req.Labels)
	nowText := "none now"
	if len(now) > 0 {
		nowText = "now " + strings.Join(now, ", ")
	}
	clusters := "no etcd cluster configured: nothing to do"
	if len(x.Etcd) > 0 {
		clusters = "etcd clusters " + strings.Join(x.etcdNames(), ", ")
	}
	by := strings.Join(slices.Concat([]string{node}, p.Addresses), ", ")
	wipe := "wipe every local disk of " + node
	if req.PreserveLocalStorage {
		wipe = "wipe only the OS disk of " + node + " (preserve-local-storage)"
	}
	if p.Revision != 0 {
		wipe += fmt.Sprintf(" for design revision %d", p.Revision)
	}
	return []Step{
		step(StepDrain, fmt.Sprintf("cordon %s and evict its pods (PodDisruptionBudgets respected, DaemonSet pods ignored, emptyDir data deleted, unmanaged pods deleted) with a grace period of %v", node, t.DrainGracePeriod)),
		step(StepClearLabels, fmt.Sprintf("remove %s from %s (%s), then wait until no pod on it is terminating", labels, node, nowText)),
		step(StepRemoveEtcd, fmt.Sprintf("in %s: find the members on %s (by name or a URL host among %s), refuse when removing one would leave no healthy majority, remove them", clusters, node, by)),
		step(StepEtcdReady, fmt.Sprintf("in %s: poll every %v until the members not on %s are healthy", clusters, x.etcdPoll(), node)),
		step(StepShutdownKubelet, fmt.Sprintf("label %s %s=%s and wait until its kubelet stops renewing its lease and heartbeat", node, DecommissionLabel, DecommissionValue)),
		step(StepDestroyNode, wipe+" through the provisioner"),
		step(StepPowerOff, fmt.Sprintf("power %s off through its fence levels; only an off the device confirms counts", node)),
		step(StepReleaseNode, fmt.Sprintf("release %s, confirmed off, from the provisioner", node)),
		step(StepRemoveFromCluster, fmt.Sprintf("delete Node %s if it is cordoned, drained and has no label but the kubelet's own and %s=%s (else 409 Conflict)", node, DecommissionLabel, DecommissionValue)),
	}
}

// Only returns a copy of the plan cut to the steps of the given kinds, in
// the plan's order (the teardown design's per-step APIs run one step, or
// the decommission's five). Kinds the plan does not hold are ignored.
func (p *Plan) Only(kinds ...StepKind) *Plan {
	c := *p
	c.Notes = slices.Clone(p.Notes)
	c.Addresses = slices.Clone(p.Addresses)
	c.Steps = nil
	for _, s := range p.Steps {
		if slices.Contains(kinds, s.Kind) {
			c.Steps = append(c.Steps, s)
		}
	}
	return &c
}

// DryRun writes what the plan will do, one step per line, and changes
// nothing.
func (p *Plan) DryRun(w io.Writer) error {
	_, err := io.WriteString(w, p.String())
	return err
}

// String returns the dry run text: a header line, the notes, and one
// numbered line per step.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "teardown of node %s", p.Node)
	if p.Revision != 0 {
		target := p.Request.Target.String()
		if p.Request.Revision != 0 {
			target = "asked by number"
		}
		fmt.Fprintf(&b, ", design revision %d (%s)", p.Revision, target)
	}
	b.WriteString("\n")
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, s.Describe())
	}
	return b.String()
}

// String returns "all disks" or "OS disk".
func (w Wipe) String() string {
	switch w {
	case WipeAll:
		return "all disks"
	case WipeOSDisk:
		return "OS disk"
	}
	return fmt.Sprintf("wipe(%d)", uint8(w))
}

// joinInts joins numbers with ", ".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
