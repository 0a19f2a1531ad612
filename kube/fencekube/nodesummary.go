package fencekube

import (
	"slices"
	"time"
	"unique"

	"github.com/fencekit/fencekit/fence/controller"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// NodeSummary is what the fence controller keeps of a Node in its cache
// (SummarizeNode, the transform of its Node informer): its name, labels,
// creation time, Ready condition, cordon, system UUID, InternalIP and
// ExternalIP addresses and the FenceDevicesReady condition. A Node object
// takes about 1.3 KiB of memory even cut to these fields (its struct alone
// is 784 bytes); a NodeSummary takes a third of it, which is most of what
// the controller keeps per node at 5,000 nodes (BENCHMARKS.md).
//
// It is a client.Object, so that a controller-runtime cache holds it and
// its watches deliver it, but it is not a Node: a cache whose Node
// informer has this transform (kube/fencectrl's CacheOptions) answers a
// client's Get or List of Nodes with an error. Read Nodes with an
// uncached reader (the manager's APIReader) there.
type NodeSummary struct {
	Name            string
	UID             types.UID
	ResourceVersion string
	// Labels are shared with the other nodes' summaries where they are
	// equal: read them, never change them.
	Labels        map[string]string
	Created       time.Time
	Unschedulable bool
	SystemUUID    string
	// Ready is the status of the Ready condition ("" without one), since
	// ReadySince (its lastTransitionTime).
	Ready      corev1.ConditionStatus
	ReadySince time.Time
	// Addresses are the InternalIP and ExternalIP addresses, in the
	// Node's order.
	Addresses []corev1.NodeAddress
	// Device is the FenceDevicesReady condition; nil without one.
	Device *corev1.NodeCondition
	// Lifecycle holds the node lifecycle conditions (LifecycleConditions)
	// that are True: the node is in maintenance, draining or shutting
	// down; nil when none is.
	Lifecycle []corev1.NodeCondition
}

// LifecycleConditions are the node conditions that say a node is taken
// out of service on purpose, as Kubernetes' node lifecycle design
// (KEP-5683) names them: while one is True the node is not fenced (the gate
// maintenance), as under a NodeMaintenance.
var LifecycleConditions = []corev1.NodeConditionType{"MaintenanceInProgress", "DrainInProgress", "GracefulNodeShutdownInProgress"}

// SummarizeNode is an informer transform: a *corev1.Node becomes its
// *NodeSummary; anything else is returned as it is (a summary already
// made, a tombstone).
func SummarizeNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return Summarize(n), nil
}

// Summarize returns the summary of n.
func Summarize(n *corev1.Node) *NodeSummary {
	s := &NodeSummary{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
		Labels: internLabels(n.Name, n.Labels), Created: n.CreationTimestamp.Time,
		Unschedulable: n.Spec.Unschedulable, SystemUUID: n.Status.NodeInfo.SystemUUID}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			s.Addresses = append(s.Addresses, a)
		}
	}
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			if s.Ready == "" {
				s.Ready, s.ReadySince = readyStatus(c.Status), c.LastTransitionTime.Time
			}
		case DeviceConditionType:
			// What the device checks wrote, so that they do not write it
			// again (DeviceConditions.Current); the first, as for Ready.
			if s.Device != nil {
				continue
			}
			s.Device = &corev1.NodeCondition{Type: c.Type, Status: c.Status,
				Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
		default:
			if c.Status == corev1.ConditionTrue && slices.Contains(LifecycleConditions, c.Type) {
				s.Lifecycle = append(s.Lifecycle, corev1.NodeCondition{Type: c.Type, Status: c.Status,
					Reason: clip(c.Reason, 128), Message: clip(c.Message, 256), LastTransitionTime: c.LastTransitionTime})
			}
		}
	}
	return s
}

// readyStatus returns s as one of the constants (no copy of the decoded
// string kept per node).
func readyStatus(s corev1.ConditionStatus) corev1.ConditionStatus {
	switch s {
	case corev1.ConditionTrue:
		return corev1.ConditionTrue
	case corev1.ConditionFalse:
		return corev1.ConditionFalse
	case corev1.ConditionUnknown, "":
		return corev1.ConditionUnknown // a condition without a status: not ready
	}
	return corev1.ConditionStatus(unique.Make(string(s)).Value())
}

// internLabels returns labels with one copy of each key and value shared
// by every node (the hostname label's value is the node's name): the
// nodes of a cluster carry mostly the same labels, and a copy of each per
// node was about a tenth of the controller's heap at 5,000 nodes.
func internLabels(name string, labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
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

// summaryOf returns obj's summary: obj itself when it is one, the summary
// of a *corev1.Node (an informer its owner runs without SummarizeNode),
// false for anything else.
func summaryOf(obj any) (*NodeSummary, bool) {
	switch o := obj.(type) {
	case *NodeSummary:
		return o, o != nil
	case *corev1.Node:
		if o == nil {
			return nil, false
		}
		return Summarize(o), true
	}
	return nil, false
}

// SummaryOf is summaryOf for the readers of a Node informer: a
// *NodeSummary, or a *corev1.Node summarized.
func SummaryOf(obj any) (*NodeSummary, bool) { return summaryOf(obj) }

// Health returns the node's health (NodeHealthOf's reading of it).
func (s *NodeSummary) Health() controller.NodeHealth {
	nh := controller.NodeHealth{Name: s.Name, Labels: s.Labels, Since: s.Created,
		SystemUUID: s.SystemUUID, Unschedulable: s.Unschedulable}
	for _, a := range s.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			nh.Addresses = append(nh.Addresses, a.Address)
		}
	}
	if s.Ready != "" {
		nh.Ready = s.Ready == corev1.ConditionTrue
		if !s.ReadySince.IsZero() {
			nh.Since = s.ReadySince
		}
	}
	_, cp := s.Labels[LabelControlPlane]
	_, master := s.Labels[LabelMaster]
	nh.ControlPlane = cp || master
	return nh
}

// The rest makes a NodeSummary a client.Object. Only its name, UID,
// resourceVersion, labels and creation time are kept; the setters of
// anything else do nothing.

// GetObjectKind returns the Node's kind: a summary stands for a Node.
func (s *NodeSummary) GetObjectKind() schema.ObjectKind { return nodeKind{} }

// nodeKind is the ObjectKind of every summary: v1 Node.
type nodeKind struct{}

func (nodeKind) SetGroupVersionKind(schema.GroupVersionKind) {}
func (nodeKind) GroupVersionKind() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("Node")
}

// DeepCopyObject returns a copy; its Labels map is shared (never changed).
func (s *NodeSummary) DeepCopyObject() runtime.Object {
	if s == nil {
		return nil
	}
	c := *s
	c.Addresses = append([]corev1.NodeAddress(nil), s.Addresses...)
	if s.Device != nil {
		d := *s.Device
		c.Device = &d
	}
	return &c
}

func (s *NodeSummary) GetNamespace() string               { return "" }
func (s *NodeSummary) SetNamespace(string)                {}
func (s *NodeSummary) GetName() string                    { return s.Name }
func (s *NodeSummary) SetName(name string)                { s.Name = name }
func (s *NodeSummary) GetGenerateName() string            { return "" }
func (s *NodeSummary) SetGenerateName(string)             {}
func (s *NodeSummary) GetUID() types.UID                  { return s.UID }
func (s *NodeSummary) SetUID(uid types.UID)               { s.UID = uid }
func (s *NodeSummary) GetResourceVersion() string         { return s.ResourceVersion }
func (s *NodeSummary) SetResourceVersion(v string)        { s.ResourceVersion = v }
func (s *NodeSummary) GetGeneration() int64               { return 0 }
func (s *NodeSummary) SetGeneration(int64)                {}
func (s *NodeSummary) GetSelfLink() string                { return "" }
func (s *NodeSummary) SetSelfLink(string)                 {}
func (s *NodeSummary) GetCreationTimestamp() metav1.Time  { return metav1.NewTime(s.Created) }
func (s *NodeSummary) SetCreationTimestamp(t metav1.Time) { s.Created = t.Time }
func (s *NodeSummary) GetDeletionTimestamp() *metav1.Time { return nil }
func (s *NodeSummary) SetDeletionTimestamp(*metav1.Time)  {}
func (s *NodeSummary) GetDeletionGracePeriodSeconds() *int64 {
	return nil
}
func (s *NodeSummary) SetDeletionGracePeriodSeconds(*int64)          {}
func (s *NodeSummary) GetLabels() map[string]string                  { return s.Labels }
func (s *NodeSummary) SetLabels(l map[string]string)                 { s.Labels = l }
func (s *NodeSummary) GetAnnotations() map[string]string             { return nil }
func (s *NodeSummary) SetAnnotations(map[string]string)              {}
func (s *NodeSummary) GetFinalizers() []string                       { return nil }
func (s *NodeSummary) SetFinalizers([]string)                        {}
func (s *NodeSummary) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (s *NodeSummary) SetOwnerReferences([]metav1.OwnerReference)    {}
func (s *NodeSummary) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (s *NodeSummary) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

var _ metav1.Object = (*NodeSummary)(nil)
var _ runtime.Object = (*NodeSummary)(nil)
