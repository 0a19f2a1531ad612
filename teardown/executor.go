package teardown

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ctxsleep"
	"github.com/fencekit/fencekit/internal/enum"
)

// Defaults of the Executor's polling.
const (
	// DefaultEtcdPoll is the teardown design's interval between two etcd
	// health checks.
	DefaultEtcdPoll = 30 * time.Second
	// DefaultPoll is the interval between two reads of the cluster while a
	// step waits (pods settling, kubelet stopping, Node deleted).
	DefaultPoll = 5 * time.Second
	// DefaultKubeletStale is how long a node's Lease must go unrenewed for
	// its kubelet to count as stopped: the kubelet renews every 10 s, and
	// the lease lasts 40 s.
	DefaultKubeletStale = 60 * time.Second
	// NoLeaseKubeletStale replaces KubeletStale for a node without a Lease,
	// judged by its Ready condition's heartbeat alone, which a live kubelet
	// may leave unchanged for 5 minutes (nodeStatusReportFrequency).
	NoLeaseKubeletStale = 6 * time.Minute
	// DefaultEtcdCallTimeout bounds each call to an etcd cluster.
	DefaultEtcdCallTimeout = 10 * time.Second
)

// Executor runs plans over the ports. Only Cluster is needed to make a
// plan; each step needs its own port, and fails with ErrNotConfigured
// without it (except the etcd steps, which are Skipped when Etcd is empty:
// a cluster whose etcd is not reachable from the executor has nothing for
// them to do). The zero values of the other fields work. An Executor may
// run several plans at once if its ports allow it. Etcd.MemberHealth is
// called concurrently for the members of one cluster, so that members that
// do not answer cost one EtcdCallTimeout per check, not one each.
type Executor struct {
	// Cluster is the Kubernetes side (kube/teardownkube).
	Cluster Cluster
	// Etcd are the etcd clusters of the site by name (the teardown design's
	// EtcdClusters document), such as "kubernetes" and "calico".
	Etcd map[string]Etcd
	// EtcdMinHealthy is, per cluster name, how many members not on the node
	// must be healthy for etcd-ready (the teardown design's "minimum
	// functionality" threshold). Absent or 0: all of them. A healthy
	// majority of the voting members is always needed too.
	EtcdMinHealthy map[string]int
	// Provisioner wipes the node (destroy-node) and releases it
	// (release-node).
	Provisioner Provisioner
	// Power returns the node's fence levels for power-off (for example
	// config.Config.Levels with fence.StepPowerManagement).
	Power func(ctx context.Context, node string) ([]fence.Level, error)
	// Revisions, when set, holds the design revisions: Plan chooses the
	// target revision and refuses intermediate commits.
	Revisions RevisionStore

	// EtcdPoll is the interval between two etcd checks (etcd-ready, and
	// the retries of remove-etcd). Default DefaultEtcdPoll.
	EtcdPoll time.Duration
	// Poll is the interval between two cluster reads while waiting.
	// Default DefaultPoll.
	Poll time.Duration
	// KubeletStale is how long the node's Lease and heartbeat must stay
	// unchanged for shutdown-kubelet to count the kubelet stopped. Default
	// DefaultKubeletStale (NoLeaseKubeletStale at least, for a node without
	// a Lease).
	KubeletStale time.Duration
	// EtcdCallTimeout bounds each etcd call. Default
	// DefaultEtcdCallTimeout.
	EtcdCallTimeout time.Duration

	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (then returning its error); default
	// a timer. Tests give Now and Sleep of a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives a record per step; nil discards them.
	Logger *slog.Logger
	// Observer, when set, receives every step's start, progress and end.
	// It is called synchronously and must not block.
	Observer func(StepEvent)
}

// Outcome is how a step ended.
type Outcome uint8

const (
	// NotRun: an earlier step stopped the plan.
	NotRun Outcome = iota
	// Done: the step acted and confirmed the result.
	Done
	// Skipped: the step found it had nothing to do (already done by an
	// earlier run, or nothing of its kind on the node), and confirmed it.
	Skipped
	// Failed: the step failed, or could not confirm its result.
	Failed
)

var outcomeNames = [...]string{NotRun: "not run", Done: "done", Skipped: "skipped", Failed: "failed"}

// String returns "not run", "done", "skipped" or "failed".
func (o Outcome) String() string {
	return enum.Name(outcomeNames[:], o, "outcome")
}

// MarshalText returns String.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// EventType says what a StepEvent reports.
type EventType uint8

const (
	// EventStart: the step starts.
	EventStart EventType = iota + 1
	// EventProgress: the step made progress (drain progress, a poll).
	EventProgress
	// EventEnd: the step ended; Outcome says how.
	EventEnd
)

// StepEvent is what an Observer receives.
type StepEvent struct {
	Node string
	Step StepKind
	Type EventType
	// Outcome is set for EventEnd.
	Outcome Outcome
	// Message is a readable line.
	Message string
	// Err is the step's error, for a failed EventEnd.
	Err error
	// Drain is set for the drain's progress events.
	Drain *DrainProgress
	// Time is the executor's clock at the event; Duration the time since
	// the step started.
	Time     time.Time
	Duration time.Duration
}

// StepResult is how one step of a run went.
type StepResult struct {
	Step    Step
	Outcome Outcome
	// Message says what the step did or found.
	Message string
	// Err is the step's error when it failed: an *Error naming the node and
	// the step, with the Reason its status response reports.
	Err error
	// Details are further messages, such as the health of each etcd member.
	Details []Message
	// Start and Duration are on the executor's clock.
	Start    time.Time
	Duration time.Duration
}

// Status returns the step's own status response, as the teardown design's
// per-step API answers: 200 Success when done or skipped, the step's reason
// (or 409 Conflict for a refused remove-from-cluster) when failed, 500
// InternalError when not run.
func (r StepResult) Status() *Status {
	msgs := append([]Message{r.message()}, r.Details...)
	switch r.Outcome {
	case Done, Skipped:
		return NewStatus(ReasonSuccess, r.Step.Name()+": "+r.Message, msgs)
	case Failed:
		return NewStatus(ReasonOf(r.Err), r.Err.Error(), msgs)
	}
	return NewStatus(ReasonInternalError, r.Step.Name()+": not run", msgs)
}

// message is the step's line in a status's message list.
func (r StepResult) message() Message {
	m := Message{Kind: KindStep, Name: r.Step.Name(), Error: r.Outcome == Failed}
	switch {
	case r.Outcome == Failed && r.Err != nil:
		m.Message = fmt.Sprintf("failed (%s): %v", ReasonOf(r.Err), r.Err)
	case r.Message != "":
		m.Message = r.Outcome.String() + ": " + r.Message
	default:
		m.Message = r.Outcome.String()
	}
	return m
}

// Report is how a run of a plan went.
type Report struct {
	Node     string
	Revision int
	Steps    []StepResult
	Start    time.Time
	Duration time.Duration
}

// stopped returns the step that stopped the plan, or nil.
func (r *Report) stopped() *StepResult {
	for i := range r.Steps {
		if s := &r.Steps[i]; s.Outcome == Failed && s.Step.StopsPlan {
			return s
		}
	}
	return nil
}

// Err returns the error of the step that stopped the plan, nil when none
// did (a failed best-effort step is not an error of the plan).
func (r *Report) Err() error {
	if s := r.stopped(); s != nil {
		return s.Err
	}
	return nil
}

// Succeeded reports whether no step stopped the plan.
func (r *Report) Succeeded() bool { return r.stopped() == nil }

// Status returns the plan's status response. 200 Success when no step
// stopped the plan (a failed best-effort step shows as an error message in
// the details). Otherwise the step that stopped it decides: 500
// DisassociateStepFailure for a step of the decommission (drain,
// clear-labels, remove-etcd, etcd-ready: the teardown design's "any 4xx
// series errors from the individual steps would manifest as a 500 here"),
// 500 DestroyNodeError for destroy-node, power-off and release-node, 409 Conflict or 500
// DeleteNodeError for remove-from-cluster. The details hold one message per
// step (done, skipped, failed with its own reason, or not run) and the
// steps' own details.
func (r *Report) Status() *Status {
	var msgs []Message
	for _, s := range r.Steps {
		msgs = append(msgs, s.message())
		msgs = append(msgs, s.Details...)
	}
	stop := r.stopped()
	if stop == nil {
		return NewStatus(ReasonSuccess, "node "+r.Node+" torn down: "+r.counts(), msgs)
	}
	reason := ReasonOf(stop.Err)
	if stop.Step.Kind.decommission() {
		reason = ReasonDisassociateStepFailure
	}
	msg := fmt.Sprintf("teardown of node %s stopped at step %s: %s: %v", r.Node, stop.Step.Name(), r.counts(), stop.Err)
	return NewStatus(reason, msg, msgs)
}

// Counts says how many steps ended each way: "5 done, 1 failed, 3 not
// run".
func (r *Report) Counts() string { return r.counts() }

// counts says how many steps ended each way.
func (r *Report) counts() string {
	var n [len(outcomeNames)]int
	for _, s := range r.Steps {
		if int(s.Outcome) < len(n) {
			n[s.Outcome]++
		}
	}
	var parts []string
	for _, o := range []Outcome{Done, Skipped, Failed, NotRun} {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %v", n[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

// String returns one line per step: "drain: done: ...".
func (r *Report) String() string {
	var b strings.Builder
	for _, s := range r.Steps {
		m := s.message()
		fmt.Fprintf(&b, "%s: %s\n", m.Name, m.Message)
	}
	return b.String()
}

// Run runs the plan's steps in order. Each step gets its timeout (on the
// executor's clock for its waits, and as a context deadline for its calls);
// a failed step that StopsPlan stops the plan and the steps after it are
// NotRun; a failed best-effort step does not. Run never reports a step Done
// or Skipped without having confirmed its result: an unknown outcome is a
// failure. Running the same plan again continues where a partial run
// stopped.
func (x *Executor) Run(ctx context.Context, p *Plan) *Report {
	rep := &Report{Node: p.Node, Revision: p.Revision, Start: x.now()}
	var stoppedBy *Step
	for _, s := range p.Steps {
		if s.Timeout <= 0 {
			s.Timeout = s.Kind.timeout(DefaultTimeouts())
		}
		res := StepResult{Step: s}
		if stoppedBy != nil {
			res.Message = "step " + stoppedBy.Name() + " stopped the plan"
			rep.Steps = append(rep.Steps, res)
			continue
		}
		res.Start = x.now()
		x.emit(StepEvent{Node: p.Node, Step: s.Kind, Type: EventStart, Message: s.Detail, Time: res.Start})
		limit := s.Timeout
		if s.Kind == StepDrain {
			// The drain bounds itself by s.Timeout; the margin lets the
			// Cluster port say why it stopped (which pods, which budgets).
			limit += drainExplainMargin
		}
		sctx, cancel := context.WithTimeout(ctx, limit)
		r := &run{x: x, p: p, s: s, start: res.Start, deadline: res.Start.Add(s.Timeout)}
		out, err := r.do(sctx)
		cancel()
		res.Duration = x.now().Sub(res.Start)
		res.Message, res.Details = out.message, out.details
		res.Outcome = out.outcome
		if err != nil {
			res.Outcome = Failed
			res.Err = stepError(p.Node, s.Kind, err)
			if s.StopsPlan {
				stoppedBy = &s
			}
		}
		x.emit(StepEvent{Node: p.Node, Step: s.Kind, Type: EventEnd, Outcome: res.Outcome, Message: res.Message, Err: res.Err,
			Time: res.Start.Add(res.Duration), Duration: res.Duration})
		x.log(ctx, p.Node, res)
		rep.Steps = append(rep.Steps, res)
	}
	rep.Duration = x.now().Sub(rep.Start)
	return rep
}

// stepError wraps a step's error into an *Error naming the node and the
// step, keeping the reason of an *Error the step made itself (Conflict).
func stepError(node string, k StepKind, err error) error {
	var te *Error
	if errors.As(err, &te) && te.Step == k {
		return err
	}
	reason := k.Reason()
	if errors.As(err, &te) && te.Reason != "" {
		reason = te.Reason
	}
	return &Error{Node: node, Step: k, Reason: reason, Err: err}
}

// log writes a step's end.
func (x *Executor) log(ctx context.Context, node string, r StepResult) {
	l := x.logger()
	level := slog.LevelInfo
	switch {
	case r.Outcome == Failed && r.Step.StopsPlan:
		level = slog.LevelError
	case r.Outcome == Failed:
		level = slog.LevelWarn
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("node", node), slog.String("step", r.Step.Name()),
		slog.String("outcome", r.Outcome.String()), slog.Duration("duration", r.Duration)}
	if r.Err != nil {
		attrs = append(attrs, slog.String("error", r.Err.Error()))
	} else {
		attrs = append(attrs, slog.String("message", r.Message))
	}
	l.LogAttrs(ctx, level, "teardown step", attrs...)
}

func (x *Executor) emit(e StepEvent) {
	if x.Observer != nil {
		x.Observer(e)
	}
}

func (x *Executor) now() time.Time {
	if x.Now != nil {
		return x.Now()
	}
	return time.Now()
}

func (x *Executor) sleep(ctx context.Context, d time.Duration) error {
	if x.Sleep != nil {
		return x.Sleep(ctx, d)
	}
	return ctxsleep.Sleep(ctx, d)
}

var discard = slog.New(slog.DiscardHandler)

func (x *Executor) logger() *slog.Logger {
	if x.Logger != nil {
		return x.Logger
	}
	return discard
}

func (x *Executor) etcdPoll() time.Duration { return orDefault(x.EtcdPoll, DefaultEtcdPoll) }
func (x *Executor) poll() time.Duration     { return orDefault(x.Poll, DefaultPoll) }
func (x *Executor) kubeletStale() time.Duration {
	return orDefault(x.KubeletStale, DefaultKubeletStale)
}
func (x *Executor) etcdCallTimeout() time.Duration {
	return orDefault(x.EtcdCallTimeout, DefaultEtcdCallTimeout)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// drainExplainMargin is the time a drain step's context outlives the drain
// timeout, for the Cluster port to explain a drain that timed out.
const drainExplainMargin = 15 * time.Second
