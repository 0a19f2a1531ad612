package fencekube

import (
	"context"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/fencekit/fencekit/fence/controller"
)

// The labels that mark a control-plane node.
const (
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	// LabelMaster is the label older clusters use.
	LabelMaster = "node-role.kubernetes.io/master"
)

// Health tells the nodes' health from a Node informer. It implements
// controller.Health. Call Start, then wait for HasSynced (WaitForSync)
// before the controller's first pass: until then Nodes returns what the
// informer has, which may be nothing, and policy gates that count
// unresponsive nodes would count from a partial list.
type Health struct {
	client   kubernetes.Interface
	runner   runner
	onChange func()
	leases   *Leases
}

// UseLeases has Nodes and Node set NodeHealth.LeaseRenewed from l (which
// its owner starts). Call it before Start.
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
// next interval. Call it before Start.
func (h *Health) OnChange(f func()) { h.onChange = f }

// NewHealth returns the Health of client's nodes.
func NewHealth(client kubernetes.Interface) *Health {
	return &Health{client: client}
}

// Start starts the Node informer. It runs until ctx ends or Stop is
// called. Calling it again does nothing.
func (h *Health) Start(ctx context.Context) {
	h.runner.start(ctx, func(inf Informer) (Informer, syncer) {
		if inf != nil {
			h.addHandler(inf)
			return inf, inf
		}
		own := NewNodeInformer(h.client, StripNode)
		h.addHandler(own)
		return own, own
	})
}

// NewNodeInformer returns an informer of client's Nodes (unstarted) whose
// cache keeps what transform returns of each: StripNode for what Health
// reads, or more for other readers. Give it to Health (UseInformer) and to
// the other readers of the nodes, so that they share one watch.
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
// (a controller-runtime manager's cache), instead of starting its own:
// Start then adds h's handler to it and starts nothing, and Stop leaves it
// running. Give the owner StripNode as the informer's transform to keep its
// cache small. Call it before Start.
func (h *Health) UseInformer(inf cache.SharedIndexInformer) { h.runner.use(inf, inf.GetStore()) }

// UseCache is UseInformer for an informer that gives its objects through
// items rather than a Store (a controller-runtime cache's). Call it before
// Start.
func (h *Health) UseCache(inf Informer, items Lister) { h.runner.use(inf, items) }

// addHandler has inf call OnChange's function.
func (h *Health) addHandler(inf Informer) {
	f := h.onChange
	if f == nil {
		return
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || ReadyChanged(o, n) {
				f()
			}
		},
		DeleteFunc: func(any) { f() },
	})
}

// ReadyChanged reports whether two versions of a node differ in their
// Ready condition's status or transition time.
func ReadyChanged(a, b *corev1.Node) bool {
	ha, hb := NodeHealthOf(a), NodeHealthOf(b)
	return ha.Ready != hb.Ready || !ha.Since.Equal(hb.Since)
}

// StripNode keeps of a Node what NodeHealthOf reads (its name, labels,
// creation time, Ready condition, system UUID and InternalIP addresses), so that the cache of thousands of
// nodes stays small: a kubelet's Node carries its images, addresses,
// capacity, system information and several conditions, kilobytes each.
//
// It is the transform of Health's own informer; give it to a Node
// informer Health uses (UseInformer) too.
func StripNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
		Labels: internLabels(n.Name, n.Labels), CreationTimestamp: n.CreationTimestamp,
	}}
	slim.Status.NodeInfo.SystemUUID = n.Status.NodeInfo.SystemUUID
	slim.Spec.Unschedulable = n.Spec.Unschedulable
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			slim.Status.Addresses = append(slim.Status.Addresses, a)
		}
	}
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			slim.Status.Conditions = append(slim.Status.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		case DeviceConditionType:
			// What the device checks wrote, so that they do not write it
			// again (DeviceConditions.Current).
			slim.Status.Conditions = append(slim.Status.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status,
				Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		}
	}
	return slim, nil
}

// internLabels returns labels with one copy of each key and value shared
// by every node (the hostname label's value is the node's name): the
// nodes of a cluster carry mostly the same labels, and a copy of each per
// node was about a tenth of the controller's heap at 5,000 nodes.
func internLabels(name string, labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if v == name {
			v = name
		} else {
			v = unique.Make(v).Value()
		}
		out[unique.Make(k).Value()] = v
	}
	return out
}

// Condition returns the node's condition of type t as the informer holds
// it (StripNode keeps Ready and DeviceConditionType).
func (h *Health) Condition(node string, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	inf := h.runner.informer()
	if inf == nil {
		return corev1.NodeCondition{}, false
	}
	obj, ok, err := inf.GetByKey(node)
	if err != nil || !ok {
		return corev1.NodeCondition{}, false
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return corev1.NodeCondition{}, false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

// HasSynced reports whether the informer has synced.
func (h *Health) HasSynced() bool { return h.runner.hasSynced() }

// WaitForSync waits until the informer has synced or ctx ends.
func (h *Health) WaitForSync(ctx context.Context) error { return h.runner.waitForSync(ctx) }

// Stop stops the informer and waits for it.
func (h *Health) Stop() { h.runner.stop() }

// Nodes returns the health of every node the informer holds, in no
// particular order; nil before the informer has synced. The Labels maps are the
// informer's: read them, never change them.
func (h *Health) Nodes() []controller.NodeHealth {
	inf := h.runner.informer()
	if inf == nil {
		return nil
	}
	items := inf.List()
	out := make([]controller.NodeHealth, 0, len(items))
	for _, it := range items {
		if n, ok := it.(*corev1.Node); ok {
			out = append(out, h.withLease(NodeHealthOf(n)))
		}
	}
	return out
}

// Node returns the health of one node from the informer; false when the
// informer has not synced or holds no such node.
func (h *Health) Node(name string) (controller.NodeHealth, bool) {
	inf := h.runner.informer()
	if inf == nil {
		return controller.NodeHealth{}, false
	}
	obj, ok, err := inf.GetByKey(name)
	if err != nil || !ok {
		return controller.NodeHealth{}, false
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return controller.NodeHealth{}, false
	}
	return h.withLease(NodeHealthOf(n)), true
}

// NodeHealthOf returns the health of a node: Ready when its Ready
// condition is True (False and Unknown are not ready), Since the
// condition's lastTransitionTime. A node without a Ready condition (its
// kubelet never reported) is not ready since its creation. ControlPlane is
// set by the label node-role.kubernetes.io/control-plane or
// node-role.kubernetes.io/master, whatever its value. Labels is the node's
// own map, not a copy.
func NodeHealthOf(n *corev1.Node) controller.NodeHealth {
	nh := controller.NodeHealth{Name: n.Name, Labels: n.Labels, Since: n.CreationTimestamp.Time,
		SystemUUID: n.Status.NodeInfo.SystemUUID, Unschedulable: n.Spec.Unschedulable}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			nh.Addresses = append(nh.Addresses, a.Address)
		}
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type != corev1.NodeReady {
			continue
		}
		nh.Ready = c.Status == corev1.ConditionTrue
		if !c.LastTransitionTime.IsZero() {
			nh.Since = c.LastTransitionTime.Time
		}
		break
	}
	_, cp := n.Labels[LabelControlPlane]
	_, master := n.Labels[LabelMaster]
	nh.ControlPlane = cp || master
	return nh
}

var _ controller.Health = (*Health)(nil)
