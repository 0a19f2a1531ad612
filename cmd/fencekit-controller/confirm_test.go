package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testbin"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// buildPlugin builds cmd/kubectl-fence (or takes it prebuilt, see
// internal/testbin) into a directory of its own, named as kubectl finds a
// plugin on PATH, and returns the directory.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := testbin.Build("github.com/fencekit/fencekit/cmd/kubectl-fence", dir)
	require.NoError(t, err)
	if link := filepath.Join(dir, "kubectl-fence"); bin != link {
		require.NoError(t, os.Symlink(bin, link))
	}
	return dir
}

// kubectl runs kubectl with args against c, with the plugin's directory
// first on PATH, and returns its exit code and output.
func kubectl(t *testing.T, c *kubetest.Cluster, plugins string, args ...string) (int, string) {
	t.Helper()
	cmd := c.KubectlCommand(t.Context(), t, args...)
	for i, e := range cmd.Env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			cmd.Env[i] = "PATH=" + plugins + string(os.PathListSeparator) + p
		}
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, "kubectl %v: %s", args, out)
	return 0, string(out)
}

// grant binds user to the ClusterRole role, and waits until the
// authorizer allows user verb on nodefences.
func grant(t *testing.T, cp *kubetest.ControlPlane, user, role, verb string) {
	t.Helper()
	ctx := t.Context()
	admin := cp.Client()
	name := kubetest.UniqueName(t) + "-" + user
	_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := cp.Config()
	cfg.Impersonate.UserName = user
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: v1alpha1.Group, Resource: "nodefences"}}}, metav1.CreateOptions{})
		return err == nil && rev.Status.Allowed
	}, 10*time.Second, 20*time.Millisecond, "%s may %s nodefences", user, verb)
}

// TestControlPlanePersonConfirms: the commonest total failure, a BMC that
// lost power with its host. A StatefulSet's pod runs on node A; node A
// dies and its BMC answers nothing: the fencing fails, the pod stays. A
// person with only the right to edit NodeFences cannot confirm it off; a
// person granted fencekit-confirm cannot confirm a Ready node; she can
// confirm node A, with the commands of docs/operating.md: the record then counts
// it fenced on her word (Fenced, reason ConfirmedByPerson, kubectl get
// shows it), the node is tainted out of service, its pod deleted and
// recreated on another node, and no BMC command was ever answered. When
// node A and its BMC come back, it recovers and the taint goes.
func TestControlPlanePersonConfirms(t *testing.T) {
	a, b, c := "node-a", "node-b", "node-c"
	e := startE2E(t, e2eSpec{
		groups: map[string][]string{"a": {a}, "b": {b}, "c": {c}},
		fenced: []string{a},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: 5s\nmaxInFlight: 2\n",
		args:   []string{"--max-retries=0", "--metrics-bind-address=127.0.0.1:0"},
	})
	ctx := t.Context()
	admin := e.cp.Client()
	ns := e.cp.Namespace(t)
	plugins := buildPlugin(t)
	e.cp.Create(t, kubetest.Objects(t, filepath.Join(deployDir, "confirm.yaml"))...)
	grant(t, e.cp, "alice", "fencekit-confirm", "confirm")
	grant(t, e.cp, "bob", "fencekit-view", "get")
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "edit-nodefences"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.Group}, Resources: []string{"nodefences"}, Verbs: []string{"get", "list", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	grant(t, e.cp, "bob", "edit-nodefences", "patch")

	// The pod goes to node A: the others are cordoned until it runs there.
	old := kubetest.RunStatefulSetOn(t, admin, ns, "db", a, b, c)

	// Node A dies with its BMC: the fencing fails.
	bmc := e.bmcs[a]
	bmc.SetFault(ipmisim.FaultSilent)
	require.NoError(t, e.cp.StopNodes("a"))
	nf := e.waitRecord(a, 120*time.Second, "Failed", func(nf *flow.NodeFence) bool { return nf.Status == flow.StatusFailed })
	assert.False(t, nf.Fenced())
	assert.Empty(t, bmc.PowerLog(), "the BMC switched nothing")
	code, out := kubectl(t, e.cp.Cluster, plugins, "fence", "status", a, "--as", "alice")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "No device has proved the node off. Once you have checked that it is (its power is gone):\n  kubectl fence confirm "+a)
	p, err := admin.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, old.UID, p.UID, "the pod stays while nothing proves the node off")

	// The schedule that once made a confirmation lie: the admission
	// policy is absent (not applied yet, or re-applied by an upgrade), and
	// bob, who may edit NodeFences, writes alice's name; then the policy
	// comes back. The controller asks the API server's own record of who
	// made it, finds none, and refuses it for good: nothing is released,
	// before or after the policy is back.
	reg := admin.AdmissionregistrationV1()
	require.NoError(t, reg.ValidatingAdmissionPolicyBindings().Delete(ctx, fencekube.ConfirmationPolicyName, metav1.DeleteOptions{}))
	require.NoError(t, reg.ValidatingAdmissionPolicies().Delete(ctx, fencekube.ConfirmationPolicyName, metav1.DeleteOptions{}))
	bobCfg := e.cp.Config()
	bobCfg.Impersonate.UserName = "bob"
	bobClient, err := client.New(bobCfg, client.Options{Scheme: e.cp.Objects().Scheme()})
	require.NoError(t, err)
	forged := fmt.Sprintf(`{"spec":{"confirmation":{"by":"alice","reason":"rack B7 dark","incident":%q}}}`,
		nf.IncidentStart().UTC().Format(metav1.RFC3339Micro))
	require.Eventually(t, func() bool {
		return bobClient.Patch(ctx, &v1alpha1.NodeFence{ObjectMeta: metav1.ObjectMeta{Name: a}}, client.RawPatch(types.MergePatchType, []byte(forged))) == nil
	}, 20*time.Second, 100*time.Millisecond, "with no policy in force, bob's write is admitted")
	nf = e.waitRecord(a, 30*time.Second, "the forged confirmation refused", func(nf *flow.NodeFence) bool { return nf.ConfirmRefused != "" })
	assert.Contains(t, nf.ConfirmRefused, "it names no record of who made it")
	assert.False(t, nf.Fenced())
	var again []*unstructured.Unstructured
	for _, o := range kubetest.Objects(t, filepath.Join(deployDir, "confirm.yaml")) {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			again = append(again, o)
		}
	}
	e.cp.Create(t, again...)
	// Each try writes another reason: a write that changes nothing is not
	// checked by the policy.
	var last error
	tries := 0
	if !assert.Eventually(t, func() bool {
		tries++
		last = bobClient.Patch(ctx, &v1alpha1.NodeFence{ObjectMeta: metav1.ObjectMeta{Name: a}},
			client.RawPatch(types.MergePatchType, []byte(strings.Replace(forged, "rack B7 dark", "rack B7 dark "+strconv.Itoa(tries), 1))))
		return last != nil && strings.Contains(last.Error(), "spec.confirmation.by must be your own user name")
	}, 20*time.Second, 100*time.Millisecond) {
		t.Fatalf("the policy not back in force: bob's write answered %v", last)
	}
	// (That the controller never asks again about a confirmation it
	// refused for good is fence/controller's TestPersonConfirmsADeadNode;
	// that no policy decides the proof, kube/fencekube's
	// TestConfirmationProof.)
	nf = e.record(a)
	assert.False(t, nf.Fenced(), "a confirmation written while no policy was in force stays refused once it is back")
	assert.Contains(t, nf.ConfirmRefused, "it names no record of who made it")
	p, err = admin.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, old.UID, p.UID, "and the pod stays")
	require.NoError(t, e.cp.Objects().Patch(ctx, &v1alpha1.NodeFence{ObjectMeta: metav1.ObjectMeta{Name: a}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"confirmation":null}}`))))

	// bob may edit NodeFences, not confirm; alice may not confirm a Ready
	// node.
	code, out = kubectl(t, e.cp.Cluster, plugins, "fence", "confirm", a, "--reason", "checked", "--as", "bob")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "user bob may not confirm that node "+a+" is off")
	code, out = kubectl(t, e.cp.Cluster, plugins, "fence", "confirm", b, "--reason", "checked", "--as", "alice")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "node "+b+" is Ready")

	// alice, who checked the rack, confirms node A off.
	confirmed := time.Now()
	code, out = kubectl(t, e.cp.Cluster, plugins, "fence", "confirm", a, "--reason", "rack B7 has no power, checked on site", "--as", "alice")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "node "+a+": confirmed off by alice; its pods are released")
	nf = e.record(a)
	assert.True(t, nf.ConfirmedOff)
	assert.False(t, nf.PoweredOff)
	require.NotNil(t, nf.Confirmation)
	assert.Equal(t, "alice", nf.Confirmation.By)

	fresh := kubetest.WaitPodRunning(t, admin, ns, "db-0", old.UID, 60*time.Second)
	assert.NotEqual(t, a, fresh.Spec.NodeName, "the new pod runs on another node")
	t.Logf("confirmed; new pod Running on %s %v later", fresh.Spec.NodeName, time.Since(confirmed).Round(100*time.Millisecond))
	n, err := admin.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, fencekube.HasOutOfServiceTaint(n))
	assert.Empty(t, bmc.PowerLog(), "no BMC command was ever answered")

	code, out = kubectl(t, e.cp.Cluster, plugins, "get", "nodefences", a)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `PROOF`, out)
	assert.Regexp(t, a+` +`+a+` +power_management +Done +True +ConfirmedByPerson`, out)
	code, out = kubectl(t, e.cp.Cluster, plugins, "fence", "status", a, "--as", "bob")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `Fenced: +True \(ConfirmedByPerson\) alice confirmed the node off; no device proved it`, out)
	assert.Regexp(t, `Confirmed by: +alice, .*: rack B7 has no power, checked on site`, out)
	assert.NotZero(t, eventCounts(t, admin, a)[flow.ReasonConfirmed])
	m := get(t, "http://"+e.run.info.MetricsAddr.String()+"/metrics")
	assert.Contains(t, m.body, `fencekit_nodes_fenced{proof="person"} 1`)

	// Node A and its BMC come back: recovered, untainted; the
	// confirmation stays on record, and no longer counts.
	bmc.SetFault(ipmisim.FaultNone)
	require.NoError(t, e.cp.StartNodes("a"))
	nf = e.waitRecord(a, 90*time.Second, "recovered", func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.False(t, nf.ConfirmedOff)
	require.Eventually(t, func() bool {
		n, err := admin.CoreV1().Nodes().Get(context.WithoutCancel(ctx), a, metav1.GetOptions{})
		return err == nil && !fencekube.HasOutOfServiceTaint(n)
	}, 10*time.Second, 50*time.Millisecond, "the taint removed after recovery")
	code, out = kubectl(t, e.cp.Cluster, plugins, "fence", "confirm", a, "--reason", "checked", "--as", "alice")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "node "+a+" is Ready")
}
