// Package v1alpha1 is fencekit's Kubernetes API, group fencekit.io,
// version v1alpha1: NodeFence, the persisted record of one node's fencing,
// and NodeFenceRemediation with its template, the remediation resources
// that Node Health Check and Cluster API's MachineHealthCheck create for an
// unhealthy node.
//
// The types carry controller-gen markers: `make generate` writes their
// DeepCopy functions (zz_generated.deepcopy.go) and the CustomResource
// definitions (config/crd, copied to deploy/crd), and `make test` fails
// when the committed files differ from what it generates.
//
// +kubebuilder:object:generate=true
// +groupName=fencekit.io
package v1alpha1
