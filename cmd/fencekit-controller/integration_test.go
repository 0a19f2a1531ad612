package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/kube/nodelease"
)

// crdPath is the CRD the manifests install.
var crdPath = filepath.Join(deployDir, "crd", "fencekit.io_nodefences.yaml")

// serviceAccount is the manifests' service account.
const serviceAccount = "fencekit-controller"

// deployed gives a test of the program a namespace on the shared API
// server with the NodeFence CRD and the objects of deploy/rbac.yaml: the
// cluster, an admin client, the namespace, and the configuration of the
// controller's service account.
func deployed(t *testing.T) (*kubetest.Cluster, kubernetes.Interface, string, *rest.Config) {
	t.Helper()
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	ns := c.Namespace(t)
	return c, c.Client(), ns, applyRBAC(t, c, ns, nil)
}

// applyRBAC creates the objects of deploy/rbac.yaml as a kustomization
// with namespace ns would (the cluster-scoped ones under unique names),
// after edit has changed the rules, and returns a configuration that
// impersonates the service account.
func applyRBAC(t *testing.T, c *kubetest.Cluster, ns string, edit func(cr *rbacv1.ClusterRole, r *rbacv1.Role)) *rest.Config {
	t.Helper()
	ctx := t.Context()
	admin := c.Client()
	var (
		sa  corev1.ServiceAccount
		cr  rbacv1.ClusterRole
		crb rbacv1.ClusterRoleBinding
		r   rbacv1.Role
		rb  rbacv1.RoleBinding
	)
	path := filepath.Join(deployDir, "rbac.yaml")
	object(t, path, "ServiceAccount", &sa)
	object(t, path, "ClusterRole", &cr)
	object(t, path, "ClusterRoleBinding", &crb)
	object(t, path, "Role", &r)
	object(t, path, "RoleBinding", &rb)
	if edit != nil {
		edit(&cr, &r)
	}
	unique := kubetest.UniqueName(t)
	sa.Namespace, r.Namespace, rb.Namespace = ns, ns, ns
	cr.Name, crb.Name, crb.RoleRef.Name = unique, unique, unique
	for _, s := range [][]rbacv1.Subject{crb.Subjects, rb.Subjects} {
		require.Len(t, s, 1)
		require.Equal(t, serviceAccount, s[0].Name)
		s[0].Namespace = ns
	}
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &crb, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &r, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rb, metav1.CreateOptions{})
	require.NoError(t, err)
	applyNodeLeaseRBAC(t, c, ns, unique)

	cfg := c.Config()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":" + serviceAccount
	// The authorizer sees new bindings after a moment: wait until both
	// bindings hold.
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: "fencekit.io", Resource: "nodefences"},
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: nodelease.DefaultNamespace},
	} {
		require.Eventually(t, func() bool {
			rev, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr}},
				metav1.CreateOptions{})
			return err == nil && rev.Status.Allowed
		}, 10*time.Second, 20*time.Millisecond, "%+v", attr)
	}
	return cfg
}

// applyNodeLeaseRBAC applies deploy/node-lease.yaml on the shared API
// server for the service account of ns: its namespace (shared by the
// tests: each test's nodes have their own names), and its Role and
// RoleBinding under the name unique.
func applyNodeLeaseRBAC(t *testing.T, c *kubetest.Cluster, ns, unique string) {
	t.Helper()
	ctx := t.Context()
	admin := c.Client()
	var (
		n  corev1.Namespace
		r  rbacv1.Role
		rb rbacv1.RoleBinding
	)
	path := filepath.Join(deployDir, "node-lease.yaml")
	object(t, path, "Namespace", &n)
	object(t, path, "Role", &r)
	object(t, path, "RoleBinding", &rb)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &n, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	r.Name, rb.Name, rb.RoleRef.Name = unique, unique, unique
	require.Len(t, rb.Subjects, 1)
	rb.Subjects[0].Namespace = ns
	_, err := admin.RbacV1().Roles(n.Name).Create(ctx, &r, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(n.Name).Create(ctx, &rb, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().RoleBindings(n.Name).Delete(context.Background(), unique, metav1.DeleteOptions{})
		_ = admin.RbacV1().Roles(n.Name).Delete(context.Background(), unique, metav1.DeleteOptions{})
	})
}

// started is a run of the program in the test.
type started struct {
	info runInfo
	logs *testtool.SyncBuffer
	errc chan error
	stop context.CancelFunc
}

// startRun runs the program on cfg with args and waits until it leads.
// When wait is false it returns at once (info is then zero).
func startRun(t *testing.T, cfg *rest.Config, wait bool, args ...string) *started {
	t.Helper()
	// The device health checks only where a test asks for them: their
	// status writes would race a test's own writes of a node's status.
	// Metrics in plain HTTP, unless a test asks for them secure
	// (TestIntegrationSecureMetrics): most scrape them without a token.
	args = append([]string{"--device-check-interval=0", "--metrics-secure=false"}, args...)
	o, err := parseFlags(args, env(nil), os.Stderr)
	require.NoError(t, err)
	require.NoError(t, o.loadPolicy())
	infos := make(chan runInfo, 1)
	o.started = func(i runInfo) { infos <- i }
	ctx, cancel := context.WithCancel(t.Context())
	s := &started{logs: &testtool.SyncBuffer{}, errc: make(chan error, 1), stop: cancel}
	go func() { s.errc <- run(ctx, cfg, o, s.logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.errc:
		case <-time.After(15 * time.Second):
			t.Error("run did not return within 15 s of its context's end")
		}
		if t.Failed() {
			t.Logf("the program's log:\n%s", s.logs)
		}
	})
	if !wait {
		return s
	}
	select {
	case s.info = <-infos:
	case err := <-s.errc:
		t.Fatalf("run returned before leading: %v\n%s", err, s.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not leading after 30 s:\n%s", s.logs)
	}
	return s
}

// shutdown cancels the run and returns its error.
func (s *started) shutdown(t *testing.T) error {
	t.Helper()
	s.stop()
	select {
	case err := <-s.errc:
		s.errc <- err // for the cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return within 15 s of SIGTERM")
		return nil
	}
}

func createNode(t *testing.T, client kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time, addrs ...corev1.NodeAddress) {
	t.Helper()
	_, err := client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	setReady(t, client, name, ready, since, addrs...)
}

// setReady writes the node's Ready condition, as a kubelet would (none
// runs here), and its addresses when given.
func setReady(t *testing.T, client kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time, addrs ...corev1.NodeAddress) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since), Reason: "Test"}}
	if len(addrs) > 0 {
		n.Status.Addresses = addrs
	}
	_, err = client.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func createConfigMap(t testing.TB, client kubernetes.Interface, ns, name, key, body string) {
	t.Helper()
	_, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: body}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// kdumpSender sends fence_kdump messages from a loopback address other
// than 127.0.0.1 (Linux answers on all of 127.0.0.0/8), as a node's kdump
// kernel would.
type kdumpSender struct {
	conn *net.UDPConn
	stop chan struct{}
	done chan struct{}
}

func newKdumpSender(from string) (*kdumpSender, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(from)})
	if err != nil {
		return nil, err
	}
	return &kdumpSender{conn: conn, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// start sends a message to to every 100 ms until stopped.
func (s *kdumpSender) start(to net.Addr) {
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		msg := kdump.Encode(kdump.NewPacket())
		for {
			_, _ = s.conn.WriteTo(msg, to)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
}

func (s *kdumpSender) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	if s.done != nil {
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
	}
	s.conn.Close()
}

// eventCounts returns the count of each reason of the events on node.
// writePolicy writes a policy file (YAML) for --policy-file and returns
// its path.
func writePolicy(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func eventCounts(t *testing.T, client kubernetes.Interface, node string) map[string]int32 {
	return kubetest.NodeEventCounts(t, client, node)
}

// The program, under the service account and RBAC of deploy/rbac.yaml, on a
// real API server: a node stops answering, and its NodeFence goes through
// isolation (a fake FC switch port off), a kdump hold (fence_kdump messages
// from the node's InternalIP), power management (a fake PDU outlet off, the
// out-of-service taint), and recovery once the node is ready again (both on,
// the taint gone), with events on the node. Nothing it does is forbidden.
// secret is the devices' password in the test ConfigMaps.
const secret = "s3cret-pdu-pass"

func TestIntegrationController(t *testing.T) { testIntegrationController(t, false) }

// The same with --kdump-release-pods: the pods of the dumping node are
// released (the out-of-service taint) during the dump, before any device
// is switched off; the device fence follows when the dump ends.
func TestIntegrationControllerKdumpReleasePods(t *testing.T) { testIntegrationController(t, true) }

func testIntegrationController(t *testing.T, releaseOnDump bool) {
	c, admin, ns, cfg := deployed(t)
	ctx := t.Context()
	watches := kubetest.CountWatches(cfg)

	prefix := kubetest.UniqueName(t)
	victim, healthy := prefix+"-w1", prefix+"-w2"
	fc := fake.NewNamed(prefix+"-fc", fake.Options{Plugs: []string{"1"}})
	pdu := fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: []string{"1"}})
	t.Cleanup(func() { fake.Forget(prefix + "-fc"); fake.Forget(prefix + "-pdu") })

	// The node's kdump kernel sends from its InternalIP, 127.0.0.2 (or .4:
	// the nodes of the other run stay in the shared API server, and an
	// address belongs to one node).
	victimIP, healthyIP := "127.0.0.2", "127.0.0.3"
	if releaseOnDump {
		victimIP, healthyIP = "127.0.0.4", "127.0.0.5"
	}
	sender, err := newKdumpSender(victimIP)
	withKdump := err == nil
	switch {
	case withKdump:
		defer sender.close()
	case releaseOnDump:
		t.Fatalf("cannot send kdump messages from %s: %v", victimIP, err)
	default:
		t.Logf("no kdump hold: cannot send from %s: %v", victimIP, err)
	}

	for _, d := range []string{"fc", "pdu"} {
		createConfigMap(t, admin, ns, "fence-method-template-"+d, "template.properties",
			"name="+d+"\ndriver=fake\naddress=fake://"+prefix+"-"+d+"\nusername=admin\npassword="+secret+"\nstonith_status_sleep=0\npower_timeout=2\n")
		for _, a := range []string{"off", "on"} {
			createConfigMap(t, admin, ns, "fence-method-"+d+"-"+a+"-"+victim, "method.properties", "template="+d+"\nplug=1\naction="+a+"\n")
		}
	}
	kd := "no"
	if withKdump {
		kd = "yes"
	}
	createConfigMap(t, admin, ns, "fence-config-"+victim, "config.properties",
		"node_name="+victim+"\nisolation=fc-off\npower_management=pdu-off\nrecovery=pdu-on fc-on\nkdump="+kd+"\n")
	createNode(t, admin, victim, corev1.ConditionTrue, time.Now().Add(-time.Hour), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: victimIP})
	createNode(t, admin, healthy, corev1.ConditionTrue, time.Now().Add(-time.Hour), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: healthyIP})

	policyFile := writePolicy(t, "stormGuard:\n  maxUnresponsivePercent: 75\nmaxInFlight: 2\n")
	identity := prefix + "-ctl"
	args := []string{"--namespace=" + ns, "--identity=" + identity}
	if releaseOnDump {
		args = append(args, "--kdump-release-pods")
	}
	s := startRun(t, cfg, true, append(args,
		"--leader-elect=true", "--leader-election-name="+serviceAccount,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
		"--unhealthy-after=2s", "--interval=200ms", "--power-delay=1s", "--poll-interval=300ms", "--max-polls=100",
		"--retry-backoff=200ms", "--job-timeout=20s", "--pod-treatment=taint", "--policy-file="+policyFile,
		"--kdump-listen=127.0.0.1:0", "--kdump-stale=500ms", "--kdump-timeout=30s",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
		"--log-level=debug", "--sync-timeout=20s", "--shutdown-timeout=5s")...)
	require.NotNil(t, s.info.KdumpAddr)
	require.NotNil(t, s.info.MetricsAddr)
	require.NotNil(t, s.info.ProbeAddr)
	assert.Equal(t, http.StatusOK, get(t, "http://"+s.info.ProbeAddr.String()+"/readyz").code)
	assert.Equal(t, http.StatusOK, get(t, "http://"+s.info.ProbeAddr.String()+"/healthz").code)

	// The lease is ours.
	lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, serviceAccount, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.Equal(t, identity, *lease.Spec.HolderIdentity)

	// The address book knows the nodes' InternalIPs.
	require.Eventually(t, func() bool {
		n, ok := s.info.Book.Resolve(netip.MustParseAddr(victimIP))
		return ok && n == victim
	}, 10*time.Second, 10*time.Millisecond)
	// The address book reads the nodes from the informer of the
	// controller's node health: the nodes are watched once.
	assert.Equal(t, 1, watches.Count("/api/v1/nodes"), "Nodes watched once: %v", watches)
	if withKdump {
		sender.start(s.info.KdumpAddr)
	}

	records := newRecords(t, c.Objects())
	record := func() *flow.NodeFence { return records.get(victim) }
	waitFor := func(what string, d time.Duration, done func(nf *flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		return records.wait(victim, what, d, done)
	}
	hasTaint := func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		require.NoError(t, err)
		return fencekube.HasOutOfServiceTaint(n)
	}
	assert.Nil(t, record(), "a ready node has no NodeFence")

	// The node stops answering, a minute ago.
	setReady(t, admin, victim, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	nf := waitFor("isolated", 20*time.Second, func(nf *flow.NodeFence) bool {
		return slices.ContainsFunc(nf.History, func(h flow.Transition) bool {
			return h.Step == fence.StepIsolation && h.Status == flow.StatusDone
		})
	})
	assert.True(t, nf.Isolated || nf.PoweredOff)
	assert.Equal(t, fence.StateOff, fc.Truth("1"), "the FC port confirmed off")
	assert.Equal(t, fence.StateOn, pdu.Truth("1"), "not powered off yet")

	if withKdump {
		// Power management waits while the node dumps its kernel.
		waitFor("kdump hold", 20*time.Second, func(nf *flow.NodeFence) bool {
			return nf.Step == fence.StepPowerManagement && strings.Contains(nf.Message, "waiting for the kdump to end")
		})
		assert.Equal(t, fence.StateOn, pdu.Truth("1"), "held off by the dump")
		if releaseOnDump {
			// The release is recorded once the taint is on: wait for both
			// (the taint alone may be seen while the record still says
			// the isolation's release).
			require.Eventually(t, func() bool {
				nf := record()
				return hasTaint() && nf != nil && nf.Released == flow.ReleaseDump
			}, 10*time.Second, 20*time.Millisecond, "the dumping node's pods released")
			assert.Equal(t, fence.StateOn, pdu.Truth("1"), "released before any device fence")
		} else {
			assert.False(t, hasTaint(), "no release before the device fence")
		}
		sender.close() // the dump ends; the hold ends --kdump-stale later
	}

	nf = waitFor("power fenced", 20*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone && nf.Released == flow.ReleasePower
	})
	assert.True(t, nf.PoweredOff)
	assert.Equal(t, fence.StateOff, pdu.Truth("1"), "the outlet confirmed off")
	require.Eventually(t, hasTaint, 10*time.Second, 20*time.Millisecond, "the node verified off is tainted")

	// The node is back.
	setReady(t, admin, victim, corev1.ConditionTrue, time.Now())
	nf = waitFor("recovered", 20*time.Second, func(nf *flow.NodeFence) bool { return nf.Closed() && nf.Released == flow.ReleaseNone })
	assert.Equal(t, fence.StepRecovery, nf.Step)
	assert.False(t, nf.Isolated)
	assert.False(t, nf.PoweredOff)
	assert.False(t, hasTaint(), "the taint removed once the node is back")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, fc.History("1"))
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, pdu.History("1"))

	// The story is told on the node.
	want := []string{"FenceIsolated", "FencePowerFenced", "FencePodsReleased", "FenceRecovered", "FencePodsRestored"}
	if withKdump {
		want = append(want, "FenceKdumpWait")
	}
	if releaseOnDump {
		want = append(want, "FenceKdumpRelease")
	}
	require.Eventually(t, func() bool {
		seen := eventCounts(t, admin, victim)
		for _, r := range want {
			if seen[r] == 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "events %v", want)
	if withKdump {
		assert.EqualValues(t, 1, eventCounts(t, admin, victim)["FenceKdumpWait"], "one event for the whole hold")
	}

	// The metrics tell the same story, scraped as Prometheus would.
	m := get(t, "http://"+s.info.MetricsAddr.String()+"/metrics")
	require.Equal(t, http.StatusOK, m.code)
	for _, want := range []string{
		`fencekit_attempts_total{driver="fake",outcome="confirmed",phase="off"}`,
		`fencekit_attempts_total{driver="fake",outcome="confirmed",phase="on"}`,
		`fencekit_attempt_duration_seconds_count{driver="fake",phase="off"}`,
		`fencekit_nodes{status="Done",step="recovery"} `, // 1, or 2 after the other run in the shared API server
		"go_goroutines", "process_resident_memory_bytes",
	} {
		assert.Contains(t, m.body, want)
	}
	assert.NotContains(t, m.body, secret)

	// SIGTERM: a clean stop, the lease released.
	require.NoError(t, s.shutdown(t))
	lease, err = admin.CoordinationV1().Leases(ns).Get(ctx, serviceAccount, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptrValue(lease.Spec.HolderIdentity), "released on the way out")

	logs := s.logs.String()
	assert.NotContains(t, logs, "forbidden", "the RBAC of deploy/rbac.yaml is enough")
	// The devices' password is in no log line, no event and no NodeFence.
	assert.NotContains(t, logs, secret)
	evs, err := admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range evs.Items {
		assert.NotContains(t, e.Message, secret)
	}
	nfs, err := c.Dynamic().Resource(fencekube.NodeFenceResource).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	raw, err := nfs.MarshalJSON()
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secret)
	for l := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "a log line that is not JSON: %s", l)
	}
	assert.Contains(t, logs, `"msg":"workers stopped"`)
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// On a cluster without fencekit.io's CRDs (deploy/crds not applied), the
// program gives up after --sync-timeout and names the resource it could not
// read and the likely cause, instead of controller-runtime's bare timeout.
// The cluster is a private one: the shared one has the CRDs.
func TestIntegrationMissingCRD(t *testing.T) {
	c := kubetest.Start(t)
	ns := c.Namespace(t)
	cfg := applyRBAC(t, c, ns, nil)
	s := startRun(t, cfg, false, "--leader-elect=false", "--namespace="+ns, "--sync-timeout=3s",
		"--log-format=text", "--shutdown-timeout=5s")
	select {
	case err := <-s.errc:
		s.errc <- err
		require.Error(t, err)
		assert.Contains(t, err.Error(), "NodeFences (fencekit.io) not read within --sync-timeout 3s: ")
		assert.Contains(t, err.Error(), "is the CRD installed")
		assert.True(t, meta.IsNoMatchError(err), "the cause, a missing kind, is kept for errors.As: %v", err)
		t.Logf("run gave up: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not give up")
	}
}

// A rule taken out of deploy/rbac.yaml breaks the program, and says how:
// the rules are all needed, and the test above would see a missing one.
func TestIntegrationRBACMissingRule(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	admin := c.Client()

	drop := func(rules []rbacv1.PolicyRule, resource string) []rbacv1.PolicyRule {
		return slices.DeleteFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, resource) })
	}
	base := []string{"--leader-elect=false", "--interval=200ms", "--unhealthy-after=1s", "--log-format=text", "--shutdown-timeout=5s"}

	t.Run("configmaps", func(t *testing.T) {
		ns := c.Namespace(t)
		cfg := applyRBAC(t, c, ns, func(_ *rbacv1.ClusterRole, r *rbacv1.Role) { r.Rules = drop(r.Rules, "configmaps") })
		s := startRun(t, cfg, false, append(base, "--namespace="+ns, "--sync-timeout=3s")...)
		select {
		case err := <-s.errc:
			s.errc <- err
			require.Error(t, err)
			assert.Contains(t, err.Error(), "ConfigMaps in namespace "+ns+" not read within --sync-timeout 3s: ")
			assert.Contains(t, err.Error(), "forbidden")
			assert.True(t, apierrors.IsForbidden(err))
		case <-time.After(20 * time.Second):
			t.Fatal("run did not give up")
		}
	})

	t.Run("nodefences/status", func(t *testing.T) {
		ns := c.Namespace(t)
		cfg := applyRBAC(t, c, ns, func(cr *rbacv1.ClusterRole, _ *rbacv1.Role) { cr.Rules = drop(cr.Rules, "nodefences/status") })
		node := kubetest.UniqueName(t)
		createNode(t, admin, node, corev1.ConditionFalse, time.Now().Add(-time.Hour))
		t.Cleanup(func() { removeNodeAndFence(t, c, node) })
		s := startRun(t, cfg, true, append(base, "--namespace="+ns, "--sync-timeout=20s")...)
		require.Eventually(t, func() bool {
			return strings.Contains(s.logs.String(), `nodefences.fencekit.io \"`+node+`\" is forbidden`)
		}, 20*time.Second, 20*time.Millisecond, "the store's status write refused")
		u, err := c.Dynamic().Resource(fencekube.NodeFenceResource).Get(t.Context(), node, metav1.GetOptions{})
		require.NoError(t, err, "created, without a status")
		_, has := u.Object["status"]
		assert.False(t, has, "no status was written")
		require.NoError(t, s.shutdown(t))
	})
}

// removeNodeAndFence deletes a node and its NodeFence, finalizer and all,
// so that the next tests on the shared cluster do not count it.
func removeNodeAndFence(t *testing.T, c *kubetest.Cluster, node string) {
	ctx := context.WithoutCancel(t.Context())
	_ = c.Client().CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	res := c.Dynamic().Resource(fencekube.NodeFenceResource)
	_, _ = res.Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	_ = res.Delete(ctx, node, metav1.DeleteOptions{})
}

// Two replicas: the second waits for the lease, and leads once the first
// stops (it releases the lease on its way out, so the second need not
// wait for it to expire).
func TestIntegrationLeaderHandover(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	ns := c.Namespace(t)
	cfg := applyRBAC(t, c, ns, nil)
	args := func(id string) []string {
		return []string{"--namespace=" + ns, "--identity=" + id, "--leader-election-name=" + serviceAccount,
			"--leader-election-lease-duration=20s", "--leader-election-renew-deadline=15s", "--leader-election-retry-period=200ms",
			"--interval=1s", "--log-format=text", "--sync-timeout=20s"}
	}
	a := startRun(t, cfg, true, args("replica-a")...)

	bLeads := make(chan runInfo, 1)
	o, err := parseFlags(args("replica-b"), env(nil), os.Stderr)
	require.NoError(t, err)
	require.NoError(t, o.loadPolicy())
	o.started = func(i runInfo) { bLeads <- i }
	bctx, bstop := context.WithCancel(t.Context())
	blogs := &testtool.SyncBuffer{}
	berr := make(chan error, 1)
	go func() { berr <- run(bctx, cfg, o, blogs) }()
	t.Cleanup(func() {
		bstop()
		select {
		case <-berr:
		case <-time.After(15 * time.Second):
			t.Error("replica-b did not stop")
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(blogs.String(), "another instance leads") }, 20*time.Second, 10*time.Millisecond)
	select {
	case <-bLeads:
		t.Fatal("replica-b leads while replica-a does")
	case <-time.After(500 * time.Millisecond):
	}

	stopped := time.Now()
	require.NoError(t, a.shutdown(t))
	select {
	case <-bLeads:
		t.Logf("replica-b leads %v after replica-a stopped", time.Since(stopped).Round(time.Millisecond))
		assert.Less(t, time.Since(stopped), 10*time.Second, "well before the lease would have expired")
	case err := <-berr:
		t.Fatalf("replica-b returned: %v\n%s", err, blogs)
	case <-time.After(15 * time.Second):
		t.Fatalf("replica-b does not lead:\n%s", blogs)
	}
	lease, err := c.Client().CoordinationV1().Leases(ns).Get(t.Context(), serviceAccount, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "replica-b", ptrValue(lease.Spec.HolderIdentity))
}

// --pod-treatment=delete, under the same RBAC, without leader election: a
// node with power management only is switched off, and its pods are
// force-deleted.
func TestIntegrationDeletePods(t *testing.T) {
	// A healthy node beside, so that the default storm guard does not see
	// all the nodes gone.
	s := newScene(t, 2, 1, "action=off\n")
	admin, ns, ctx, victim := s.admin, s.ns, t.Context(), s.nodes[0]
	for _, name := range []string{"db-0", "web-0"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: victim,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
		if name == "db-0" {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}}
		}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	run := s.start("--pod-treatment=delete")
	s.down(victim)
	s.record(victim, "power fenced", 20*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone && nf.Released == flow.ReleasePower
	})
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"))
	require.Eventually(t, func() bool {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		return len(l.Items) == 0
	}, 10*time.Second, 20*time.Millisecond, "the node's pods force-deleted")
	require.NoError(t, run.shutdown(t))
	logs := run.logs.String()
	assert.NotContains(t, logs, "forbidden")
	assert.Contains(t, logs, "pod force-deleted")
	assert.Contains(t, logs, "leader election is off")
}

// A leader handover in the middle of a storm, on the real API server: the
// first replica sees 4 of 6 nodes down and refuses; two come back, and it
// stops; the second replica, whose own storm guard saw nothing, honours the
// cooldown the first one started (kept in the admissions Lease), and fences
// the two still down only once it has passed.
func TestIntegrationStormCooldownAcrossLeaders(t *testing.T) {
	c := kubetest.Start(t) // a cluster of its own: the storm guard counts every node
	c.InstallCRD(t, crdPath)
	ns := c.Namespace(t)
	s := sceneOn(t, c, ns, applyRBAC(t, c, ns, nil), 6, 6, "action=off\n")
	nodes := s.nodes
	const cooldown = 12 * time.Second
	policyFile := writePolicy(t, fmt.Sprintf("stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: %s\nmaxInFlight: 6\n", cooldown))
	args := func(id string) []string {
		return []string{"--namespace=" + ns, "--identity=" + id, "--leader-election-name=" + serviceAccount,
			"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=200ms",
			"--unhealthy-after=1s", "--interval=500ms", "--retry-backoff=200ms", "--pod-treatment=taint",
			"--policy-file=" + policyFile, "--log-format=text", "--sync-timeout=20s", "--shutdown-timeout=5s"}
	}
	message := s.message

	a := startRun(t, s.cfg, true, args("replica-a")...)
	// Four nodes go down within a few milliseconds (not ready from now: a
	// node becomes a candidate only after --unhealthy-after, by when the
	// guard counts all four).
	for _, n := range nodes[:4] {
		setReady(t, s.admin, n, corev1.ConditionFalse, time.Now())
	}
	require.Eventually(t, func() bool { return strings.Contains(message(nodes[0]), "4 of 6") }, 20*time.Second, 20*time.Millisecond,
		"replica-a refuses in the storm: %q", message(nodes[0]))
	for _, n := range nodes[2:4] {
		setReady(t, s.admin, n, corev1.ConditionTrue, time.Now())
	}
	stormOver := time.Now()
	require.NoError(t, a.shutdown(t))

	b := startRun(t, s.cfg, true, args("replica-b")...)
	require.Eventually(t, func() bool { return strings.Contains(message(nodes[0]), "cooling down") }, 20*time.Second, 20*time.Millisecond,
		"replica-b honours the cooldown: %q\n%s", message(nodes[0]), b.logs)
	assert.Equal(t, fence.StateOn, s.pdu.Truth("1"), "nothing switched in the cooldown")
	require.Eventually(t, func() bool { return s.pdu.Truth("1") == fence.StateOff && s.pdu.Truth("2") == fence.StateOff },
		cooldown+20*time.Second, 50*time.Millisecond, "fenced after the cooldown")
	fenced := time.Since(stormOver)
	assert.Greater(t, fenced, cooldown-2*time.Second, "not before the cooldown ended")
	t.Logf("the two nodes still down fenced %v after the storm ended (cooldown %v), by the next leader", fenced.Round(100*time.Millisecond), cooldown)
	for _, n := range []string{"3", "4", "5", "6"} {
		assert.Equal(t, fence.StateOn, s.pdu.Truth(n), "outlet %s of a node that is up", n)
	}
}

// response is a status code and a body.
type response struct {
	code int
	body string
}

// get fetches url (a loopback endpoint of the program).
func get(t *testing.T, url string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{resp.StatusCode, string(b)}
}
