// Package kubeobj builds the empty unstructured objects and lists through
// which fencekit's Kubernetes adapters read and write the kinds they have
// no Go types for (metal3's BareMetalHost, the machine APIs, csi-addons'
// NetworkFence, medik8s' NodeMaintenance), so that each adapter names a
// kind once and a list's kind is spelled one way.
package kubeobj

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BareMetalHost is metal3's BareMetalHost kind, which both the reboot and
// the teardown adapters drive.
var BareMetalHost = schema.GroupVersionKind{Group: "metal3.io", Version: "v1alpha1", Kind: "BareMetalHost"}

// Object returns an empty object of kind gvk named namespace/name; either
// may be empty (a cluster-scoped kind, an object a Get fills in).
func Object(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if name != "" {
		u.SetName(name)
	}
	return u
}

// List returns an empty list of gvk's objects: its kind is gvk's with
// "List" appended, as the API server names it.
func List(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}
