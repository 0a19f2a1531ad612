package fencekube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The NodeFence custom resource: config/crd/fencekit.io_nodefences.yaml
// defines it.
const (
	// Group is the API group of NodeFence.
	Group = "fencekit.io"
	// Version is the API version of NodeFence.
	Version = "v1alpha1"
	// Kind is the kind of the custom resource.
	Kind = "NodeFence"
	// Resource is its plural resource name.
	Resource = "nodefences"
	// Finalizer is the finalizer a Store puts on every NodeFence it
	// creates: a user's delete leaves the object in place, Deleting, until
	// the controller has undone the pod treatment (removed the
	// out-of-service taint) and forgotten the record.
	Finalizer = "fencekit.io/restore-pods"
)

// SchemeGroupVersion is the group and version of NodeFence.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// NodeFenceResource is the resource of NodeFence objects, for the dynamic
// client.
var NodeFenceResource = SchemeGroupVersion.WithResource(Resource)

// AddToScheme registers NodeFence and NodeFenceList in s, for users of a
// typed REST client or of controller libraries built on a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &NodeFence{}, &NodeFenceList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// NodeFence is the custom resource that persists one node's fencing (the
// NodeFence object of the Kubernetes node-fencing design; fence.NodeFence
// is the record it converts to). It is cluster-scoped and named after the
// node. The controller writes only its status, through the status
// subresource; users may raise spec.retry to retry a Failed fencing, and
// delete it to abandon one.
type NodeFence struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeFenceSpec   `json:"spec"`
	Status NodeFenceStatus `json:"status,omitempty"`
}

// NodeFenceSpec is what users set.
type NodeFenceSpec struct {
	// Node is the node fenced; it must be the object's name.
	Node string `json:"node"`
	// Retry is raised by a user to retry a Failed fencing: the record
	// reads Clear while Retry is above Status.ObservedRetry.
	Retry int64 `json:"retry,omitempty"`
}

// NodeFenceStatus is the state of the fencing, as fence.NodeFence holds it.
// Step and Status are empty only in an object whose status has not been
// written yet.
type NodeFenceStatus struct {
	// Step is isolation, power_management or recovery.
	Step string `json:"step,omitempty"`
	// Status is New, Running, Done, Error or Failed.
	Status string `json:"status,omitempty"`
	// Retries and Polls are fence.NodeFence's counts.
	Retries int64 `json:"retries,omitempty"`
	Polls   int64 `json:"polls,omitempty"`
	// Jobs are the method runs of the current attempt of the step.
	Jobs []NodeFenceJob `json:"jobs,omitempty"`
	// Isolated and PoweredOff are set once a device confirmed the node
	// isolated or off, until recovery is done.
	Isolated   bool `json:"isolated,omitempty"`
	PoweredOff bool `json:"poweredOff,omitempty"`
	// Released and Releasing are the pod treatment done and asked:
	// Storage, Power or empty.
	Released  string `json:"released,omitempty"`
	Releasing string `json:"releasing,omitempty"`
	// Restoring is set while the pod treatment is being undone.
	Restoring bool `json:"restoring,omitempty"`
	// FencedAt is when every required device of the step's level confirmed
	// the node off (or isolated), in the current attempt of the step.
	FencedAt *metav1.MicroTime `json:"fencedAt,omitempty"`
	// PodsWaitSince is when the wait for the released pods to be gone
	// began, before the level's devices are switched on again.
	PodsWaitSince *metav1.MicroTime `json:"podsWaitSince,omitempty"`
	// OnError says which device could not switch the node on again after
	// the fence: the node is fenced, off and released.
	OnError string `json:"onError,omitempty"`

	Created     *metav1.MicroTime `json:"created,omitempty"`
	StepStarted *metav1.MicroTime `json:"stepStarted,omitempty"`
	Changed     *metav1.MicroTime `json:"changed,omitempty"`
	LastPoll    *metav1.MicroTime `json:"lastPoll,omitempty"`
	// Message says what the fencing waits for or why it failed.
	Message string `json:"message,omitempty"`
	// History holds the last transitions, oldest first.
	History []NodeFenceTransition `json:"history,omitempty"`
	// ObservedRetry is the last Spec.Retry the controller acted on.
	ObservedRetry int64 `json:"observedRetry,omitempty"`
}

// NodeFenceJob is one method run (fence.Job).
type NodeFenceJob struct {
	Step   string `json:"step"`
	Level  int64  `json:"level"`
	Index  int64  `json:"index"`
	Method string `json:"method"`
	// Action is the method's action in the step (on, off or reboot), and
	// Phase the half of it this job carries out (off or on).
	Action string `json:"action,omitempty"`
	Phase  string `json:"phase,omitempty"`
	// Owner names the controller instance that started the job.
	Owner    string            `json:"owner,omitempty"`
	Started  *metav1.MicroTime `json:"started,omitempty"`
	Finished *metav1.MicroTime `json:"finished,omitempty"`

	OK           bool `json:"ok,omitempty"`
	BestEffort   bool `json:"bestEffort,omitempty"`
	OffConfirmed bool `json:"offConfirmed,omitempty"`
	Already      bool `json:"already,omitempty"`
	Unknown      bool `json:"unknown,omitempty"`
	// State is the last state the device reported: on, off or unknown
	// (or empty).
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
}

// NodeFenceTransition is one entry of the history (fence.Transition).
type NodeFenceTransition struct {
	Time    *metav1.MicroTime `json:"time,omitempty"`
	Step    string            `json:"step"`
	Status  string            `json:"status"`
	Message string            `json:"message,omitempty"`
}

// NodeFenceList is a list of NodeFence objects.
type NodeFenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFence `json:"items"`
}

// DeepCopyInto copies o into out.
func (o *NodeFence) DeepCopyInto(out *NodeFence) {
	*out = *o
	out.TypeMeta = o.TypeMeta
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = o.Spec
	o.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of o.
func (o *NodeFence) DeepCopy() *NodeFence {
	if o == nil {
		return nil
	}
	out := new(NodeFence)
	o.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a deep copy of o, as runtime.Object.
func (o *NodeFence) DeepCopyObject() runtime.Object {
	if c := o.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies s into out.
func (s *NodeFenceStatus) DeepCopyInto(out *NodeFenceStatus) {
	*out = *s
	copyTime := func(t *metav1.MicroTime) *metav1.MicroTime {
		if t == nil {
			return nil
		}
		return t.DeepCopy()
	}
	out.Created = copyTime(s.Created)
	out.StepStarted = copyTime(s.StepStarted)
	out.Changed = copyTime(s.Changed)
	out.LastPoll = copyTime(s.LastPoll)
	out.FencedAt = copyTime(s.FencedAt)
	out.PodsWaitSince = copyTime(s.PodsWaitSince)
	if s.Jobs != nil {
		out.Jobs = make([]NodeFenceJob, len(s.Jobs))
		for i, j := range s.Jobs {
			j.Started = copyTime(j.Started)
			j.Finished = copyTime(j.Finished)
			out.Jobs[i] = j
		}
	}
	if s.History != nil {
		out.History = make([]NodeFenceTransition, len(s.History))
		for i, h := range s.History {
			h.Time = copyTime(h.Time)
			out.History[i] = h
		}
	}
}

// DeepCopyInto copies l into out.
func (l *NodeFenceList) DeepCopyInto(out *NodeFenceList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]NodeFence, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of l.
func (l *NodeFenceList) DeepCopy() *NodeFenceList {
	if l == nil {
		return nil
	}
	out := new(NodeFenceList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a deep copy of l, as runtime.Object.
func (l *NodeFenceList) DeepCopyObject() runtime.Object {
	if c := l.DeepCopy(); c != nil {
		return c
	}
	return nil
}
