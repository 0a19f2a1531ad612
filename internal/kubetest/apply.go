package kubetest

import (
	"bytes"
	"context"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// Objects parses the YAML documents of the manifest at path (comments and
// empty documents skipped).
func Objects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("kubetest: parsing %s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
	return out
}

// Create creates objs (as they are: a namespaced one needs its namespace
// set) and deletes the ones it created when t ends. An object that exists
// already is left as it is, and not deleted.
func (c *Cluster) Create(t testing.TB, objs ...*unstructured.Unstructured) {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(c.client.Discovery()))
	ctx := context.WithoutCancel(t.Context())
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("kubetest: %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		res := c.dynamic.Resource(m.Resource)
		var ri interface {
			Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
			Delete(context.Context, string, metav1.DeleteOptions, ...string) error
		} = res
		if ns := obj.GetNamespace(); ns != "" {
			ri = res.Namespace(ns)
		}
		if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			t.Fatalf("kubetest: creating %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		name := obj.GetName()
		t.Cleanup(func() { _ = ri.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
}
