package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeFence names.
const (
	// NodeFenceKind is the kind of NodeFence objects.
	NodeFenceKind = "NodeFence"
	// NodeFenceResource is their plural resource name.
	NodeFenceResource = "nodefences"
	// NodeFenceFinalizer is the finalizer the controller puts on every
	// NodeFence it creates: a user's delete leaves the object in place
	// until the controller has undone the pod treatment (removed the
	// out-of-service taint) and forgotten the record.
	NodeFenceFinalizer = "fencekit.io/restore-pods"
)

// NodeFence is the persisted record of one node's fencing (isolation,
// power management, recovery): the NodeFence object of the Kubernetes
// node-fencing design. It is cluster-scoped and named after its node. The
// controller writes only its status, through the status subresource; users
// raise spec.retry to retry a Failed fencing, set spec.confirmation to
// confirm that the node is off when no device can prove it, and delete the
// object to abandon a fencing (the finalizer fencekit.io/restore-pods holds
// it until the out-of-service taint is removed).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nf
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".spec.node"
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=".status.step"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=".status.status"
// +kubebuilder:printcolumn:name="Fenced",type=string,JSONPath=".status.conditions[?(@.type==\"Fenced\")].status"
// +kubebuilder:printcolumn:name="Proof",type=string,JSONPath=".status.conditions[?(@.type==\"Fenced\")].reason"
// +kubebuilder:printcolumn:name="Retries",type=integer,JSONPath=".status.retries"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.message",priority=1
type NodeFence struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeFenceSpec   `json:"spec"`
	Status NodeFenceStatus `json:"status,omitempty"`
}

// NodeFenceSpec is what users set.
type NodeFenceSpec struct {
	// Node is the node fenced; it must be the object's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.node is immutable"
	Node string `json:"node"`
	// Retry is raised by a user to retry a Failed fencing: the controller
	// acts while it is above status.observedRetry.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Retry int64 `json:"retry,omitempty"`
	// Confirmation is a person's confirmation that the node is off (or
	// cut from its storage) when no device can prove it, for the incident
	// status.incident only: the node then counts as fenced (condition
	// Fenced, reason ConfirmedByPerson) and its pods are released as after
	// a verified off. The controller acts on it only when request names a
	// CertificateSigningRequest that the API server recorded as created by
	// by, naming this node, incident and reason, and by may "confirm"
	// nodefences (RBAC), whatever admission policy was in force when it was
	// written; it refuses it while the node is Ready. The admission policy
	// fencekit-confirmations (deploy/confirm.yaml) refuses a wrong one
	// early. kubectl fence confirm writes both.
	// +optional
	Confirmation *NodeFenceConfirmation `json:"confirmation,omitempty"`
	// MarkedHealthy is a person's mark that the recovered node is healthy
	// (kubectl fence healthy): with a negative healthy delay, the node
	// takes pods again (its NoSchedule hold ends) only once it is marked
	// since its recovery began.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	MarkedHealthy *metav1.MicroTime `json:"markedHealthy,omitempty"`
}

// NodeFenceConfirmation is a person's confirmation of one incident.
type NodeFenceConfirmation struct {
	// By is the confirmer's user name, as the API server authenticated
	// the request that wrote it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	By string `json:"by"`
	// Reason says what the person checked ("rack B7 has no power").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
	// Incident is the incident confirmed: status.incident when it was
	// written.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Incident metav1.MicroTime `json:"incident"`
	// Request names the CertificateSigningRequest that records who made
	// the confirmation (package kube/confirmation): the API server wrote
	// its creator; it names the node, the incident and the reason. A
	// confirmation without it is refused.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Request string `json:"request,omitempty"`
}

// NodeFenceConfirmed is the confirmation the controller accepted.
type NodeFenceConfirmed struct {
	// By is the confirmer's user name.
	By string `json:"by"`
	// Reason says what the person checked.
	Reason string `json:"reason"`
	// Request names the CertificateSigningRequest that proved who made
	// it.
	// +optional
	Request string `json:"request,omitempty"`
	// Incident is the incident confirmed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Incident metav1.MicroTime `json:"incident"`
	// At is when the controller accepted it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	At metav1.MicroTime `json:"at"`
}

// NodeFenceStatus is the state of the fencing. Step and Status are empty
// only in an object whose status has not been written yet.
type NodeFenceStatus struct {
	// Step is the step of the fencing: isolation, power_management or
	// recovery.
	// +kubebuilder:validation:Enum=isolation;power_management;recovery
	// +optional
	Step string `json:"step,omitempty"`
	// Status is the status of the step: New, Running, Done, Error or
	// Failed.
	// +kubebuilder:validation:Enum=New;Running;Done;Error;Failed
	// +optional
	Status string `json:"status,omitempty"`
	// Retries counts the retries of the step after an error.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Retries int64 `json:"retries,omitempty"`
	// Polls counts the readiness polls of a power-fenced node.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Polls int64 `json:"polls,omitempty"`
	// Jobs are the method runs of the current attempt of the step.
	// +optional
	Jobs []NodeFenceJob `json:"jobs,omitempty"`
	// Isolated is set once every required device of a level confirmed the
	// node cut from its storage, until its recovery.
	// +optional
	Isolated bool `json:"isolated,omitempty"`
	// PoweredOff is set once every required device of a level confirmed
	// the node off, until its recovery.
	// +optional
	PoweredOff bool `json:"poweredOff,omitempty"`
	// ConfirmedOff is set once a person's confirmation of the incident was
	// accepted (no device proved the node off), until its recovery.
	// +optional
	ConfirmedOff bool `json:"confirmedOff,omitempty"`
	// Confirmation is the confirmation accepted for the incident, kept
	// until the next one.
	// +optional
	Confirmation *NodeFenceConfirmed `json:"confirmation,omitempty"`
	// ConfirmationRefused says why spec.confirmation was not acted on.
	// +optional
	ConfirmationRefused string `json:"confirmationRefused,omitempty"`
	// Incident is when the current incident began (the node found
	// unresponsive): a confirmation names it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Incident *metav1.MicroTime `json:"incident,omitempty"`
	// Released is the pod treatment carried out: Storage (the pods that
	// used the storage the isolation cut), Power (all, after a verified
	// power off), Dump (all, for a node dumping its kernel) or empty.
	// +kubebuilder:validation:Enum="";Storage;Power;Dump
	// +optional
	Released string `json:"released,omitempty"`
	// Releasing is the pod treatment asked and not yet confirmed.
	// +kubebuilder:validation:Enum="";Storage;Power;Dump
	// +optional
	Releasing string `json:"releasing,omitempty"`
	// Restoring is set while the pod treatment is being undone.
	// +optional
	Restoring bool `json:"restoring,omitempty"`
	// Hold is set while the node is to stay unschedulable (the taint
	// fencekit.io/fencing:NoSchedule): from the admission of its fencing
	// until it has been healthy for the healthy delay after its recovery.
	// +optional
	Hold bool `json:"hold,omitempty"`
	// Held is set while the node is held.
	// +optional
	Held bool `json:"held,omitempty"`
	// FencedAt is when every required device of the level confirmed the
	// node off or isolated.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	FencedAt *metav1.MicroTime `json:"fencedAt,omitempty"`
	// PodsWaitSince is when the wait for the released pods to be gone
	// began, before the level's devices are switched on again.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	PodsWaitSince *metav1.MicroTime `json:"podsWaitSince,omitempty"`
	// OnError says which device could not switch the node on again after
	// the fence; the node stays off and released.
	// +optional
	OnError string `json:"onError,omitempty"`
	// FoundOn, when set, says which device read the fenced node on again
	// (or its storage port enabled), and when: it was switched on behind
	// the controller while its pods are released. An alarm (the Fenced
	// condition False, reason FoundOn), cleared when every device reads
	// it off again or at its recovery.
	// +optional
	FoundOn string `json:"foundOn,omitempty"`
	// OffCheckedAt is when the devices that fenced the node were last
	// read again.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	OffCheckedAt *metav1.MicroTime `json:"offCheckedAt,omitempty"`
	// Created is when the fencing began.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Created *metav1.MicroTime `json:"created,omitempty"`
	// StepStarted is when the current step began.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	StepStarted *metav1.MicroTime `json:"stepStarted,omitempty"`
	// Changed is when the record last changed.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Changed *metav1.MicroTime `json:"changed,omitempty"`
	// LastPoll is when a power-fenced node was last polled.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	LastPoll *metav1.MicroTime `json:"lastPoll,omitempty"`
	// Message says what the fencing waits for or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// History holds the last transitions, oldest first.
	// +optional
	History []NodeFenceTransition `json:"history,omitempty"`
	// ObservedRetry is the last spec.retry the controller acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedRetry int64 `json:"observedRetry,omitempty"`
	// ObservedGeneration is the metadata.generation (the spec's version)
	// the status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions sum the fencing up for tools that read conditions
	// (kubectl wait --for=condition=Fenced): Processing, Fenced,
	// PodsReleased and Succeeded; see the Condition constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeFenceJob is one method run: one switch (the off or the on of a
// method) of a level.
type NodeFenceJob struct {
	// Step is the step the job belongs to.
	// +kubebuilder:validation:Enum=isolation;power_management;recovery
	Step string `json:"step"`
	// Level is the 0-based level of the step.
	// +kubebuilder:validation:Minimum=0
	Level int64 `json:"level"`
	// Index is the 0-based position of the method in its level.
	// +kubebuilder:validation:Minimum=0
	Index int64 `json:"index"`
	// Method is the method's name.
	// +kubebuilder:validation:MinLength=1
	Method string `json:"method"`
	// Action is the method's action in the step.
	// +kubebuilder:validation:Enum="";on;off;reboot
	// +optional
	Action string `json:"action,omitempty"`
	// Phase is the half of the action this job carries out.
	// +kubebuilder:validation:Enum="";on;off
	// +optional
	Phase string `json:"phase,omitempty"`
	// Owner names the controller instance that started the job.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Started is when the job started.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Started *metav1.MicroTime `json:"started,omitempty"`
	// Finished is when it finished; empty while it runs.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Finished *metav1.MicroTime `json:"finished,omitempty"`
	// OK is set when the switch succeeded.
	// +optional
	OK bool `json:"ok,omitempty"`
	// BestEffort is set for a method whose failure does not fail its level.
	// +optional
	BestEffort bool `json:"bestEffort,omitempty"`
	// ByTime is set when the device's off is proven by elapsed time (SBD),
	// not read back from a switch.
	// +optional
	ByTime bool `json:"byTime,omitempty"`
	// OffConfirmed is set when the device confirmed the plug off.
	// +optional
	OffConfirmed bool `json:"offConfirmed,omitempty"`
	// Already is set when the device was in the state asked already.
	// +optional
	Already bool `json:"already,omitempty"`
	// Unknown is set when the outcome of a failed switch is unknown.
	// +optional
	Unknown bool `json:"unknown,omitempty"`
	// State is the last state the device reported.
	// +kubebuilder:validation:Enum="";on;off;unknown
	// +optional
	State string `json:"state,omitempty"`
	// Error says why the switch failed.
	// +optional
	Error string `json:"error,omitempty"`
	// Target says what the switch acted on when the controller chose it
	// for the node, and who reported it: the addresses a storage isolation
	// blocklisted ("10.1.0.5/32 (CSIAddonsNode worker-1-rbd, as the storage
	// sees the node)", or the Node's InternalIP).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Target string `json:"target,omitempty"`
}

// NodeFenceTransition is one entry of the history.
type NodeFenceTransition struct {
	// Time is when the transition happened.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	Time *metav1.MicroTime `json:"time,omitempty"`
	// Step is the step entered.
	// +kubebuilder:validation:Enum=isolation;power_management;recovery
	Step string `json:"step"`
	// Status is the status entered.
	// +kubebuilder:validation:Enum=New;Running;Done;Error;Failed
	Status string `json:"status"`
	// Message says why.
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeFenceList is a list of NodeFence objects.
//
// +kubebuilder:object:root=true
type NodeFenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFence `json:"items"`
}
