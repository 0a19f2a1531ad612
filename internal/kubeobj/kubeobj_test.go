package kubeobj

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestObjectAndList(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	o := Object(gvk, "ns", "m1")
	if o.GroupVersionKind() != gvk || o.GetNamespace() != "ns" || o.GetName() != "m1" {
		t.Errorf("Object = %s %s/%s, want %s ns/m1", o.GroupVersionKind(), o.GetNamespace(), o.GetName(), gvk)
	}
	if o := Object(gvk, "", ""); len(o.Object) != 2 {
		t.Errorf("Object with no name holds %v, want apiVersion and kind alone", o.Object)
	}
	l := List(gvk)
	if got := l.GroupVersionKind(); got != gvk.GroupVersion().WithKind("MachineList") {
		t.Errorf("List kind = %s, want MachineList of %s", got, gvk.GroupVersion())
	}
}
