package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the API.
const (
	Group   = "fencekit.io"
	Version = "v1alpha1"
)

// GroupVersion is the group and version of the API.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

var (
	// SchemeBuilder registers the API's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the API's types to a scheme, for typed clients and
	// controller-runtime managers.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&NodeFence{}, &NodeFenceList{},
		&NodeFenceRemediation{}, &NodeFenceRemediationList{},
		&NodeFenceRemediationTemplate{}, &NodeFenceRemediationTemplateList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
