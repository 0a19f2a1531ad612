package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Remediation names.
const (
	// NodeFenceRemediationKind is the kind of the remediation resource.
	NodeFenceRemediationKind = "NodeFenceRemediation"
	// NodeFenceRemediationPlural is its plural resource name.
	NodeFenceRemediationPlural = "nodefenceremediations"
	// NodeFenceRemediationTemplateKind is the kind of its template.
	NodeFenceRemediationTemplateKind = "NodeFenceRemediationTemplate"
	// NodeFenceRemediationTemplatePlural is the template's plural
	// resource name.
	NodeFenceRemediationTemplatePlural = "nodefenceremediationtemplates"
	// RemediationFinalizer is the finalizer the controller puts on every
	// remediation it acts on: the remediation is deleted (by Node Health
	// Check once the node is healthy again) only after the node's fencing
	// is over and its pod treatment undone.
	RemediationFinalizer = "fencekit.io/remediation"
	// NodeNameAnnotation names the node of a remediation: Node Health
	// Check sets it on every remediation it creates, whose name is then
	// the node's or, with several templates of the kind, generated from it.
	NodeNameAnnotation = "remediation.medik8s.io/node-name"
	// TimedOutAnnotation is set by Node Health Check on a remediation
	// that did not succeed in time, before it tries its next remediator.
	TimedOutAnnotation = "remediation.medik8s.io/nhc-timed-out"
	// MultipleTemplatesAnnotation on a template tells Node Health Check
	// that several templates of this kind may be used for one node (its
	// remediations then get generated names).
	MultipleTemplatesAnnotation = "remediation.medik8s.io/multiple-templates-support"
)

// NodeFenceRemediation asks fencekit to fence one unhealthy node, as Node
// Health Check (or Cluster API's MachineHealthCheck, through external
// remediation) asks any remediator: the health checker creates it from a
// NodeFenceRemediationTemplate when it finds the node unhealthy, and
// deletes it once the node is healthy again. The node is the remediation's
// name, or the node the annotation remediation.medik8s.io/node-name names,
// or, for a remediation named after a Cluster API Machine, the Machine's
// node (status.nodeRef). The fencing follows the node's fence
// configuration (its isolation, power management and recovery methods) with
// the same verification, levels, policy and pod treatment as any other;
// the remediation's conditions report it (Processing, Fenced, PodsReleased,
// Succeeded), Succeeded False when the fencing failed, so that Node Health
// Check escalates to its next remediator at once. A remediation that Node
// Health Check marks timed out (the annotation
// remediation.medik8s.io/nhc-timed-out) starts no further fencing step.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=nfr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Processing",type=string,JSONPath=".status.conditions[?(@.type==\"Processing\")].status"
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=".status.conditions[?(@.type==\"Succeeded\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type NodeFenceRemediation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeFenceRemediationSpec `json:"spec,omitempty"`
	// +optional
	Status NodeFenceRemediationStatus `json:"status,omitempty"`
}

// NodeFenceRemediationSpec is what the template gives every remediation.
// It is empty: how a node is fenced is its fence configuration's business
// (fence-config-<node> and its methods), the same whoever asks.
type NodeFenceRemediationSpec struct{}

// NodeFenceRemediationStatus reports the remediation.
type NodeFenceRemediationStatus struct {
	// NodeName is the node the remediation fences.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Manual is set when the request is a person's, not a health
	// checker's: the Machine that owns the remediation carried Cluster
	// API's cluster.x-k8s.io/remediate-machine annotation when fencekit
	// took it up. The node is fenced though it is Ready; its Ready
	// condition is read again once devices powered it off.
	// +optional
	Manual bool `json:"manual,omitempty"`
	// StartedAt is when fencekit took the remediation up. A remediation
	// asks for one fencing: once a fencing of the node is over (fenced and
	// recovered, or failed) after this time, the node is not fenced again
	// for it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$`
	StartedAt *metav1.MicroTime `json:"startedAt,omitempty"`
	// Message says what the fencing waits for or why it failed (the
	// NodeFence's message).
	// +optional
	Message string `json:"message,omitempty"`
	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// ObservedGeneration is the metadata.generation the status was
	// written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Processing, Fenced, PodsReleased, Succeeded (see the
	// Condition constants).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeFenceRemediationList is a list of NodeFenceRemediation objects.
//
// +kubebuilder:object:root=true
type NodeFenceRemediationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFenceRemediation `json:"items"`
}

// NodeFenceRemediationTemplate is the template a health checker's
// configuration names (NodeHealthCheck spec.remediationTemplate,
// MachineHealthCheck spec.remediationTemplate): it creates a
// NodeFenceRemediation from spec.template for each unhealthy node, in the
// template's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=nfrt
type NodeFenceRemediationTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeFenceRemediationTemplateSpec `json:"spec"`
}

// NodeFenceRemediationTemplateSpec holds the template.
type NodeFenceRemediationTemplateSpec struct {
	// Template is what each remediation is made of.
	Template NodeFenceRemediationTemplateResource `json:"template"`
}

// NodeFenceRemediationTemplateResource is the remediation a template
// makes: its spec.
type NodeFenceRemediationTemplateResource struct {
	// Spec is the spec of each remediation made from the template.
	// +optional
	Spec NodeFenceRemediationSpec `json:"spec,omitempty"`
}

// NodeFenceRemediationTemplateList is a list of templates.
//
// +kubebuilder:object:root=true
type NodeFenceRemediationTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFenceRemediationTemplate `json:"items"`
}
