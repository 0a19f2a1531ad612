package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/kube/agentfence"
	"github.com/fencekit/fencekit/nodeagent"
)

// agentKubeconfigOf writes, in dir, the kubeconfig of node's agent on
// the API server of c: the agents' ServiceAccount of ns, on that node (as
// its token says), through via (host:port) when not empty.
func agentKubeconfigOf(t *testing.T, c *kubetest.Cluster, ns, node, via, dir string) string {
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig(t))
	require.NoError(t, err)
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + ns + ":fencekit-agent"
		ai.ImpersonateUserExtra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	if via != "" {
		for _, cl := range kc.Clusters {
			u, err := url.Parse(cl.Server)
			require.NoError(t, err)
			u.Host = via
			cl.Server = u.String()
		}
	}
	path := filepath.Join(dir, node+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// newRelay relays to to until t ends (testtool.Relay): a link the test
// cuts.
func newRelay(t *testing.T, to string) *testtool.Relay {
	r, err := testtool.NewRelay(to)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// lastKick reads when the agent's simulated watchdog was last kicked.
func (p *agentProc) lastKick(t *testing.T) time.Time {
	b, err := os.ReadFile(p.state)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "last "); ok {
			at, err := time.Parse(time.RFC3339Nano, v)
			require.NoError(t, err)
			return at
		}
	}
	t.Fatalf("%s's watchdog was never kicked", p.name)
	return time.Time{}
}

// createNodes creates the Node objects the agents guard, reporting this
// host's boot as the kubelet would.
func createNodes(t *testing.T, c *kubetest.Cluster, names ...string) {
	for _, n := range names {
		node, err := c.Client().CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
		node.Status.NodeInfo.BootID = bootID(t)
		_, err = c.Client().CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Client().CoreV1().Nodes().Delete(t.Context(), n, metav1.DeleteOptions{}) })
	}
}

// The controller's side (kube/agentfence, the "nodeagent" driver) with
// four agent processes on loopback against a real API server (self-fence
// timeout 3 s, watchdog 2 s, interval 0.5 s), each off run by the engine
// as the controller runs it; the agents and the driver have the rights
// deploy/ gives them, no more:
//
//   - node-d's agent stopped cleanly: its Lease says so, its watchdog is
//     disarmed, and an off is refused at once with the reason;
//   - node-b's agent frozen (SIGSTOP: a hung machine, whose watchdog
//     fires at its last kick and its timeout): the off is proven by time,
//     after that moment, never before; resumed, its agent fences the node
//     before it looks again, and its Lease stays as it was counted off;
//     the on withdraws the request;
//   - node-d's agent started again, node-c cut from the API server alone
//     (its relay cut) still reaches node-a and node-d, a majority of four
//     with itself: it is not fenced, and the off times out, never proven.
func TestControllerCountsOnTheAgentsWord(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	kubeconfig, controller := asDeployed(t, c, ns)
	u, err := url.Parse(c.Host())
	require.NoError(t, err)
	relay := newRelay(t, u.Host)

	a, b, cc, d := ns+"-a", ns+"-b", ns+"-c", ns+"-d"
	createNodes(t, c, a, b, cc, d)
	procs := startAgents(t, bin, func(n string) string { return kubeconfig(n, "") }, ns, nil, a, b, d)
	procs[cc] = startAgents(t, bin, func(n string) string { return kubeconfig(n, relay.Addr()) }, ns, nil, cc)[cc]

	// Each agent has learnt its three peers from the others' Leases (it
	// reads them every 10 s) and published them.
	require.Eventually(t, func() bool {
		l, err := c.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, it := range l.Items {
			p, err := nodeagent.ParsePublished(it.Annotations[nodeagent.AgentAnnotation])
			if err != nil || len(p.Peers) != 3 {
				return false
			}
		}
		return len(l.Items) == 4
	}, 40*time.Second, 200*time.Millisecond, "each agent publishes its three peers")

	dev, err := agentfence.New(controller, agentfence.Options{Namespace: ns})
	require.NoError(t, err)
	method := func(node string, timeout time.Duration) *fence.Method {
		return &fence.Method{Name: "agents", Node: node, Driver: agentfence.Name, Device: dev, Plug: node,
			Options: fence.Options{PowerTimeout: timeout, PollInterval: 100 * time.Millisecond}}
	}

	// node-d stopped cleanly.
	require.NoError(t, procs[d].cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, procs[d].cmd.Wait())
	_, err = fence.Do(t.Context(), method(d, 30*time.Second), fence.ActionOff)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `says it is "stopped"`)
	assert.True(t, fence.IsNotDone(err), "nothing written: %v", err)
	time.Sleep(3 * time.Second)
	_, expired := procs[d].watchdog(t)
	assert.False(t, expired, "a clean stop disarms the watchdog once the Lease says so")

	// node-b hung.
	require.NoError(t, procs[b].cmd.Process.Signal(syscall.SIGSTOP))
	frozen := time.Now()
	res, err := fence.Do(t.Context(), method(b, 40*time.Second), fence.ActionOff)
	offAt := time.Now()
	require.NoError(t, err, "%s", leases(t, c, ns))
	assert.True(t, res.Fenced() && res.ByTime, "%+v", res)
	reset := procs[b].lastKick(t).Add(2 * time.Second)
	assert.True(t, offAt.After(reset), "counted off %v after the watchdog would have reset node-b: never before", offAt.Sub(reset))
	t.Logf("node-b frozen: counted off %v later, %v after its watchdog's reset", offAt.Sub(frozen).Round(10*time.Millisecond),
		offAt.Sub(reset).Round(10*time.Millisecond))
	cm, err := c.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), nodeagent.RequestsConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, cm.Data[b], " proven ")

	// The machine resumed (SIGCONT): its agent, past its timeout, fences
	// it before it looks again, never renewing its Lease; the controller's
	// next job (another device) still reads it off.
	l0, err := c.Client().CoordinationV1().Leases(ns).Get(t.Context(), nodeagent.LeasePrefix+b, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, procs[b].cmd.Process.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool { return strings.Contains(procs[b].log.String(), "the node fences itself") }, 5*time.Second, 50*time.Millisecond,
		"the resumed agent fences the node")
	time.Sleep(time.Second)
	l1, err := c.Client().CoordinationV1().Leases(ns).Get(t.Context(), nodeagent.LeasePrefix+b, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, l0.ResourceVersion, l1.ResourceVersion, "never renewed after it was counted off")
	next, err := agentfence.New(controller, agentfence.Options{Namespace: ns})
	require.NoError(t, err)
	st, err := next.Status(t.Context(), b)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	_, err = fence.Do(t.Context(), method(b, 10*time.Second), fence.ActionOn)
	require.NoError(t, err)
	cm, err = c.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), nodeagent.RequestsConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Data, b, "the on withdraws the request")
	procs[b].kill()

	// node-d's agent started again: its Lease says it runs.
	procs[d].start(t)
	require.Eventually(t, func() bool {
		l, err := c.Client().CoordinationV1().Leases(ns).Get(t.Context(), nodeagent.LeasePrefix+d, metav1.GetOptions{})
		require.NoError(t, err)
		p, err := nodeagent.ParsePublished(l.Annotations[nodeagent.AgentAnnotation])
		return err == nil && p.State == nodeagent.StateRunning
	}, 10*time.Second, 100*time.Millisecond, "node-d's agent runs again")

	// node-c cut from the API server only: node-a and node-d still hear
	// it, three of four.
	relay.Cut()
	start := time.Now()
	_, err = fence.Do(t.Context(), method(cc, 15*time.Second), fence.ActionOff)
	require.Error(t, err, "node-c reaches its quorum: never proven off")
	assert.ErrorIs(t, err, fence.ErrTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 15*time.Second)
	_, expired = procs[cc].watchdog(t)
	assert.False(t, expired, "node-c, cut from the API server only, is not fenced")
	_, expired = procs[a].watchdog(t)
	assert.False(t, expired)
}

// leases describes the agents' Leases, for a failing test.
func leases(t *testing.T, c *kubetest.Cluster, ns string) string {
	l, err := c.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, it := range l.Items {
		fmt.Fprintf(&b, "%s renewed %v agent %s reports %s; ", it.Name, it.Spec.RenewTime,
			it.Annotations[nodeagent.AgentAnnotation], it.Annotations[nodeagent.ReportsAnnotation])
	}
	return b.String()
}

// expiredAt reads when the agent's simulated watchdog expired (zero while
// it has not).
func (p *agentProc) expiredAt(t *testing.T) time.Time {
	b, err := os.ReadFile(p.state)
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "expired "); ok {
			at, err := time.Parse(time.RFC3339Nano, v)
			require.NoError(t, err)
			return at
		}
	}
	return time.Time{}
}

// An agent restarted while the node is cut off goes on from its state on
// the node: cut off for 4 s of its 6 s, killed and started again, it
// fences the node about 2 s after it starts (its watchdog expiring 2 s
// later), not 6.
func TestRestartedAgentGoesOn(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	u, err := url.Parse(c.Host())
	require.NoError(t, err)
	relay := newRelay(t, u.Host)
	raw, err := os.ReadFile(c.Kubeconfig(t))
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(strings.ReplaceAll(string(raw), u.Host, relay.Addr())), 0o600))
	p := startAgents(t, bin, func(string) string { return kubeconfig }, ns,
		[]string{"--peers=node-b=" + freeAddr(t), "--self-fence-timeout=6s"}, "node-a")["node-a"]
	require.Eventually(t, func() bool { k, _ := p.watchdog(t); return k > 3 }, 10*time.Second, 50*time.Millisecond, "kicking")
	relay.Cut()
	time.Sleep(4 * time.Second)
	p.kill()
	restarted := time.Now()
	p.start(t)
	require.Eventually(t, func() bool { return !p.expiredAt(t).IsZero() }, 15*time.Second, 50*time.Millisecond, "fenced")
	took := p.expiredAt(t).Sub(restarted)
	// About 2 s, then the watchdog's 2 s; a countdown started again
	// would take 6 s and 2 s.
	assert.Less(t, took, 6*time.Second)
	assert.Contains(t, p.log.String(), "going on from the state of this boot's earlier agent")
	t.Logf("restarted 4 s into a 6 s countdown: the watchdog expired %v after the start", took.Round(10*time.Millisecond))
}

// asDeployed gives the agents and the controller the rights deploy/ gives
// them, in ns: it creates deploy/agent.yaml's ServiceAccount, Roles and
// RoleBindings and admission policy there (its ClusterRole of reviews
// bound to them), and deploy/rbac.yaml's
// ClusterRole bound to a controller ServiceAccount of ns. It returns the
// kubeconfig of each node's agent (impersonating the agents'
// ServiceAccount on that node) and a client impersonating the
// controller's.
func asDeployed(t *testing.T, c *kubetest.Cluster, ns string) (agentKubeconfig func(node, via string) string, controller client.Client) {
	var objs []*unstructured.Unstructured
	for _, o := range agentManifest(t, ns) {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			objs = append(objs, o)
		}
	}
	unique := kubetest.UniqueName(t) + "-controller"
	for _, o := range kubetest.Objects(t, filepath.Join("..", "..", "deploy", "rbac.yaml")) {
		if o.GetKind() == "ClusterRole" && o.GetName() == "fencekit-controller" {
			o.SetName(unique)
			o.SetLabels(nil)
			objs = append(objs, o)
		}
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": unique},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": unique},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "fencekit-controller", "namespace": ns}},
	}}
	c.Create(t, append(objs, binding)...)
	t.Cleanup(func() {
		_ = c.Client().RbacV1().ClusterRoleBindings().Delete(context.Background(), unique, metav1.DeleteOptions{})
		_ = c.Client().RbacV1().ClusterRoles().Delete(context.Background(), unique, metav1.DeleteOptions{})
	})

	cfg := c.Config()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":fencekit-controller"
	controller, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	dir := t.TempDir()
	// An agent's kubeconfig: its ServiceAccount, on its node (as its
	// token says), through via (host:port) when not empty.
	agentKubeconfig = func(node, via string) string { return agentKubeconfigOf(t, c, ns, node, via, dir) }
	// The authorizer sees new bindings after a moment.
	agent, err := clientcmd.BuildConfigFromFlags("", agentKubeconfig("probe", ""))
	require.NoError(t, err)
	for _, check := range []struct {
		cfg  *rest.Config
		attr authorizationv1.ResourceAttributes
	}{
		{agent, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns}},
		{agent, authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Name: nodeagent.RequestsConfigMap, Namespace: ns}},
		{cfg, authorizationv1.ResourceAttributes{Verb: "update", Resource: "configmaps", Name: nodeagent.RequestsConfigMap, Namespace: ns}},
		{cfg, authorizationv1.ResourceAttributes{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns}},
	} {
		client, err := kubernetes.NewForConfig(check.cfg)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			rev, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(),
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &check.attr}},
				metav1.CreateOptions{})
			return err == nil && rev.Status.Allowed
		}, 10*time.Second, 20*time.Millisecond, "%+v", check.attr)
	}
	// The admission policy too (a dry run: nothing written): an agent
	// writes its own node's Lease only.
	probe, err := kubernetes.NewForConfig(agent)
	require.NoError(t, err)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeagent.LeasePrefix + "other"}}
	require.Eventually(t, func() bool {
		_, err := probe.CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "an agent writes its own node's Lease only")
	}, 10*time.Second, 50*time.Millisecond, "the admission policy holds")
	return agentKubeconfig, controller
}
