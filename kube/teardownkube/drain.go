package teardownkube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	policyv1beta1client "k8s.io/client-go/kubernetes/typed/policy/v1beta1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/fencekit/fencekit/teardown"
)

// maxRounds bounds the rounds of a drain: after a round has evicted the
// pods it found, the node's pods are listed again, and pods that arrived
// meanwhile (bound directly, or created before the cordon took effect)
// are evicted in a new round.
const maxRounds = 3

// diagnoseTimeout bounds the reads that explain a failed drain.
const diagnoseTimeout = 10 * time.Second

// Drain cordons the node and evicts its pods with kubectl drain's
// semantics (k8s.io/kubectl/pkg/drain): mirror pods are left alone,
// DaemonSet pods are left with IgnoreDaemonSets and block the drain
// without it, pods with emptyDir volumes need DeleteEmptyDirData, pods
// that no controller manages need Force, finished pods always go.
//
// Pods are evicted through the eviction API, so PodDisruptionBudgets are
// respected: an eviction that a budget refuses (429) is tried again every
// Options.EvictionRetryDelay until opts.Timeout. Pods are deleted instead
// only when the server offers no eviction API. Drain then waits until
// every evicted pod is gone (its kubelet confirmed its end, or it was
// deleted at once), lists the node's pods again and starts another round
// for pods that arrived meanwhile, at most three rounds. It returns nil
// only when no pod that opts covers is left on the node.
//
// opts.Timeout bounds the whole drain, cordon included, and must be
// positive. opts.GracePeriod, rounded up to whole seconds, is given to
// every evicted pod; zero leaves each pod its own
// terminationGracePeriodSeconds (kubectl drain's default).
//
// progress, when not nil, is called in order (never concurrently) with
// the cordon, the start of each pod's eviction, each refusal (once per
// pod and reason), each pod that left the node (Done), warnings, and the
// end. The drain's output goes to Options.Logger.
//
// A failed drain returns an *Error whose Remaining lists the pods still
// on the node, each with the reason (for a refusal by a
// PodDisruptionBudget, the server's explanation, which names the budget)
// and the budgets that select it. The node stays cordoned.
func (c *Cluster) Drain(ctx context.Context, name string, opts teardown.DrainOptions, progress func(teardown.DrainProgress)) error {
	if err := checkName(name, OpDrain); err != nil {
		return err
	}
	if opts.Timeout <= 0 {
		return inputError(name, OpDrain, "DrainOptions.Timeout", "must be positive, not %v", opts.Timeout)
	}
	if opts.GracePeriod < 0 {
		return inputError(name, OpDrain, "DrainOptions.GracePeriod", "must not be negative, not %v", opts.GracePeriod)
	}
	dctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	log := c.log.With(slog.String("node", name))
	out := &logWriter{log: log, level: slog.LevelInfo}
	errOut := &logWriter{log: log, level: slog.LevelWarn}
	defer out.Flush()
	defer errOut.Flush()

	t := newTracker(name, progress, c.opts.EvictionRetryDelay)
	h := &drain.Helper{
		Ctx:                             dctx,
		Client:                          recordingClient{Interface: c.client, t: t},
		Force:                           opts.Force,
		GracePeriodSeconds:              wholeSeconds(opts.GracePeriod, -1),
		IgnoreAllDaemonSets:             opts.IgnoreDaemonSets,
		DeleteEmptyDirData:              opts.DeleteEmptyDirData,
		Timeout:                         opts.Timeout,
		ChunkSize:                       c.opts.PageSize,
		EvictErrorRetryDelay:            c.opts.EvictionRetryDelay,
		SkipWaitForDeleteTimeoutSeconds: wholeSeconds(c.opts.SkipWaitForDeleteTimeout, 0),
		Out:                             out,
		ErrOut:                          errOut,
		OnPodDeletionOrEvictionStarted:  t.started,
		OnPodDeletionOrEvictionFinished: t.finished,
	}

	node, err := c.getNode(dctx, name, OpDrain)
	if err != nil {
		return c.timedOut(ctx, dctx, opts, err)
	}
	already := node.Spec.Unschedulable
	if err := drain.RunCordonOrUncordon(h, node, true); err != nil {
		return c.timedOut(ctx, dctx, opts, apiError(name, OpCordon, err, true))
	}
	if !node.Spec.Unschedulable {
		return &Error{Node: name, Op: OpCordon, Err: errors.New("the node is still schedulable after the cordon")}
	}
	if already {
		t.say(nil, "node/"+name+" already cordoned")
	} else {
		t.say(nil, "node/"+name+" cordoned")
	}

	warned := ""
	for round := 1; ; round++ {
		list, errs := h.GetPodsForDeletion(name)
		if errs != nil {
			return c.timedOut(ctx, dctx, opts, &Error{Node: name, Op: OpDrain, Err: utilerrors.NewAggregate(errs)})
		}
		pods := list.Pods()
		if c.opts.SkipWaitForDeleteTimeout > 0 {
			// kubectl leaves out of its list the pods terminating longer
			// than the skip timeout: name them as the pods it stops
			// waiting for are named.
			if err := c.noteSkipped(dctx, name, pods, h.SkipWaitForDeleteTimeoutSeconds, t); err != nil {
				return c.timedOut(ctx, dctx, opts, err)
			}
		}
		if len(pods) == 0 {
			t.end()
			return nil
		}
		t.add(pods)
		if round > maxRounds {
			return c.drainFailed(ctx, dctx, name, opts, t,
				fmt.Errorf("pods still arrive on the node after %d rounds of evictions", maxRounds))
		}
		if w := sortedWarnings(list.Warnings()); w != "" && w != warned {
			warned = w
			log.Warn("WARNING: " + w)
			t.say(nil, "WARNING: "+w)
		}
		if err := h.DeleteOrEvictPods(pods); err != nil {
			return c.drainFailed(ctx, dctx, name, opts, t, err)
		}
	}
}

// noteSkipped tells t the pods on the node that kubectl's drain left out
// of this round as terminating longer than skip seconds (its own test,
// which only becomes true with time: a pod it still listed is in pods).
func (c *Cluster) noteSkipped(ctx context.Context, name string, pods []corev1.Pod, skip int, t *tracker) error {
	listed := make(map[string]bool, len(pods))
	for i := range pods {
		listed[pods[i].Namespace+"/"+pods[i].Name] = true
	}
	all, err := c.listPods(ctx, name)
	if err != nil {
		return err
	}
	for i := range all {
		p := &all[i]
		k := p.Namespace + "/" + p.Name
		if !listed[k] && p.DeletionTimestamp != nil && int(time.Since(p.DeletionTimestamp.Time).Seconds()) > skip {
			t.skip(k)
		}
	}
	return nil
}

// sortedWarnings puts the groups of kubectl drain's warnings ("reason:
// pods", separated by "; ", in map order) in a stable order.
func sortedWarnings(w string) string {
	groups := strings.Split(w, "; ")
	slices.Sort(groups)
	return strings.Join(groups, "; ")
}

// wholeSeconds converts d to whole seconds, rounded up; zero gives zero.
func wholeSeconds(d time.Duration, zero int) int {
	if d <= 0 {
		return zero
	}
	return int((d + time.Second - 1) / time.Second)
}

// timedOut marks err as the drain's timeout (or the caller's cancellation)
// when that is what ended it.
func (c *Cluster) timedOut(ctx, dctx context.Context, opts teardown.DrainOptions, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case ctx.Err() != nil:
		if !errors.Is(e.Err, ctx.Err()) {
			e.Err = fmt.Errorf("%w: %w", ctx.Err(), e.Err)
		}
	case dctx.Err() != nil:
		e.Err = fmt.Errorf("drain timeout of %v reached (%w): %w", opts.Timeout, context.DeadlineExceeded, e.Err)
	}
	return err
}

// drainFailed returns the error of a drain that started evictions: the
// cause, and the pods still on the node with the reasons they are there.
func (c *Cluster) drainFailed(ctx, dctx context.Context, name string, opts teardown.DrainOptions, t *tracker, cause error) error {
	e := &Error{Node: name, Op: OpDrain, Err: cause}
	if ctx.Err() == nil {
		diag, cancel := context.WithTimeout(ctx, diagnoseTimeout)
		defer cancel()
		e.Remaining = c.remaining(diag, name, t)
	}
	return c.timedOut(ctx, dctx, opts, e)
}

// remaining lists the pods the drain tried to evict that are still on the
// node, each with the reason it is there and the budgets that select it.
// When the pods cannot be listed, it returns the ones whose eviction was
// refused, as the tracker knows them.
func (c *Cluster) remaining(ctx context.Context, name string, t *tracker) []RemainingPod {
	pending, refused := t.snapshot()
	log := c.log.With(slog.String("node", name))
	pods, err := c.listPods(ctx, name)
	if err != nil {
		log.Warn("listing the pods left after a failed drain", slog.String("error", err.Error()))
		var out []RemainingPod
		for _, k := range slices.Sorted(maps.Keys(refused)) {
			ns, n, _ := strings.Cut(k, "/")
			out = append(out, RemainingPod{Namespace: ns, Name: n, Reason: "eviction refused: " + refusal(refused[k])})
		}
		return out
	}
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	var out []RemainingPod
	for i := range pods {
		p := &pods[i]
		k := p.Namespace + "/" + p.Name
		if !pending[k] {
			continue
		}
		r := RemainingPod{Namespace: p.Namespace, Name: p.Name}
		switch {
		case refused[k] != nil:
			r.Reason = "eviction refused: " + refusal(refused[k])
		case p.DeletionTimestamp != nil:
			// The deletion timestamp is when the grace period ends.
			r.Reason = "terminating"
			if g := p.DeletionGracePeriodSeconds; g != nil {
				r.Reason += fmt.Sprintf(" with a grace period of %ds", *g)
			}
			r.Reason += " due by " + p.DeletionTimestamp.UTC().Format(time.RFC3339) + ", its end not confirmed (by its kubelet)"
		default:
			r.Reason = "not evicted yet"
		}
		pdbs, ok := budgets[p.Namespace]
		if !ok {
			list, err := c.client.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				log.Warn("listing PodDisruptionBudgets", slog.String("namespace", p.Namespace), slog.String("error", err.Error()))
			} else {
				pdbs = list.Items
			}
			budgets[p.Namespace] = pdbs
		}
		for _, b := range pdbs {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err == nil && sel.Matches(labels.Set(p.Labels)) {
				r.Budgets = append(r.Budgets, fmt.Sprintf("%s (disruptionsAllowed %d)", b.Name, b.Status.DisruptionsAllowed))
			}
		}
		out = append(out, r)
	}
	return out
}

// tracker follows a drain's pods and reports its progress. The drain
// calls it from one goroutine per pod; it reports in order, one report at
// a time.
type tracker struct {
	node       string
	report     func(teardown.DrainProgress)
	retryDelay time.Duration

	mu       sync.Mutex
	pending  map[string]bool   // pods to leave the node, by namespace/name
	skipped  map[string]bool   // pods left out as terminating longer than the skip timeout
	starting map[string]bool   // pods whose eviction start was reported
	refused  map[string]error  // the last refusal of each pod's eviction
	told     map[string]string // the last refusal reported for each pod
}

// newTracker returns the tracker of node's drain.
func newTracker(node string, report func(teardown.DrainProgress), retryDelay time.Duration) *tracker {
	return &tracker{node: node, report: report, retryDelay: retryDelay,
		pending: map[string]bool{}, skipped: map[string]bool{}, starting: map[string]bool{},
		refused: map[string]error{}, told: map[string]string{}}
}

// say reports msg, with done the pods that just left.
func (t *tracker) say(done []string, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sayLocked(done, msg)
}

func (t *tracker) sayLocked(done []string, msg string) {
	if t.report != nil {
		t.report(teardown.DrainProgress{Node: t.node, Pending: len(t.pending), Done: done, Message: msg})
	}
}

// add notes pods that a round is about to evict.
func (t *tracker) add(pods []corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range pods {
		t.pending[pods[i].Namespace+"/"+pods[i].Name] = true
	}
}

// skip notes a pod the drain leaves out as terminating longer than the
// skip timeout.
func (t *tracker) skip(k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skipped[k] = true
}

// started is the drain's OnPodDeletionOrEvictionStarted, called before
// every attempt: the first one of each pod is reported.
func (t *tracker) started(p *corev1.Pod, eviction bool) {
	k := p.Namespace + "/" + p.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.starting[k] {
		return
	}
	t.starting[k] = true
	verb := "evicting"
	if !eviction {
		verb = "deleting"
	}
	t.sayLocked(nil, verb+" pod "+k)
}

// finished is the drain's OnPodDeletionOrEvictionFinished: the pod is gone
// (err nil) or could not be read while waiting for it to go.
func (t *tracker) finished(p *corev1.Pod, eviction bool, err error) {
	k := p.Namespace + "/" + p.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.sayLocked(nil, "waiting for pod "+k+" to go: "+err.Error())
		return
	}
	t.goneLocked(k, eviction)
}

// goneLocked reports that the pod k left the node.
func (t *tracker) goneLocked(k string, eviction bool) {
	if !t.pending[k] {
		return
	}
	delete(t.pending, k)
	delete(t.refused, k)
	verb := "evicted"
	if !eviction {
		verb = "deleted"
	}
	t.sayLocked([]string{k}, "pod "+k+" "+verb)
}

// evicted notes the outcome of one eviction request.
func (t *tracker) evicted(namespace, name string, err error) {
	k := namespace + "/" + name
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		delete(t.refused, k)
	case apierrors.IsNotFound(err):
		t.goneLocked(k, true) // gone before its eviction: the drain does not wait for it
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The drain's end, not a refusal: keep the last refusal.
	default:
		t.refused[k] = err
		reason := refusal(err)
		if t.told[k] == reason {
			return
		}
		t.told[k] = reason
		if apierrors.IsTooManyRequests(err) {
			t.sayLocked(nil, fmt.Sprintf("eviction of pod %s refused (retrying every %v): %s", k, t.retryDelay, reason))
		} else {
			t.sayLocked(nil, "eviction of pod "+k+" failed: "+reason)
		}
	}
}

// end reports the drain's success.
func (t *tracker) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := "node/" + t.node + " drained"
	left := maps.Clone(t.skipped)
	maps.Copy(left, t.pending)
	if len(left) > 0 {
		msg += "; not waited for (terminating longer than the skip timeout): " + strings.Join(slices.Sorted(maps.Keys(left)), ", ")
	}
	t.sayLocked(nil, msg)
}

// snapshot returns copies of the pending pods and the refusals.
func (t *tracker) snapshot() (map[string]bool, map[string]error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.pending), maps.Clone(t.refused)
}

// recordingClient is the clientset the drain works through: it passes
// every call on and tells the tracker the outcome of each eviction, with
// the server's full answer (a PodDisruptionBudget's refusal names the
// budget only in its causes, which kubectl drain does not print).
type recordingClient struct {
	kubernetes.Interface
	t *tracker
}

// PolicyV1 returns the policy/v1 client with recorded evictions.
func (c recordingClient) PolicyV1() policyv1client.PolicyV1Interface {
	return policyV1{PolicyV1Interface: c.Interface.PolicyV1(), t: c.t}
}

// PolicyV1beta1 returns the policy/v1beta1 client with recorded evictions.
func (c recordingClient) PolicyV1beta1() policyv1beta1client.PolicyV1beta1Interface {
	return policyV1beta1{PolicyV1beta1Interface: c.Interface.PolicyV1beta1(), t: c.t}
}

type policyV1 struct {
	policyv1client.PolicyV1Interface
	t *tracker
}

func (p policyV1) Evictions(namespace string) policyv1client.EvictionInterface {
	return evictionsV1{EvictionInterface: p.PolicyV1Interface.Evictions(namespace), t: p.t}
}

type evictionsV1 struct {
	policyv1client.EvictionInterface
	t *tracker
}

func (e evictionsV1) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	err := e.EvictionInterface.Evict(ctx, ev)
	e.t.evicted(ev.Namespace, ev.Name, err)
	return err
}

type policyV1beta1 struct {
	policyv1beta1client.PolicyV1beta1Interface
	t *tracker
}

func (p policyV1beta1) Evictions(namespace string) policyv1beta1client.EvictionInterface {
	return evictionsV1beta1{EvictionInterface: p.PolicyV1beta1Interface.Evictions(namespace), t: p.t}
}

type evictionsV1beta1 struct {
	policyv1beta1client.EvictionInterface
	t *tracker
}

func (e evictionsV1beta1) Evict(ctx context.Context, ev *policyv1beta1.Eviction) error {
	err := e.EvictionInterface.Evict(ctx, ev)
	e.t.evicted(ev.Namespace, ev.Name, err)
	return err
}
