package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testbin"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/nodeagent"
)

// The flags a careless operator gets wrong are refused with the reason.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--node=a"}, "has nothing to do"},
		{[]string{"--self-fence-timeout=30s"}, "--node: required"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--watchdog-timeout=1s"}, "at most a third of the watchdog's timeout"},
		{[]string{"--node=a", "--self-fence-timeout=2s"}, "at least three intervals"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--interval=1ns"}, "--interval: 1ns: want at least 10ms"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--peer-secret-file=/x", "--namespace=x"}, "--listen: required"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--listen=127.0.0.1:0", "--namespace=x"}, "--peer-secret-file: required"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--listen=127.0.0.1:0", "--peer-secret-file=/x"}, "--namespace: required"},
		{[]string{"--node=a", "--self-fence-timeout=30s", "--listen=127.0.0.1:0", "--peer-secret-file=/x", "--namespace=x", "--state-dir="}, "--state-dir: required"},
		{[]string{"--node=a", "--sbd-devices=/dev/x", "--metrics-secure=false", "--metrics-cert-dir=/x"}, "--metrics-cert-dir: a certificate without --metrics-secure"},
	} {
		t.Setenv("NODE_NAME", "")
		t.Setenv("POD_NAMESPACE", "")
		var stderr bytes.Buffer
		_, err := parse(tc.args, &stderr)
		if assert.Error(t, err, "%v", tc.args) {
			assert.Contains(t, err.Error(), tc.err, "%v", tc.args)
		}
	}
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("short\n"), 0o600))
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"--node=a", "--self-fence-timeout=30s", "--listen=127.0.0.1:0", "--peers=b=127.0.0.1:1", "--namespace=x",
		"--state-dir=" + t.TempDir(), "--peer-secret-file=" + secret, "--watchdog=sim:" + filepath.Join(t.TempDir(), "wd")}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "at least 16 bytes")
	stderr.Reset()
	require.NoError(t, os.WriteFile(secret, []byte("0123456789abcdef\n"), 0o600))
	code = run(t.Context(), []string{"--node=a", "--self-fence-timeout=30s", "--listen=127.0.0.1:0", "--peers=b=127.0.0.1:1,b=127.0.0.1:2",
		"--namespace=x", "--state-dir=" + t.TempDir(), "--peer-secret-file=" + secret, "--watchdog=sim:" + filepath.Join(t.TempDir(), "wd")}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "b named twice")
}

// agentProc is one agent process with its simulated watchdog.
type agentProc struct {
	name, addr, state, dir string
	args                   []string
	cmd                    *exec.Cmd
	log                    *testtool.SyncBuffer
}

func (p *agentProc) watchdog(t *testing.T) (kicks int, expired bool) {
	b, err := os.ReadFile(p.state)
	if err != nil {
		return 0, false
	}
	_, _ = fmt.Sscanf(string(b), "kicks %d", &kicks)
	return kicks, strings.Contains(string(b), "expired ")
}

func (p *agentProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func buildAgent(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Build("github.com/fencekit/fencekit/cmd/fencekit-agent", t.TempDir())
	require.NoError(t, err)
	return bin
}

func freeAddr(t *testing.T) string {
	// A loopback address of its own (Linux answers on all of
	// 127.0.0.0/8): a port free on 127.0.0.1 when picked could be taken,
	// before the agent binds it, by the local end of a connection to the
	// API server (seen: "bind: address already in use"); no connection
	// here starts from this address.
	n := loopbacks.Add(1)
	ip := fmt.Sprintf("127.%d.%d.%d", 100+os.Getpid()%100, n/250%250, n%250+1)
	l, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// loopbacks counts the loopback addresses freeAddr gave.
var loopbacks atomic.Uint32

// startAgents starts one agent process per node, on loopback, against the
// API server of kubeconfig, each with a simulated watchdog (1 s).
func startAgents(t *testing.T, bin string, kubeconfig func(node string) string, ns string, extra []string, nodes ...string) map[string]*agentProc {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("a shared secret of the agents\n"), 0o600))
	procs := map[string]*agentProc{}
	for _, n := range nodes {
		procs[n] = &agentProc{name: n, addr: freeAddr(t), state: filepath.Join(dir, n+".watchdog"), dir: filepath.Join(dir, n+".state")}
	}
	for _, n := range nodes {
		p := procs[n]
		p.log = &testtool.SyncBuffer{}
		p.args = append([]string{bin, "--node=" + n, "--namespace=" + ns, "--kubeconfig=" + kubeconfig(n),
			"--listen=" + p.addr, "--peer-secret-file=" + secret, "--self-fence-timeout=3s", "--interval=500ms",
			"--watchdog=sim:" + p.state, "--watchdog-timeout=2s", "--log-level=debug", "--state-dir=" + p.dir}, extra...)
		p.start(t)
		t.Cleanup(func() {
			p.kill()
			if t.Failed() {
				t.Logf("agent %s:\n%s", n, p.log)
			}
		})
	}
	return procs
}

// start starts the agent's process (again).
func (p *agentProc) start(t *testing.T) {
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stderr = p.log
	require.NoError(t, p.cmd.Start())
}

// Three agent processes on loopback, each with a simulated watchdog, find
// each other through their Leases on a real API server and kick their
// watchdogs; the API server stopped, they still reach each other (a
// quorum): nobody is fenced; one of three killed, the two left are still
// a majority: nobody is fenced; two of three gone, the last one is cut
// from the API server and its quorum and fences itself after its
// timeout (3 s): its watchdog expires. An agent alone with the API server
// up is not fenced.
func TestAgentsOnLoopback(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Start(t)
	kubeconfig := c.Kubeconfig(t)
	ns := c.Namespace(t)
	procs := startAgents(t, bin, func(string) string { return kubeconfig }, ns, nil, "node-a", "node-b", "node-c")

	// Up, each kicking, each with its Lease, each knowing both its peers:
	// an agent that started before another's Lease existed learns of it at
	// its next read of the Leases (every 10 s). Before that, the API server
	// must not stop, or an agent would go on knowing one peer only.
	require.Eventually(t, func() bool {
		l, err := c.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, it := range l.Items {
			p, err := nodeagent.ParsePublished(it.Annotations[nodeagent.AgentAnnotation])
			if err != nil || len(p.Peers) != 2 {
				return false
			}
		}
		return len(l.Items) == 3
	}, 40*time.Second, 200*time.Millisecond, "three agent Leases, each agent publishing its two peers")
	kicking := func(names ...string) {
		t.Helper()
		before := map[string]int{}
		for _, n := range names {
			before[n], _ = procs[n].watchdog(t)
		}
		time.Sleep(4 * time.Second) // longer than the self-fence timeout
		for _, n := range names {
			k, expired := procs[n].watchdog(t)
			assert.False(t, expired, "%s fenced itself", n)
			assert.Greater(t, k, before[n]+3, "%s kicks its watchdog", n)
		}
	}
	kicking("node-a", "node-b", "node-c")

	// The API server stopped: the peers still reach each other.
	require.NoError(t, c.Stop())
	kicking("node-a", "node-b", "node-c")

	// One peer gone: two of three are a majority.
	procs["node-c"].kill()
	kicking("node-a", "node-b")

	// The last peer gone: node-a is alone.
	procs["node-b"].kill()
	alone := time.Now()
	require.Eventually(t, func() bool { _, e := procs["node-a"].watchdog(t); return e }, 15*time.Second, 50*time.Millisecond,
		"node-a fenced itself")
	took := time.Since(alone)
	// Counted from its last healthy look, at most an interval before.
	assert.GreaterOrEqual(t, took, 2500*time.Millisecond, "not before its timeout")
	assert.Less(t, took, 8*time.Second, "its timeout (3 s), an interval and the watchdog's (2 s)")
	assert.Contains(t, procs["node-a"].log.String(), "the node fences itself")
	t.Logf("node-a alone: its watchdog expired %v later", took.Round(10*time.Millisecond))
}

// Cut from its only peer (which never answers, as a dead node), but
// reaching the API server: never fenced.
func TestAgentAloneWithTheAPIServer(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	// A longer timeout and interval than the others': a slow moment of
	// the shared API server is no partition.
	procs := startAgents(t, bin, func(string) string { return c.Kubeconfig(t) }, ns,
		[]string{"--peers=node-b=" + freeAddr(t), "--self-fence-timeout=8s", "--interval=1s", "--watchdog-timeout=4s"}, "node-a")
	time.Sleep(12 * time.Second) // longer than the self-fence timeout
	k, expired := procs["node-a"].watchdog(t)
	assert.False(t, expired)
	assert.Greater(t, k, 8)
}

func TestMain(m *testing.M) { kubetest.Main(m) }

// agentManifest is deploy/agent.yaml for namespace ns: its namespaced
// objects there (its Namespace left out: ns is the test's), its
// cluster-scoped objects named for the test and bound to ns.
func agentManifest(t *testing.T, ns string) []*unstructured.Unstructured {
	objs := kubetest.Objects(t, filepath.Join("..", "..", "deploy", "agent.yaml"))
	unique := kubetest.UniqueName(t)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			continue
		case "ValidatingAdmissionPolicy", "ClusterRole":
			o.SetName(unique + "-" + o.GetName())
		case "ValidatingAdmissionPolicyBinding":
			o.SetName(unique + "-" + o.GetName())
			policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
			require.NoError(t, unstructured.SetNestedField(o.Object, unique+"-"+policy, "spec", "policyName"))
			// Its match as deployed: the agents of ns are not in
			// fencekit-agent, and the rule holds for them all the same.
		case "ClusterRoleBinding":
			o.SetName(unique + "-" + o.GetName())
			ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			require.NoError(t, unstructured.SetNestedField(o.Object, unique+"-"+ref, "roleRef", "name"))
		default:
			o.SetNamespace(ns)
		}
		if o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			subjects[0].(map[string]any)["namespace"] = ns
			require.NoError(t, unstructured.SetNestedSlice(o.Object, subjects, "subjects"))
		}
		out = append(out, o)
	}
	return out
}

// deploy/agent.yaml is accepted by the API server as it is, and its
// container's arguments are flags the agent takes.
func TestManifestAccepted(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	c.Create(t, agentManifest(t, ns)...)
	ds, err := c.Client().AppsV1().DaemonSets(ns).Get(t.Context(), "fencekit-agent", metav1.GetOptions{})
	require.NoError(t, err)
	args := ds.Spec.Template.Spec.Containers[0].Args
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("0123456789abcdef"), 0o600))
	var resolved []string
	for _, a := range args {
		a = strings.NewReplacer("$(NODE_NAME)", "node-a", "$(POD_NAMESPACE)", ns, "$(NODE_IP)", "127.0.0.1").Replace(a)
		resolved = append(resolved, a)
	}
	o, err := parse(resolved, io.Discard)
	require.NoError(t, err, "%v", resolved)
	assert.Equal(t, time.Minute, o.selfFence)
	assert.Equal(t, "/run/fencekit-agent", o.stateDir)
	vols := map[string]string{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			vols[v.Name] = v.HostPath.Path
		}
	}
	assert.Equal(t, "/run/fencekit-agent", vols["state"], "the state on the host's /run, gone at the next boot")
}

// The agent's /metrics as deployed (--metrics-secure, on by default), on
// the real API server, the agent making its reviews under its own account
// with deploy/agent.yaml's rights: over HTTPS only; no token 401; a token
// the API server accepts whose user may not read metrics 403; a service
// account bound to deploy/metrics-reader.yaml's fencekit-metrics-reader
// 200, the agent's metrics in the body; no token in the agent's log.
func TestAgentSecureMetrics(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	kubeconfig, _ := asDeployed(t, c, ns)
	addr := freeAddr(t)
	procs := startAgents(t, bin, func(n string) string { return kubeconfig(n, "") }, ns,
		[]string{"--metrics-bind-address=" + addr}, "node-a")
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "the agent serves its metrics")

	code, _ := kubetest.ScrapeTLS(t, addr, "/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	readers := filepath.Join("..", "..", "deploy", "metrics-reader.yaml")
	nobody := c.ReaderToken(t, ns, readers)
	code, body := kubetest.ScrapeTLS(t, addr, "/metrics", nobody)
	assert.Equal(t, http.StatusForbidden, code, "a user without the reader's role: %s", body)
	reader := c.ReaderToken(t, ns, readers, "fencekit-metrics-reader")
	require.Eventually(t, func() bool {
		code, body = kubetest.ScrapeTLS(t, addr, "/metrics", reader)
		return code == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, "the reader: %d %s", code, body)
	assert.Contains(t, body, "fencekit_agent_watchdog_kicks_total")

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "no plain HTTP")
	assert.NotContains(t, procs["node-a"].log.String(), reader, "no token in the log")
	assert.NotContains(t, procs["node-a"].log.String(), nobody, "no token in the log")
}
