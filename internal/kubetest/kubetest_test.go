package kubetest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { Main(m) }

// TestNodeLabelsAnnotationsTaint creates a Node and changes it the ways the
// fence controller and the reboot adapter will.
func TestNodeLabelsAnnotationsTaint(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ctx := t.Context()
	nodes := c.Client().CoreV1().Nodes()

	name := UniqueName(t)
	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/hostname": name},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	patch := `{"metadata":{"labels":{"fencegroup.rook.io/rook-ceph":""},` +
		`"annotations":{"reboot.metal3.io/fence":"{\"mode\":\"hard\"}"}}}`
	_, err = nodes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)

	node, err := nodes.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	taint := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	node.Spec.Taints = append(node.Spec.Taints, taint)
	node.Spec.Unschedulable = true
	_, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	got, err := nodes.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Labels, "fencegroup.rook.io/rook-ceph")
	assert.Equal(t, name, got.Labels["kubernetes.io/hostname"])
	assert.Equal(t, `{"mode":"hard"}`, got.Annotations["reboot.metal3.io/fence"])
	assert.True(t, got.Spec.Unschedulable)
	// TaintNodesByCondition adds its own not-ready taint: look for ours only.
	var found bool
	for _, tt := range got.Spec.Taints {
		found = found || (tt.Key == taint.Key && tt.Value == taint.Value && tt.Effect == taint.Effect)
	}
	assert.True(t, found, "taint %v missing from %v", taint, got.Spec.Taints)

	// A JSON patch removing the annotation, as the reboot adapter will.
	rm := `[{"op":"remove","path":"/metadata/annotations/reboot.metal3.io~1fence"}]`
	got, err = nodes.Patch(ctx, name, types.JSONPatchType, []byte(rm), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Annotations, "reboot.metal3.io/fence")
}

// TestCustomResource installs a CRD and creates, validates and updates a
// custom object through the dynamic client.
func TestCustomResource(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)

	crd := c.InstallCRD(t, filepath.Join("testdata", "widgets-crd.yaml"))
	assert.Equal(t, "widgets.kubetest.fencekit.io", crd.GetName())
	// A second install, as by another test sharing the cluster, is harmless.
	c.InstallCRD(t, filepath.Join("testdata", "widgets-crd.yaml"))

	gvr := schema.GroupVersionResource{Group: "kubetest.fencekit.io", Version: "v1alpha1", Resource: "widgets"}
	widgets := c.Dynamic().Resource(gvr).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.fencekit.io/v1alpha1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w1"},
		"spec":       map[string]any{"size": int64(3)},
	}}
	created, err := widgets.Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, created.GetUID())

	// The schema is enforced: size must be at least 1.
	bad := w.DeepCopy()
	bad.SetName("w2")
	require.NoError(t, unstructured.SetNestedField(bad.Object, int64(0), "spec", "size"))
	_, err = widgets.Create(ctx, bad, metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)

	// Status goes through its subresource.
	require.NoError(t, unstructured.SetNestedField(created.Object, "Ready", "status", "phase"))
	_, err = widgets.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	assert.Equal(t, "Ready", phase)
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(3), size)
}

// TestRBACEnforced checks that the server authorizes requests, so that tests
// can rely on impersonation to check what a narrower identity may do.
func TestRBACEnforced(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	cfg := c.Config()
	cfg.Impersonate.UserName = "nobody"
	_, err := kubernetesClient(t, cfg).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
}

// TestStartStop starts a private cluster, stops it and checks that no process
// and no file is left behind.
func TestStartStop(t *testing.T) {
	c := Start(t)
	_, err := c.Client().CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	require.NoError(t, err)

	apiPID, etcdPID := c.apiserver.cmd.Process.Pid, c.etcd.cmd.Process.Pid
	for _, p := range []struct {
		name string
		pid  int
	}{{"kube-apiserver", apiPID}, {"etcd", etcdPID}} {
		if rss, hwm, ok := memory(p.pid); ok {
			t.Logf("%s: %d MB resident, %d MB peak", p.name, rss>>20, hwm>>20)
		}
	}

	begin := time.Now()
	require.NoError(t, c.Stop())
	t.Logf("stopped in %v", time.Since(begin).Round(time.Millisecond))
	require.NoError(t, c.Stop(), "a second Stop returns the first result")
	for _, pid := range []int{apiPID, etcdPID} {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		assert.True(t, os.IsNotExist(err), "process %d still there", pid)
	}
	_, err = os.Stat(c.dir)
	assert.True(t, os.IsNotExist(err), "%s still there", c.dir)
}

// TestUniqueName checks that names are valid DNS-1123 labels and differ.
func TestUniqueName(t *testing.T) {
	t.Run("Weird/Name_With Spaces--and.dots", func(t *testing.T) {
		a, b := UniqueName(t), UniqueName(t)
		assert.NotEqual(t, a, b)
		assert.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, a)
		assert.LessOrEqual(t, len(a), 63)
		assert.True(t, strings.HasPrefix(a, "testuniquename-weird-name-with-spaces-and-dots-"), a)
	})
}

// TestMissingAssets checks that an empty assets directory is reported as
// ErrNoAssets, which Start and Shared turn into a skip.
func TestMissingAssets(t *testing.T) {
	_, err := StartCluster(t.Context(), Options{AssetsDir: t.TempDir()})
	assert.ErrorIs(t, err, ErrNoAssets)
}

// memory returns the resident and peak resident bytes of pid, on Linux.
func memory(pid int) (rss, hwm int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm, true
}

// kubernetesClient returns a clientset for cfg.
func kubernetesClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// TestStartErrorPortTaken checks that a program that lost its port to
// another one is reported as errAddrInUse, which makes StartCluster try
// again on other ports, and that the error carries the end of the log.
func TestStartErrorPortTaken(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "etcd.log")
	var log strings.Builder
	for i := range 40 {
		log.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	log.WriteString("listen tcp 127.0.0.1:2379: bind: address already in use\n")
	require.NoError(t, os.WriteFile(logPath, []byte(log.String()), 0o600))
	p := &process{name: "etcd", logPath: logPath, done: make(chan struct{})}
	close(p.done)

	err := startError(p)
	assert.ErrorIs(t, err, errAddrInUse)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), "line 39")
	assert.NotContains(t, err.Error(), "line 9\n", "only the last 30 lines")

	require.NoError(t, os.WriteFile(logPath, []byte("flag provided but not defined\n"), 0o600))
	assert.NotErrorIs(t, startError(p), errAddrInUse)
}
