package fencekube

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fencekit/fencekit/api/v1alpha1"
)

// The NodeFence custom resource, whose Go types and definition
// (config/crd/fencekit.io_nodefences.yaml) are package api/v1alpha1's. The
// names below are that package's, under the names this package has always
// given them.
const (
	// Group is the API group of NodeFence.
	Group = v1alpha1.Group
	// Version is the API version of NodeFence.
	Version = v1alpha1.Version
	// Kind is the kind of the custom resource.
	Kind = v1alpha1.NodeFenceKind
	// Resource is its plural resource name.
	Resource = v1alpha1.NodeFenceResource
	// Finalizer is the finalizer a Store puts on every NodeFence it
	// creates: a user's delete leaves the object in place, Deleting, until
	// the controller has undone the pod treatment (removed the
	// out-of-service taint) and forgotten the record.
	Finalizer = v1alpha1.NodeFenceFinalizer
)

// SchemeGroupVersion is the group and version of NodeFence.
var SchemeGroupVersion = v1alpha1.GroupVersion

// NodeFenceResource is the resource of NodeFence objects, for the dynamic
// client.
var NodeFenceResource = SchemeGroupVersion.WithResource(Resource)

// AddToScheme registers the API's types (v1alpha1.AddToScheme).
func AddToScheme(s *runtime.Scheme) error { return v1alpha1.AddToScheme(s) }

// The types of the NodeFence object (package api/v1alpha1).
type (
	NodeFence           = v1alpha1.NodeFence
	NodeFenceSpec       = v1alpha1.NodeFenceSpec
	NodeFenceStatus     = v1alpha1.NodeFenceStatus
	NodeFenceJob        = v1alpha1.NodeFenceJob
	NodeFenceTransition = v1alpha1.NodeFenceTransition
	// NodeFenceConfirmation is a person's confirmation (spec), and
	// NodeFenceConfirmed the one accepted (status).
	NodeFenceConfirmation = v1alpha1.NodeFenceConfirmation
	NodeFenceConfirmed    = v1alpha1.NodeFenceConfirmed
	NodeFenceList         = v1alpha1.NodeFenceList
)
