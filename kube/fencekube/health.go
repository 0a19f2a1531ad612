package fencekube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/policy"
)

// The labels that mark a control-plane node.
const (
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	// LabelMaster is the label older clusters use.
	LabelMaster = "node-role.kubernetes.io/master"
)

// RBAC (deploy/rbac.yaml is generated from these markers): the nodes'
// health, from an informer.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// Health tells the nodes' health from a Node informer that its owner runs
// (a controller-runtime manager's cache, or NewNodeInformer's), given with
// UseInformer or UseCache. It implements controller.Health. Wait for
// HasSynced (WaitForSync) before the controller's first pass: until then
// Nodes returns nothing, and policy gates that count unresponsive nodes
// would count from a partial list.
type Health struct {
	src      source
	onChange func()
	leases   *Leases
}

// UseLeases has Nodes and Node set NodeHealth.LeaseRenewed from l (which
// its owner starts). Call it before UseInformer.
func (h *Health) UseLeases(l *Leases) { h.leases = l }

// withLease sets nh's LeaseRenewed.
func (h *Health) withLease(nh controller.NodeHealth) controller.NodeHealth {
	if h.leases != nil {
		nh.LeaseRenewed = h.leases.Renewed(nh.Name)
	}
	return nh
}

// OnChange has f called, from the informer's goroutine, whenever a node
// appears, goes, or its Ready condition changes, once the informer holds
// the change: a controller woken by it (controller.Controller.Wake) sees
// the change in its next pass. A wake from another informer of the same
// nodes could come first, and the pass would miss the change until the
// next interval. Call it before UseInformer.
func (h *Health) OnChange(f func()) { h.onChange = f }

// NewHealth returns a Health that reads nothing until it is given its
// Node informer (UseInformer, UseCache).
func NewHealth() *Health { return &Health{} }

// NewNodeInformer returns an informer of client's Nodes (unstarted: its
// owner runs it) whose cache keeps what transform returns of each:
// SummarizeNode for what Health reads. For a host without a
// controller-runtime manager, whose cache (kube/fencectrl's CacheOptions)
// is the informer otherwise.
func NewNodeInformer(client kubernetes.Interface, transform cache.TransformFunc) cache.SharedIndexInformer {
	nodes := client.CoreV1().Nodes()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return nodes.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Node{}, 0, cache.Indexers{})
	if transform != nil {
		_ = inf.SetTransform(transform)
	}
	return inf
}

// UseInformer has h read the nodes from inf, a Node informer its owner runs
// (a controller-runtime manager's cache, or NewNodeInformer's), and adds
// OnChange's handler to it. Give the owner SummarizeNode as the informer's
// transform to keep its cache small. A second call does nothing.
func (h *Health) UseInformer(inf cache.SharedIndexInformer) { h.UseCache(inf, inf.GetStore()) }

// UseCache is UseInformer for an informer that gives its objects through
// items rather than a Store.
func (h *Health) UseCache(inf Informer, items Lister) {
	if h.src.hasGiven() {
		return
	}
	h.addHandler(inf)
	h.src.use(items, inf)
}

// addHandler has inf call OnChange's function.
func (h *Health) addHandler(inf Informer) {
	f := h.onChange
	if f == nil {
		return
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(old, cur any) {
			if NodeReadyChanged(old, cur) {
				f()
			}
		},
		DeleteFunc: func(any) { f() },
	})
}

// ReadyChanged reports whether two versions of a node differ in their
// Ready condition's status or transition time.
func ReadyChanged(a, b *corev1.Node) bool { return NodeReadyChanged(a, b) }

// NodeReadyChanged is ReadyChanged for what a Node informer holds (a
// *NodeSummary or a *corev1.Node); true when either is neither.
func NodeReadyChanged(old, cur any) bool {
	a, ok1 := summaryOf(old)
	b, ok2 := summaryOf(cur)
	if !ok1 || !ok2 {
		return true
	}
	ha, hb := a.Health(), b.Health()
	return ha.Ready != hb.Ready || !ha.Since.Equal(hb.Since)
}

// Condition returns the node's condition of type t as the informer holds
// it: the summary keeps Ready (its status and transition time) and
// DeviceConditionType.
func (h *Health) Condition(node string, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	inf := h.src.informer()
	if inf == nil {
		return corev1.NodeCondition{}, false
	}
	obj, ok, err := inf.GetByKey(node)
	if err != nil || !ok {
		return corev1.NodeCondition{}, false
	}
	s, ok := summaryOf(obj)
	if !ok {
		return corev1.NodeCondition{}, false
	}
	switch {
	case t == DeviceConditionType && s.Device != nil:
		return *s.Device, true
	case t == corev1.NodeReady && s.Ready != "":
		return corev1.NodeCondition{Type: t, Status: s.Ready, LastTransitionTime: metav1.NewTime(s.ReadySince)}, true
	}
	return corev1.NodeCondition{}, false
}

// HasSynced reports whether the informer has synced.
func (h *Health) HasSynced() bool { return h.src.hasSynced() }

// WaitForSync waits until the informer was given and has synced, or ctx
// ends.
func (h *Health) WaitForSync(ctx context.Context) error { return h.src.waitForSync(ctx) }

// Nodes returns the health of every node the informer holds, in no
// particular order; nil before the informer has synced. The Labels maps are the
// informer's: read them, never change them.
func (h *Health) Nodes() []controller.NodeHealth {
	inf := h.src.informer()
	if inf == nil {
		return nil
	}
	items := inf.List()
	out := make([]controller.NodeHealth, 0, len(items))
	for _, it := range items {
		if n, ok := summaryOf(it); ok {
			out = append(out, h.withLease(n.Health()))
		}
	}
	return out
}

// Lifecycle returns, as maintenances for the gate policy.UnderMaintenance,
// the nodes whose node lifecycle conditions (LifecycleConditions) are
// True, one per condition; nil before the informer has synced.
func (h *Health) Lifecycle() []policy.Maintenance {
	inf := h.src.informer()
	if inf == nil {
		return nil
	}
	var out []policy.Maintenance
	for _, it := range inf.List() {
		n, ok := summaryOf(it)
		if !ok {
			continue
		}
		for _, c := range n.Lifecycle {
			why := c.Message
			if why == "" {
				why = c.Reason
			}
			out = append(out, policy.Maintenance{Node: n.Name, Kind: "condition", Name: string(c.Type), Reason: why})
		}
	}
	return out
}

// Node returns the health of one node from the informer; false when the
// informer has not synced or holds no such node.
func (h *Health) Node(name string) (controller.NodeHealth, bool) {
	inf := h.src.informer()
	if inf == nil {
		return controller.NodeHealth{}, false
	}
	obj, ok, err := inf.GetByKey(name)
	if err != nil || !ok {
		return controller.NodeHealth{}, false
	}
	n, ok := summaryOf(obj)
	if !ok {
		return controller.NodeHealth{}, false
	}
	return h.withLease(n.Health()), true
}

// NodeHealthOf returns the health of a node: Ready when its Ready
// condition is True (False and Unknown are not ready), Since the
// condition's lastTransitionTime. A node without a Ready condition (its
// kubelet never reported) is not ready since its creation. ControlPlane is
// set by the label node-role.kubernetes.io/control-plane or
// node-role.kubernetes.io/master, whatever its value. Labels is a copy
// whose strings are shared with other nodes' (internLabels).
func NodeHealthOf(n *corev1.Node) controller.NodeHealth { return Summarize(n).Health() }

var _ controller.Health = (*Health)(nil)
