package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// shared is the cluster that Shared starts once per test binary and Main
// stops.
var shared struct {
	mu      sync.Mutex
	main    bool // Main is running the tests
	stopped bool // Main has stopped the cluster
	started bool // a start was attempted; c or err holds its outcome
	c       *Cluster
	err     error
}

// Main runs the tests of a package whose tests call [Shared], stops the
// shared cluster afterwards and exits with the tests' status. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
func Main(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain is Main without the exit.
func runMain(m *testing.M) int {
	runShim()
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.stopped = true
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: stopping the shared cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the test binary's shared cluster, starting it on the first
// call. The package's TestMain must call [Main], which stops it after the
// last test. Tests isolate themselves with [Cluster.Namespace] and
// [UniqueName]. When the binaries are missing the test is skipped (failed
// with CI=true); when the cluster failed to start, every caller fails with
// the same error.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatal("kubetest: Shared needs the package's TestMain to call kubetest.Main(m), which stops the shared cluster")
	}
	if shared.stopped {
		t.Fatal("kubetest: Shared called after the tests ended")
	}
	if !shared.started {
		shared.started = true
		shared.c, shared.err = StartCluster(context.Background(), Options{})
		if shared.err == nil {
			t.Logf("kubetest: shared kube-apiserver at %s ready in %v",
				shared.c.Host(), shared.c.StartupTime().Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		failStart(t, shared.err)
	}
	return shared.c
}

// Namespace creates a namespace named after t with a random suffix and
// returns its name. It is not deleted: without a namespace controller a
// deleted namespace only stays Terminating, and the cluster is thrown away
// at the end anyway.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        UniqueName(t),
		Annotations: map[string]string{"kubetest.fencekit.io/test": t.Name()},
	}}
	if _, err := c.client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: creating namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}

// UniqueName returns a fresh name for an object of t's, valid as a
// namespace, Node or other DNS-1123 label: t's name in lower case, cut
// short, with a random suffix. Each call returns a different name.
func UniqueName(t testing.TB) string {
	var b strings.Builder
	dash := true // no leading dash, no doubled dashes
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 50 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	if !dash {
		b.WriteByte('-')
	}
	return b.String() + randomHex(4)
}

// crdGVR is where CustomResourceDefinitions live.
var crdGVR = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// InstallCRD creates the CustomResourceDefinition in the YAML file at path
// (one document) and waits up to 30 s until it is established, so that
// objects of its kind can be created at once. A CRD of the same name already
// there (installed by another test sharing the cluster) is used as it is.
// CRDs are cluster-scoped and stay installed.
func (c *Cluster) InstallCRD(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if bytes.Contains(raw, []byte("\n---")) {
		t.Fatalf("kubetest: %s: InstallCRD takes one YAML document", path)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		t.Fatalf("kubetest: parsing %s: %v", path, err)
	}
	if obj.GetKind() != "CustomResourceDefinition" {
		t.Fatalf("kubetest: %s holds a %q, not a CustomResourceDefinition", path, obj.GetKind())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	crds := c.dynamic.Resource(crdGVR)
	if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: creating CRD %s from %s: %v", obj.GetName(), path, err)
	}
	for {
		got, err := crds.Get(ctx, obj.GetName(), metav1.GetOptions{})
		// Established, and served by discovery too: a client's REST mapper
		// (controller-runtime's) reads discovery, which the API server
		// updates a moment after the condition (seen: "no matches for
		// kind" just after it).
		if err == nil && crdEstablished(got) && c.discovered(got) {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kubetest: CRD %s not established within 30 s (last error: %v)", obj.GetName(), err)
		case <-time.After(pollInterval):
		}
	}
}

// discovered reports whether discovery serves crd's kind in each of its
// served versions.
func (c *Cluster) discovered(crd *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); !served || name == "" {
			continue
		}
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind }) {
			return false
		}
	}
	return true
}

// crdEstablished reports whether crd's Established condition is True.
func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
