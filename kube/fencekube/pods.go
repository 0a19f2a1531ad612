package fencekube

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
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ctxsleep"
)

// OutOfServiceTaint returns the taint of Kubernetes' non-graceful node
// shutdown, node.kubernetes.io/out-of-service=nodeshutdown:NoExecute,
// added at t. With it on a node that is off, Kubernetes force-deletes the
// node's pods and detaches their volumes, so that StatefulSet pods start
// elsewhere.
func OutOfServiceTaint(t time.Time) corev1.Taint {
	at := metav1.NewTime(t)
	return corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &at}
}

// isOutOfService reports whether t is the out-of-service taint (any value).
func isOutOfService(t corev1.Taint) bool {
	return t.Key == corev1.TaintNodeOutOfService && t.Effect == corev1.TaintEffectNoExecute
}

// HasOutOfServiceTaint reports whether the node has the out-of-service
// taint with the NoExecute effect (whatever its value).
func HasOutOfServiceTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if isOutOfService(t) {
			return true
		}
	}
	return false
}

// RBAC: the out-of-service and hold taints (a Node read, then written
// back with its resourceVersion); with LeaseFresh, a fenced node's lease
// read before it is tainted (its Ready condition may still say True). The
// node's pods, listed by spec.nodeName: after a power fence they are
// force-deleted once the node is tainted (or, with DeletePods, instead of
// the taint), and the node is switched on again only once they are gone,
// watching them and the node's volume attachments while it waits (without
// the volume attachments, the pods alone decide).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=list;watch

// TaintPods is the pod treatment of the out-of-service taint. It
// implements controller.Pods:
//
//   - Release(flow.ReleasePower) adds the taint. The controller asks for
//     it only once a device confirmed the node off, as Kubernetes requires
//     of this taint. Release(flow.ReleaseDump) adds it too: the node runs
//     its kdump kernel, not its workloads (an option of the controller,
//     flow.Options.ReleaseOnDump). A node whose Ready condition is True when it is asked
//     (a power management step that switched it off and on again, and its
//     kubelet is back) is not tainted: its kubelet runs its pods, there is
//     nothing to release, and Release succeeds.
//   - With ForceDelete, a power release first force-deletes the node's
//     pods (DeletePods), so that their StatefulSets need not wait for the
//     pod garbage collector, waits until the StatefulSets have made the
//     new pods of the same names (at most ReplacementWait), and only then
//     adds the taint. The other order loses new pods: the controller
//     manager's taint eviction, woken by the taint, deletes each pod it
//     still knows on the node by name, without the pod's UID, and a
//     StatefulSet's new pod of that name, made in between, is deleted in
//     its place. A new pod made by the StatefulSet controller shows that
//     the controller manager's pod informer, which taint eviction shares,
//     has seen the old pod go.
//   - Release(flow.ReleaseStorage) does nothing but log: the taint is only
//     for a node verified off, and an isolated node may still run. Use
//     DeletePods for a storage release.
//   - Restore removes the taint, once the node is back and ready or its
//     fencing is abandoned.
//
// Both are idempotent. The Node is read and written with its
// resourceVersion, again on a conflict (a few times). A node that does not
// exist has nothing to taint or untaint: Release and Restore succeed (the
// pods of a deleted node are garbage-collected by Kubernetes).
type TaintPods struct {
	// Client reads and writes the API server (not a cache: a
	// controller-runtime manager's cache of Nodes holds summaries), and
	// watches the node's pods while it waits for them to go.
	Client client.WithWatch
	// Now is the clock of the taint's timeAdded (time.Now when nil).
	Now func() time.Time
	// Logger receives a line per change (discarded when nil).
	Logger *slog.Logger
	// ForceDelete, for a power release, force-deletes the node's pods
	// (as DeletePods does) before the taint, instead of waiting for
	// Kubernetes' pod garbage collector, which deletes the pods of an
	// out-of-service node only every 20 s: the node is verified off, its
	// pods cannot run, and their StatefulSets make new ones elsewhere at
	// once. The taint, added once they have, still has their volumes
	// detached. Never for a storage or a kdump release: the node may
	// still run.
	ForceDelete bool
	// ReplacementWait bounds how long a power release with ForceDelete
	// waits, after the deletions and before the taint, for the
	// StatefulSets to replace the pods deleted (DefaultReplacementWait
	// when zero; a StatefulSet whose pods start in order makes the next
	// only once the one before runs, which needs the taint).
	ReplacementWait time.Duration
	// LeaseFresh, when above 0, makes a node count as ready (and not
	// tainted) only while its kubelet's Lease was renewed within it, not
	// on its Ready condition alone: with detection from the lease
	// (controller.Options.LeaseGrace, the same duration) a node is fenced
	// before the controller manager turns its Ready condition, which still
	// says True.
	LeaseFresh time.Duration
	// Renewed, when set, tells when the controller saw node's lease
	// renewed, on its own clock (Leases.Renewed): LeaseFresh is judged by
	// it, not by the renewTime the node's kubelet wrote, which the node's
	// clock could put anywhere. Zero: unknown.
	Renewed func(node string) time.Time
}

func (t *TaintPods) logger() *slog.Logger {
	if t.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Logger
}

// Release adds the out-of-service taint for a power release.
func (t *TaintPods) Release(ctx context.Context, node string, r flow.Release) error {
	switch r {
	case flow.ReleasePower, flow.ReleaseDump:
	case flow.ReleaseStorage:
		t.logger().Info("storage release: no taint (the out-of-service taint is only for a node verified off)", "node", node)
		return nil
	default:
		return &Error{Kind: "Node", Name: node, Op: OpTaint, Field: "release", Err: fmt.Errorf("unknown pod release %q", r)}
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	added, ready := false, false
	leaseFresh := t.leaseFresh(ctx, node, now())
	deleteFirst := t.ForceDelete && r == flow.ReleasePower
	if deleteFirst {
		n := &corev1.Node{}
		err := t.Client.Get(ctx, client.ObjectKey{Name: node}, n)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return &Error{Kind: "Node", Name: node, Op: OpTaint, Err: err}
		case HasOutOfServiceTaint(n):
			// Tainted already (an earlier try): delete what is left.
			return (&DeletePods{Client: t.Client, Logger: t.Logger}).Release(ctx, node, flow.ReleasePower)
		case NodeHealthOf(n).Ready && leaseFresh:
			t.logger().Info("node ready again: no out-of-service taint", "node", node)
			return nil
		}
		if err := t.deleteBeforeTaint(ctx, node); err != nil {
			return err
		}
	}
	err := t.update(ctx, node, OpTaint, func(n *corev1.Node) bool {
		if HasOutOfServiceTaint(n) {
			return false
		}
		if ready = NodeHealthOf(n).Ready && leaseFresh; ready {
			return false // back already: its kubelet runs its pods
		}
		n.Spec.Taints = append(n.Spec.Taints, OutOfServiceTaint(now()))
		added = true
		return true
	})
	switch {
	case err != nil:
		return err
	case added:
		t.logger().Info("out-of-service taint added", "node", node)
	case ready:
		t.logger().Info("node ready again: no out-of-service taint", "node", node)
		return nil
	}
	return nil
}

// DefaultReplacementWait is TaintPods.ReplacementWait when zero.
const DefaultReplacementWait = 5 * time.Second

// replacementPoll is how often deleteBeforeTaint looks for the new pods.
const replacementPoll = 20 * time.Millisecond

// deleteBeforeTaint force-deletes the node's pods, then waits until the
// StatefulSets among their owners have made new pods of the same names,
// at most ReplacementWait.
func (t *TaintPods) deleteBeforeTaint(ctx context.Context, node string) error {
	d := &DeletePods{Client: t.Client, Logger: t.Logger}
	deleted, err := d.forceDelete(ctx, node, func(*corev1.Pod) bool { return true }, flow.ReleasePower)
	if err != nil {
		return err
	}
	var wait []*corev1.Pod
	for _, p := range deleted {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "StatefulSet" {
			wait = append(wait, p)
		}
	}
	if len(wait) == 0 {
		return nil
	}
	bound := t.ReplacementWait
	if bound <= 0 {
		bound = DefaultReplacementWait
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	told := false
	for {
		wait = slices.DeleteFunc(wait, func(old *corev1.Pod) bool {
			p := &corev1.Pod{}
			err := t.Client.Get(wctx, client.ObjectKeyFromObject(old), p)
			if err != nil && !apierrors.IsNotFound(err) && wctx.Err() == nil && !told {
				told = true
				t.logger().Info("cannot read a deleted pod's replacement (waiting out the bound)", "node", node,
					"pod", old.Namespace+"/"+old.Name, "err", err.Error())
			}
			return err == nil && p.UID != old.UID
		})
		if len(wait) == 0 {
			t.logger().Info("the StatefulSets replaced the pods deleted; adding the taint", "node", node, "after", time.Since(start).Round(time.Millisecond).String())
			return nil
		}
		if err := ctxsleep.Sleep(wctx, replacementPoll); err != nil {
			if ctx.Err() != nil {
				return &Error{Kind: "Node", Name: node, Op: OpTaint, Err: ctx.Err()}
			}
			names := make([]string, 0, len(wait))
			for _, p := range wait {
				names = append(names, p.Namespace+"/"+p.Name)
			}
			t.logger().Info("not every StatefulSet pod deleted was replaced in time; adding the taint", "node", node, "waited", bound.String(), "pods", strings.Join(names, ", "))
			return nil
		}
	}
}

// leaseFresh reports whether node's lease was renewed within LeaseFresh
// of now (as Renewed tells, else from the Lease read now); true when
// LeaseFresh is 0 or the lease cannot be read (the Ready condition alone
// decides then).
func (t *TaintPods) leaseFresh(ctx context.Context, node string, now time.Time) bool {
	if t.LeaseFresh <= 0 {
		return true
	}
	if t.Renewed != nil {
		at := t.Renewed(node)
		return at.IsZero() || now.Sub(at) <= t.LeaseFresh
	}
	le := &coordinationv1.Lease{}
	err := t.Client.Get(ctx, client.ObjectKey{Namespace: NodeLeaseNamespace, Name: node}, le)
	if err != nil || le.Spec.RenewTime == nil {
		return true
	}
	return now.Sub(le.Spec.RenewTime.Time) <= t.LeaseFresh
}

// Restore removes the out-of-service taint.
func (t *TaintPods) Restore(ctx context.Context, node string) error {
	removed := false
	err := t.update(ctx, node, OpUntaint, func(n *corev1.Node) bool {
		kept := n.Spec.Taints[:0:0]
		for _, tt := range n.Spec.Taints {
			if !isOutOfService(tt) {
				kept = append(kept, tt)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return false
		}
		n.Spec.Taints = kept
		removed = true
		return true
	})
	if err == nil && removed {
		t.logger().Info("out-of-service taint removed", "node", node)
	}
	return err
}

// update reads the node, lets change modify it and writes it when change
// returns true, again on a conflict.
func (t *TaintPods) update(ctx context.Context, node, op string, change func(*corev1.Node) bool) error {
	return updateNode(ctx, t.Client, t.logger(), node, op, change)
}

// HoldTaintKey is the key of the taint that holds a node while it is
// fenced and until it has been healthy for the healthy delay after its
// recovery (Effect NoSchedule): the scheduler puts no new pod there, and
// what runs there keeps running.
const HoldTaintKey = "fencekit.io/fencing"

// HoldTaint returns the taint that holds a node, added at t.
func HoldTaint(t time.Time) corev1.Taint {
	at := metav1.NewTime(t)
	return corev1.Taint{Key: HoldTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &at}
}

// HasHoldTaint reports whether the node carries the hold taint.
func HasHoldTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == HoldTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// Hold adds the hold taint (controller.Holder).
func (t *TaintPods) Hold(ctx context.Context, node string) error {
	return holdNode(ctx, t.Client, t.logger(), node, true)
}

// Unhold removes the hold taint (controller.Holder).
func (t *TaintPods) Unhold(ctx context.Context, node string) error {
	return holdNode(ctx, t.Client, t.logger(), node, false)
}

// holdNode adds or removes the hold taint.
func holdNode(ctx context.Context, c client.Client, logger *slog.Logger, node string, hold bool) error {
	op, changed := OpUntaint, false
	if hold {
		op = OpTaint
	}
	err := updateNode(ctx, c, logger, node, op, func(n *corev1.Node) bool {
		if HasHoldTaint(n) == hold {
			return false
		}
		if hold {
			n.Spec.Taints = append(n.Spec.Taints, HoldTaint(time.Now()))
		} else {
			n.Spec.Taints = slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool {
				return t.Key == HoldTaintKey && t.Effect == corev1.TaintEffectNoSchedule
			})
		}
		changed = true
		return true
	})
	if err == nil && changed {
		logger.Info(map[bool]string{true: "node held: taint " + HoldTaintKey + ":NoSchedule added", false: "node no longer held: taint " + HoldTaintKey + " removed"}[hold], "node", node)
	}
	return err
}

// updateNode reads the node, lets change modify it and writes it when
// change returns true, again on a conflict. A node that does not exist has
// nothing to change.
func updateNode(ctx context.Context, c client.Client, logger *slog.Logger, node, op string, change func(*corev1.Node) bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		return c.Update(ctx, n)
	})
	if apierrors.IsNotFound(err) {
		logger.Info("node not found: nothing to change", "node", node, "op", op)
		return nil
	}
	if err != nil {
		return &Error{Kind: "Node", Name: node, Op: op, Field: "spec.taints", Err: err}
	}
	return nil
}

// UsesStorage reports whether a pod uses persistent storage: a volume of a
// PersistentVolumeClaim, or a generic ephemeral volume (which is one).
func UsesStorage(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// DeletePods is the pod treatment of force deletion. It implements
// controller.Pods:
//
//   - Release(flow.ReleaseStorage) force-deletes (grace period 0) the
//     node's pods that use persistent storage (UsesStorage, or Select when
//     set): the node-fencing design's rule, after a storage fence the pods
//     that used that storage can be deleted.
//   - Release(flow.ReleasePower) force-deletes all the node's pods: after
//     a power fence, all of the node's resources can be removed. So does
//     Release(flow.ReleaseDump), for a node that dumps its kernel.
//   - Restore does nothing: deleted pods are not brought back; their
//     controllers made new ones elsewhere.
//
// Pods are listed with the field selector spec.nodeName, page by page,
// and each is deleted with its UID as a precondition, so that a new pod of
// the same name is never deleted in its place. A pod already gone is not
// an error; Release is idempotent.
//
// A storage release cannot know which storage the isolation cut: it takes
// every pod with a claim. When some of the node's claims are on storage
// the isolation does not cover (NFS beside Fibre Channel), set Select to
// pick only the pods whose storage the isolation cut.
type DeletePods struct {
	// Client reads and writes the API server, and watches the node's pods
	// while it waits for them to go.
	Client client.WithWatch
	// Select, when set, replaces UsesStorage for a storage release.
	Select func(*corev1.Pod) bool
	// Logger receives a line per pod deleted (discarded when nil).
	Logger *slog.Logger
	// PageSize is the page size of the pod list (500 when zero).
	PageSize int64
}

// Release force-deletes the node's pods that r releases.
func (d *DeletePods) Release(ctx context.Context, node string, r flow.Release) error {
	sel := d.Select
	if sel == nil {
		sel = UsesStorage
	}
	switch r {
	case flow.ReleaseStorage:
	case flow.ReleasePower, flow.ReleaseDump:
		sel = func(*corev1.Pod) bool { return true }
	default:
		return &Error{Kind: "Node", Name: node, Op: OpDeletePods, Field: "release", Err: fmt.Errorf("unknown pod release %q", r)}
	}
	_, err := d.forceDelete(ctx, node, sel, r)
	return err
}

// forceDelete force-deletes the node's pods that sel selects, each with its
// UID as a precondition, and returns those it deleted.
func (d *DeletePods) forceDelete(ctx context.Context, node string, sel func(*corev1.Pod) bool, r flow.Release) ([]*corev1.Pod, error) {
	logger := d.logger()
	pods, err := d.list(ctx, node)
	if err != nil {
		return nil, &Error{Kind: "Node", Name: node, Op: OpDeletePods, Err: err}
	}
	var errs []error
	var deleted []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node || !sel(p) { // the field selector, checked again
			continue
		}
		uid := p.UID
		err := d.Client.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
		switch {
		case err == nil:
			deleted = append(deleted, p)
			logger.Info("pod force-deleted", "node", node, "pod", p.Namespace+"/"+p.Name, "release", string(r))
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// gone already, or another pod of that name now
		default:
			if len(errs) < maxFieldErrors {
				errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
			}
		}
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
	}
	if len(errs) > 0 {
		return deleted, &Error{Kind: "Node", Name: node, Op: OpDeletePods, Err: errors.Join(errs...)}
	}
	return deleted, nil
}

// Restore does nothing: deleted pods stay deleted.
func (d *DeletePods) Restore(context.Context, string) error { return nil }

func (d *DeletePods) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// Hold adds the hold taint (controller.Holder), as TaintPods does.
func (d *DeletePods) Hold(ctx context.Context, node string) error {
	return holdNode(ctx, d.Client, d.logger(), node, true)
}

// Unhold removes the hold taint (controller.Holder).
func (d *DeletePods) Unhold(ctx context.Context, node string) error {
	return holdNode(ctx, d.Client, d.logger(), node, false)
}

func (d *DeletePods) list(ctx context.Context, node string) ([]corev1.Pod, error) {
	return listNodePods(ctx, d.Client, node, d.PageSize)
}

// Gone reports whether the pods Release(r) deleted are gone from the node
// and its volumes detached (controller.PodsWaiter).
func (d *DeletePods) Gone(ctx context.Context, node string, r flow.Release) (bool, string, error) {
	sel := d.Select
	if sel == nil {
		sel = UsesStorage
	}
	if r == flow.ReleasePower || r == flow.ReleaseDump {
		sel = func(*corev1.Pod) bool { return true }
	}
	return podsGone(ctx, d.Client, node, d.PageSize, sel)
}

// Gone reports whether the node's pods are gone after the out-of-service
// taint (controller.PodsWaiter): the controller manager's taint eviction and
// pod garbage collector delete every pod that does not tolerate the taint,
// and its attach-detach controller detaches the node's volumes. A pod that
// tolerates the taint stays: it is not waited for. A storage release
// applies no taint and has nothing to wait for.
func (t *TaintPods) Gone(ctx context.Context, node string, r flow.Release) (bool, string, error) {
	if r != flow.ReleasePower && r != flow.ReleaseDump {
		return true, "", nil
	}
	taint := OutOfServiceTaint(time.Time{})
	return podsGone(ctx, t.Client, node, 0, func(p *corev1.Pod) bool {
		for i := range p.Spec.Tolerations {
			if p.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &taint, false) {
				return false
			}
		}
		return true
	})
}

// podsGone reports whether no pod selected by sel is left on the node (pods
// that ended, Succeeded or Failed, hold nothing and do not count) and no
// VolumeAttachment names the node. A cluster that serves no
// VolumeAttachments, or does not let the controller list them, has none to
// wait for.
func podsGone(ctx context.Context, c client.Client, node string, pageSize int64, sel func(*corev1.Pod) bool) (bool, string, error) {
	pods, err := listNodePods(ctx, c, node, pageSize)
	if err != nil {
		return false, "", &Error{Kind: "Node", Name: node, Op: OpListPods, Err: err}
	}
	left := 0
	first := ""
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !sel(p) {
			continue
		}
		if left == 0 {
			first = p.Namespace + "/" + p.Name
		}
		left++
	}
	var vas storagev1.VolumeAttachmentList
	err = c.List(ctx, &vas)
	attached := 0
	switch {
	case err == nil:
		for _, va := range vas.Items {
			if va.Spec.NodeName == node {
				attached++
			}
		}
	case noSuchResource(err):
	default:
		return false, "", &Error{Kind: "Node", Name: node, Op: OpListPods, Field: "volumeattachments", Err: err}
	}
	if left == 0 && attached == 0 {
		return true, "", nil
	}
	detail := fmt.Sprintf("%d pods left (%s), %d volume attachments", left, first, attached)
	if left == 0 {
		detail = fmt.Sprintf("no pods left, %d volume attachments", attached)
	}
	return false, detail, nil
}

// PodNodeNameField is the field selector by which a node's pods are listed
// and watched. A controller-runtime fake client needs an index of it
// (WithIndex(&corev1.Pod{}, PodNodeNameField, ...)).
const PodNodeNameField = "spec.nodeName"

// noSuchResource reports whether err says the resource is not served, or
// not to this client: there is nothing of it to wait for.
func noSuchResource(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err)
}

// listNodePods lists the pods bound to node, page by page.
func listNodePods(ctx context.Context, c client.Client, node string, size int64) ([]corev1.Pod, error) {
	if size <= 0 {
		size = 500
	}
	opts := &client.ListOptions{FieldSelector: fields.OneTermEqualSelector(PodNodeNameField, node), Limit: size}
	var out []corev1.Pod
	for page := 0; ; page++ {
		if page >= maxPages {
			return nil, fmt.Errorf("more than %d pages of pods", maxPages)
		}
		var l corev1.PodList
		if err := c.List(ctx, &l, opts); err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

var (
	_ controller.PodsWaiter = (*TaintPods)(nil)
	_ controller.PodsWaiter = (*DeletePods)(nil)
	_ controller.Pods       = (*TaintPods)(nil)
	_ controller.Pods       = (*DeletePods)(nil)
)
