package teardownkube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/teardown"
)

// Defaults of Options.
const (
	// DefaultEvictionRetryDelay is kubectl drain's pause before an eviction
	// refused with 429 Too Many Requests is tried again.
	DefaultEvictionRetryDelay = 5 * time.Second
	// DefaultPageSize is the number of pods each List asks for.
	DefaultPageSize = 500
)

// maxPages bounds the pages of one pod listing (with DefaultPageSize, two
// and a half million pods: far more than a node holds).
const maxPages = 5000

// Options tune a Cluster. The zero value is ready to use.
type Options struct {
	// Logger receives the drain's output, one record per line (kubectl
	// drain's "evicting pod ns/name", its warnings and retries at Warn),
	// with the node's name. Nil discards it: nothing is ever written to
	// standard output or standard error.
	Logger *slog.Logger
	// EvictionRetryDelay is the pause before an eviction that the server
	// refused with 429 Too Many Requests (a PodDisruptionBudget that
	// allows no disruption) is tried again, until the drain's timeout;
	// DefaultEvictionRetryDelay when zero.
	EvictionRetryDelay time.Duration
	// SkipWaitForDeleteTimeout, when positive, makes the drain stop
	// waiting for pods whose deletion timestamp (the end of their grace
	// period) passed longer ago than this (kubectl drain
	// --skip-wait-for-delete-timeout, whole seconds): a node whose
	// kubelet is gone never confirms the end of its pods. Such pods are
	// still on the node when Drain returns nil; its last progress report
	// names them.
	// Zero waits for every pod until the drain's timeout.
	SkipWaitForDeleteTimeout time.Duration
	// PageSize is the number of pods each List asks for;
	// DefaultPageSize when zero.
	PageSize int64
}

// Cluster is the Kubernetes side of a teardown (teardown.Cluster) over a
// client-go clientset. Its methods are safe for concurrent use.
type Cluster struct {
	client kubernetes.Interface
	opts   Options
	log    *slog.Logger
}

var _ teardown.Cluster = (*Cluster)(nil)

// New returns a Cluster that works through client. The identity behind
// client needs, on nodes: get, patch, update (cordon falls back to an
// update when a patch cannot be built), delete; on leases in
// kube-node-lease: get; on pods: list, get, delete, and create on
// pods/eviction; on daemonsets: get; on poddisruptionbudgets: list (to
// explain a blocked drain; without it the explanation lacks the budgets).
func New(client kubernetes.Interface, opts Options) *Cluster {
	if opts.EvictionRetryDelay <= 0 {
		opts.EvictionRetryDelay = DefaultEvictionRetryDelay
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cluster{client: client, opts: opts, log: log}
}

// checkName refuses an empty node name.
func checkName(name, op string) error {
	if name == "" {
		return inputError(name, op, "name", "the node name is empty")
	}
	return nil
}

// getNode reads the node; a 404 wraps teardown.ErrNodeNotFound.
func (c *Cluster) getNode(ctx context.Context, name, op string) (*corev1.Node, error) {
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, apiError(name, op, err, true)
	}
	return n, nil
}

// Node returns the node: whether it is cordoned, its labels, its Ready
// condition (KubeletReady is true only when the condition is True) and
// that condition's last heartbeat, and the renew time of its Lease in
// kube-node-lease (zero when it has no Lease). Times are in UTC. A Lease
// that cannot be read is an error: an absent heartbeat is not assumed.
func (c *Cluster) Node(ctx context.Context, name string) (*teardown.Node, error) {
	if err := checkName(name, OpGet); err != nil {
		return nil, err
	}
	n, err := c.getNode(ctx, name, OpGet)
	if err != nil {
		return nil, err
	}
	out := &teardown.Node{
		Name:          n.Name,
		Unschedulable: n.Spec.Unschedulable,
		Labels:        maps.Clone(n.Labels),
	}
	for _, a := range n.Status.Addresses {
		if a.Address != "" && !slices.Contains(out.Addresses, a.Address) {
			out.Addresses = append(out.Addresses, a.Address)
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			out.KubeletReady = cond.Status == corev1.ConditionTrue
			if !cond.LastHeartbeatTime.IsZero() {
				out.LastHeartbeat = cond.LastHeartbeatTime.UTC()
			}
		}
	}
	lease, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, &Error{Node: name, Op: OpLease, Err: err}
	case lease.Spec.RenewTime != nil:
		out.LeaseRenewed = lease.Spec.RenewTime.UTC()
	}
	return out, nil
}

// Pods lists the pods bound to the node (spec.nodeName), sorted by
// namespace and name, and classifies them: DaemonSet when a DaemonSet
// (apps/v1) is the pod's controller, Mirror when it carries the
// kubernetes.io/config.mirror annotation, Terminating when it has a
// deletion timestamp, Finished when its phase is Succeeded or Failed.
func (c *Cluster) Pods(ctx context.Context, name string) ([]teardown.Pod, error) {
	if err := checkName(name, OpListPods); err != nil {
		return nil, err
	}
	if _, err := c.getNode(ctx, name, OpListPods); err != nil {
		return nil, err
	}
	pods, err := c.listPods(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]teardown.Pod, 0, len(pods))
	for i := range pods {
		out = append(out, classify(&pods[i]))
	}
	return out, nil
}

// listPods lists the pods bound to the node, in pages, sorted by
// namespace and name.
func (c *Cluster) listPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String(),
		Limit:         c.opts.PageSize,
	}
	var pods []corev1.Pod
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, &Error{Node: name, Op: OpListPods, Err: fmt.Errorf("more than %d pages of %d pods", maxPages, c.opts.PageSize)}
		}
		list, err := c.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, &Error{Node: name, Op: OpListPods, Err: err}
		}
		for _, p := range list.Items {
			// The server filters; this guards against clients that do not.
			if p.Spec.NodeName == name {
				pods = append(pods, p)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods, nil
}

// classify returns what a teardown needs to know about p.
func classify(p *corev1.Pod) teardown.Pod {
	_, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]
	return teardown.Pod{
		Namespace:   p.Namespace,
		Name:        p.Name,
		DaemonSet:   isDaemonSetPod(p),
		Mirror:      mirror,
		Terminating: p.DeletionTimestamp != nil,
		Finished:    p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
	}
}

// isDaemonSetPod reports whether a DaemonSet controls p, as kubectl drain
// decides it: the controller reference names an apps/v1 DaemonSet.
func isDaemonSetPod(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return false
	}
	apiVersion, kind := appsv1.SchemeGroupVersion.WithKind("DaemonSet").ToAPIVersionAndKind()
	return ref.APIVersion == apiVersion && ref.Kind == kind
}

// SetLabels sets (value non-nil) or removes (value nil) labels on the node
// with one JSON merge patch (RFC 7386) that names only those labels, so
// labels that other clients set meanwhile are kept. Setting a label to the
// value it has, or removing an absent one, changes nothing and is not an
// error. The node the server returns is checked: a label that did not
// take the value asked for is an error. Keys and values are validated
// before anything is sent.
func (c *Cluster) SetLabels(ctx context.Context, name string, labels map[string]*string) error {
	if err := checkName(name, OpSetLabels); err != nil {
		return err
	}
	patchLabels := make(map[string]*string, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		field := "labels[" + k + "]"
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return inputError(name, OpSetLabels, field, "invalid label key: %s", strings.Join(errs, "; "))
		}
		if v := labels[k]; v != nil {
			if errs := validation.IsValidLabelValue(*v); len(errs) > 0 {
				return inputError(name, OpSetLabels, field, "invalid label value %q: %s", *v, strings.Join(errs, "; "))
			}
		}
		patchLabels[k] = labels[k]
	}
	if len(labels) == 0 {
		_, err := c.getNode(ctx, name, OpSetLabels)
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patchLabels}})
	if err != nil {
		return &Error{Node: name, Op: OpSetLabels, Err: err}
	}
	n, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return apiError(name, OpSetLabels, err, true)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		got, has := n.Labels[k]
		switch want := labels[k]; {
		case want == nil && has:
			return &Error{Node: name, Op: OpSetLabels, Field: "labels[" + k + "]",
				Err: errors.New("the label is still on the node after its removal")}
		case want != nil && (!has || got != *want):
			return &Error{Node: name, Op: OpSetLabels, Field: "labels[" + k + "]",
				Err: fmt.Errorf("the node holds %q after the label was set to %q", got, *want)}
		}
	}
	return nil
}

// DeleteNode deletes the Node object and confirms that it is gone. The
// deletion is preconditioned on the UID read just before, so a node that
// registered again under the same name meanwhile is not deleted in its
// place (the error is a 409 Conflict from the server). A node that the
// server keeps (finalizers) is an error naming the finalizers, and so is
// a node that registered again right after the deletion: either way the
// node is still in the cluster.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	if err := checkName(name, OpDelete); err != nil {
		return err
	}
	n, err := c.getNode(ctx, name, OpDelete)
	if err != nil {
		return err
	}
	uid := n.UID
	err = c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		return apiError(name, OpDelete, err, true)
	}
	after, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return &Error{Node: name, Op: OpDelete, Err: fmt.Errorf("deleted, but the deletion could not be confirmed: %w", err)}
	case after.UID != uid:
		return &Error{Node: name, Op: OpDelete, Err: errors.New("deleted, but a node of the same name registered again since")}
	default:
		return &Error{Node: name, Op: OpDelete, Err: fmt.Errorf("the node is still there after its deletion (finalizers %v)", after.Finalizers)}
	}
}
