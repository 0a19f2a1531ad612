// Package v1alpha1 is fencekit's Kubernetes API, group fencekit.io,
// version v1alpha1: NodeFence, the persisted record of one node's fencing,
// and NodeFenceRemediation with its template, the remediation resources
// that Node Health Check and Cluster API's MachineHealthCheck create for an
// unhealthy node.
//
// Times are metav1.MicroTime values, written as RFC 3339 with six digits
// of fraction (2026-11-27T10:00:00.000000Z), the only form a typed client
// reads: the CRDs refuse any other (a pattern beside the date-time
// format), so that one object a person wrote by hand, say with
// "2026-11-27T10:00:00Z", can never stop the decoding of every NodeFence
// a controller lists and watches. kubectl fence writes this form.
//
// The types carry controller-gen markers: `make generate` writes their
// DeepCopy functions (zz_generated.deepcopy.go) and the CustomResource
// definitions (config/crd, copied to deploy/crd), and `make test` fails
// when the committed files differ from what it generates.
//
// +kubebuilder:object:generate=true
// +groupName=fencekit.io
package v1alpha1
