package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/confirmation"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const (
	crdPath     = "../../config/crd/fencekit.io_nodefences.yaml"
	confirmYAML = "../../deploy/confirm.yaml"
)

// kubectlFence runs the plugin in-process with args, as a kubectl that
// found it on PATH would.
func kubectlFence(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(t.Context(), args, &o, &e)
	return code, o.String(), e.String()
}

// cluster is the shared API server with the CRD, deploy/confirm.yaml and
// three users: alice may confirm (ClusterRole fencekit-confirm), bob may
// patch NodeFences but not confirm, carol may only look (fencekit-view).
type cluster struct {
	c          *kubetest.Cluster
	kubeconfig string
}

func setUp(t *testing.T) *cluster {
	t.Helper()
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	c.Create(t, kubetest.Objects(t, confirmYAML)...)
	ctx := t.Context()
	admin := c.Client()
	bind := func(user, role string) {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), "test-"+user, metav1.DeleteOptions{})
		})
	}
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-patch-nodefences"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.Group}, Resources: []string{"nodefences"}, Verbs: []string{"get", "list", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(context.WithoutCancel(ctx), "test-patch-nodefences", metav1.DeleteOptions{})
	})
	bind("alice", "fencekit-confirm")
	bind("bob", "test-patch-nodefences")
	bind("carol", "fencekit-view")
	for _, u := range []string{"alice", "bob", "carol"} {
		cs := client(t, c, u)
		require.Eventually(t, func() bool {
			rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: "get", Group: v1alpha1.Group, Resource: "nodefences"}}}, metav1.CreateOptions{})
			return err == nil && rev.Status.Allowed
		}, 10*time.Second, 20*time.Millisecond, "the RBAC of %s", u)
	}
	return &cluster{c: c, kubeconfig: c.Kubeconfig(t)}
}

// client is a clientset that impersonates user (no groups).
func client(t *testing.T, c *kubetest.Cluster, user string) kubernetes.Interface {
	cfg := c.Config()
	cfg.Impersonate.UserName = user
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

func dynamicAs(t *testing.T, c *kubetest.Cluster, user string) dynamic.Interface {
	cfg := c.Config()
	cfg.Impersonate.UserName = user
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return d
}

// node creates a node whose Ready condition is ready.
func (k *cluster) node(t *testing.T, name string, ready corev1.ConditionStatus) {
	t.Helper()
	ctx := t.Context()
	admin := k.c.Client()
	n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}) })
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-10 * time.Minute))}}
	_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// nodeFence creates node's NodeFence with status, as the controller
// would have written it.
func (k *cluster) nodeFence(t *testing.T, node string, status v1alpha1.NodeFenceStatus) {
	t.Helper()
	ctx := t.Context()
	res := k.c.Dynamic().Resource(nodeFences)
	nf := &v1alpha1.NodeFence{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.NodeFenceKind},
		ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NodeFenceSpec{Node: node}, Status: status}
	u := toUnstructured(t, nf)
	created, err := res.Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Delete(context.WithoutCancel(ctx), node, metav1.DeleteOptions{}) })
	u.SetResourceVersion(created.GetResourceVersion())
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func toUnstructured(t *testing.T, nf *v1alpha1.NodeFence) *unstructured.Unstructured {
	t.Helper()
	var u unstructured.Unstructured
	var err error
	u.Object, err = runtimeToUnstructured(nf)
	require.NoError(t, err)
	return &u
}

// nodeFences is the resource the tests write NodeFences through (the
// plugin reads them with the typed client).
var nodeFences = v1alpha1.GroupVersion.WithResource(v1alpha1.NodeFenceResource)

func (k *cluster) read(t *testing.T, node string) *v1alpha1.NodeFence {
	t.Helper()
	nf := &v1alpha1.NodeFence{}
	require.NoError(t, k.c.Objects().Get(t.Context(), crclient.ObjectKey{Name: node}, nf))
	return nf
}

func micro(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t.UTC().Truncate(time.Microsecond))
	return &m
}

// On the real API server with deploy/confirm.yaml: the admission policy
// refuses a confirmation by a user without the confirm verb, and one under
// another user's name; the plugin refuses a Ready node before it writes,
// and writes an allowed user's confirmation for the current incident;
// status shows it waiting for the controller. (The controller's answer,
// and the pods released after it, are cmd/fencekit-controller's
// TestControlPlanePersonConfirms.)
func TestConfirmOnTheAPIServer(t *testing.T) {
	k := setUp(t)
	ctx := t.Context()
	dead, ready := "dead-"+kubetest.UniqueName(t), "ready-"+kubetest.UniqueName(t)
	k.node(t, dead, corev1.ConditionUnknown)
	k.node(t, ready, corev1.ConditionTrue)
	began := time.Now().Add(-5 * time.Minute)
	k.nodeFence(t, dead, v1alpha1.NodeFenceStatus{Step: "power_management", Status: "Failed", Created: micro(began), Incident: micro(began),
		Message: "power_management failed 4 times: level 1 failed: method bmc failed: not done: no answer from the BMC"})
	k.nodeFence(t, ready, v1alpha1.NodeFenceStatus{Step: "recovery", Status: "Done", Created: micro(began), Incident: micro(began), Message: "recovered"})

	// The policy takes a moment to be in force: until it refuses bob.
	bobWrites := func(by string) error {
		patch := `{"spec":{"confirmation":{"by":"` + by + `","reason":"checked","incident":"` + micro(began).Format(metav1.RFC3339Micro) + `"}}}`
		_, err := dynamicAs(t, k.c, "bob").Resource(nodeFences).Patch(ctx, dead, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	require.Eventually(t, func() bool {
		err := bobWrites("bob")
		if err == nil {
			_, err := k.c.Dynamic().Resource(nodeFences).Patch(ctx, dead, types.MergePatchType, []byte(`{"spec":{"confirmation":null}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			return false
		}
		return strings.Contains(err.Error(), "may not confirm")
	}, 20*time.Second, 100*time.Millisecond)

	// bob, through the plugin: refused by the API server, with why.
	code, _, stderr := kubectlFence(t, "confirm", dead, "--reason", "rack B7 dark", "--kubeconfig", k.kubeconfig, "--as", "bob")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "user bob may not confirm that node "+dead+" is off: the record of who confirms (a CertificateSigningRequest) may not be created; that needs ClusterRole fencekit-confirm (nothing written)")
	assert.Nil(t, k.read(t, dead).Spec.Confirmation)

	// alice may confirm, but only under her own name.
	patch := `{"spec":{"confirmation":{"by":"bob","reason":"checked","incident":"` + micro(began).Format(metav1.RFC3339Micro) + `"}}}`
	_, err := dynamicAs(t, k.c, "alice").Resource(nodeFences).Patch(ctx, dead, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.confirmation.by must be your own user name, alice")

	// A Ready node: refused before anything is written.
	code, _, stderr = kubectlFence(t, "confirm", ready, "--reason", "checked", "--kubeconfig", k.kubeconfig, "--as", "alice")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "node "+ready+" is Ready: only a node that is not ready may be confirmed off (nothing written)")
	assert.Nil(t, k.read(t, ready).Spec.Confirmation)

	// alice confirms the dead node: written for its incident.
	code, stdout, stderr := kubectlFence(t, "confirm", dead, "--reason", "rack B7 dark, checked on site", "--wait=0",
		"--kubeconfig", k.kubeconfig, "--as", "alice")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "node "+dead+": confirmation by alice written for the incident that began")
	got := k.read(t, dead).Spec.Confirmation
	require.NotNil(t, got)
	assert.Equal(t, "alice", got.By)
	assert.Equal(t, "rack B7 dark, checked on site", got.Reason)
	assert.True(t, got.Incident.Equal(micro(began)), "%v", got.Incident)
	// Beside it, the record of who made it: the API server wrote alice as
	// its creator, and it names this node, incident and reason.
	require.NotEmpty(t, got.Request)
	csr, err := k.c.Client().CertificatesV1().CertificateSigningRequests().Get(ctx, got.Request, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", csr.Spec.Username)
	assert.NoError(t, confirmation.Names(csr, confirmation.Claim{Node: dead, Incident: got.Incident.Time, Reason: got.Reason}))

	// Nothing acts on it here: the plugin says so when its wait ends.
	code, _, stderr = kubectlFence(t, "confirm", dead, "--reason", "rack B7 dark, second look", "--wait=1s",
		"--kubeconfig", k.kubeconfig, "--as", "alice")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "the controller has not acted on the confirmation within 1s (is it running?")

	// carol looks.
	code, stdout, stderr = kubectlFence(t, "status", "--kubeconfig", k.kubeconfig, "--as", "carol")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `NODE +READY +STEP +STATUS +FENCED +PROOF +PODS +INCIDENT +MESSAGE`, stdout)
	assert.Regexp(t, dead+` +Unknown +power_management +Failed`, stdout)
	assert.Regexp(t, ready+` +True +recovery +Done`, stdout)
	code, stdout, stderr = kubectlFence(t, "status", dead, "--kubeconfig", k.kubeconfig, "--as", "carol")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "Confirmation: by alice: waiting for the controller")
	assert.Contains(t, stdout, "Ready:        Unknown (for 10m)")
	// carol may not confirm: she may only look.
	code, _, stderr = kubectlFence(t, "confirm", dead, "--reason", "x", "--kubeconfig", k.kubeconfig, "--as", "carol")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "user carol may not confirm that node "+dead+" is off")
}

// Bad input: a clear error naming the node and the flag, nothing written.
func TestConfirmUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"confirm"}, "confirm takes one NODE, got 0 arguments"},
		{[]string{"confirm", "w1"}, "node w1: --reason is required"},
		{[]string{"confirm", "w1", "--reason", "   "}, "node w1: --reason is required"},
		{[]string{"confirm", "w1", "--reason", strings.Repeat("x", 1025)}, "node w1: --reason is 1025 bytes long, at most 1024"},
		{[]string{"confirm", "w1", "--reason", "x", "--wait=-1s"}, "node w1: --wait is negative"},
		{[]string{"confirm", "w1", "--reasn", "x"}, "unknown flag: --reasn"},
		{[]string{"status", "a", "b"}, "at most one NODE, got 2 arguments"},
		{[]string{"unfence"}, `unknown command "unfence"`},
	} {
		code, _, stderr := kubectlFence(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	code, stdout, _ := kubectlFence(t, "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "kubectl fence confirm NODE --reason TEXT")
}

func runtimeToUnstructured(v any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// kubectl fence healthy: refused for a node that is not Ready, nothing to
// do for one that is not held, and for a recovered node that is held,
// spec.markedHealthy written, no earlier than its recovery began.
func TestHealthyOnTheAPIServer(t *testing.T) {
	k := setUp(t)
	held, down, free := "held-"+kubetest.UniqueName(t), "down-"+kubetest.UniqueName(t), "free-"+kubetest.UniqueName(t)
	k.node(t, held, corev1.ConditionTrue)
	k.node(t, down, corev1.ConditionFalse)
	k.node(t, free, corev1.ConditionTrue)
	began := time.Now().Add(-time.Minute)
	recovering := v1alpha1.NodeFenceStatus{Step: "recovery", Status: "Done", Created: micro(began), Incident: micro(began),
		StepStarted: micro(time.Now().Add(time.Hour)), Hold: true, Held: true, Message: "recovered; it takes pods again once a person marks it healthy"}
	k.nodeFence(t, held, recovering)
	k.nodeFence(t, down, v1alpha1.NodeFenceStatus{Step: "power_management", Status: "Done", Created: micro(began), Hold: true, Held: true})

	code, _, stderr := kubectlFence(t, "healthy", down, "--kubeconfig", k.kubeconfig, "--as", "alice")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "node "+down+" is not Ready: only a ready node may be marked healthy (nothing written)")
	code, stdout, stderr := kubectlFence(t, "healthy", free, "--kubeconfig", k.kubeconfig, "--as", "alice")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "node "+free+": not held, nothing to mark")

	code, stdout, stderr = kubectlFence(t, "healthy", held, "--wait=0", "--kubeconfig", k.kubeconfig, "--as", "alice")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "node "+held+": marked healthy")
	got := k.read(t, held).Spec.MarkedHealthy
	require.NotNil(t, got)
	assert.False(t, got.Time.Before(recovering.StepStarted.Time), "no earlier than the recovery began, whatever this clock says")
	code, _, stderr = kubectlFence(t, "healthy", held, "--wait=1s", "--kubeconfig", k.kubeconfig, "--as", "alice")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "still held 1s after the mark")
}
