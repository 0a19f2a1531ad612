package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/etcdtest"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/agentfence"
	"github.com/fencekit/fencekit/nodeagent"
)

// A control-plane node cut from the others while its own API server still
// answers it: three control-plane nodes, a real three-member etcd (one
// member a node) and two real API servers of one cluster, node cp-a's on
// its own member and the others' on theirs; an agent on each node (the
// rights deploy/ gives, self-fence timeout 3 s, watchdog 2 s, interval 0.5
// s), cp-a's talking to its local API server. Then cp-a is parted from
// the others: its etcd member (etcdtest's Cut: nothing reaches it from
// the others, nothing of its reaches them) and its heartbeats (relays
// cut). Its API server still answers (its /livez reports its etcd check
// failing) and serves reads from its cache; only a write cannot commit, and the agent counts only a committed
// write as the API server reached. So it fences the node (its watchdog
// expires) within its bound, and the controller's driver, on the others'
// API server, counts cp-a off only after that moment, never before, as
// for any node; cp-b and cp-c, a quorum of the agents and of etcd, are
// never fenced.
func TestIsolatedControlPlaneNode(t *testing.T) {
	bin := buildAgent(t)
	// Elections of a second (heartbeats every 100 ms): under the whole
	// suite, etcdtest's 100 ms lost the others' leader again and again,
	// and their API server stopped answering for over 10 s.
	ec := etcdtest.StartWith(t, etcdtest.Options{Names: []string{"cp-a", "cp-b", "cp-c"}, Cuttable: true, ElectionMs: 1000})
	prefix := "/" + kubetest.UniqueName(t)
	local := kubetest.StartWith(t, kubetest.Options{EtcdServers: []string{ec.Members[0].ClientURL()}, EtcdPrefix: prefix})
	rest := kubetest.StartWith(t, kubetest.Options{EtcdServers: []string{ec.Members[1].ClientURL(), ec.Members[2].ClientURL()}, EtcdPrefix: prefix})

	ns := rest.Namespace(t)
	kubeconfig, controller := asDeployed(t, rest, ns)
	a, b, c := "cp-a", "cp-b", "cp-c"
	createNodes(t, rest, a, b, c)

	// Each agent knows its peers by address (--peers), cp-a's links to
	// them and theirs to it through relays the test cuts.
	addr := map[string]string{a: freeAddr(t), b: freeAddr(t), c: freeAddr(t)}
	toA, fromAToB, fromAToC := newRelay(t, addr[a]), newRelay(t, addr[b]), newRelay(t, addr[c])
	procs := startAgents(t, bin, func(n string) string { return agentKubeconfigOf(t, local, ns, n, "", t.TempDir()) }, ns,
		[]string{"--listen=" + addr[a], "--peers=" + b + "=" + fromAToB.Addr() + "," + c + "=" + fromAToC.Addr()}, a)
	procs[b] = startAgents(t, bin, func(n string) string { return kubeconfig(n, "") }, ns,
		[]string{"--listen=" + addr[b], "--peers=" + a + "=" + toA.Addr() + "," + c + "=" + addr[c]}, b)[b]
	procs[c] = startAgents(t, bin, func(n string) string { return kubeconfig(n, "") }, ns,
		[]string{"--listen=" + addr[c], "--peers=" + a + "=" + toA.Addr() + "," + b + "=" + addr[b]}, c)[c]

	leaseClient := rest.Client().CoordinationV1().Leases(ns)
	require.Eventually(t, func() bool {
		for _, n := range []string{a, b, c} {
			l, err := leaseClient.Get(t.Context(), nodeagent.LeasePrefix+n, metav1.GetOptions{})
			if err != nil {
				return false
			}
			p, err := nodeagent.ParsePublished(l.Annotations[nodeagent.AgentAnnotation])
			if err != nil || p.State != nodeagent.StateRunning || len(p.Peers) != 2 {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every agent runs, with its two peers, on one cluster")

	// cp-a parted from the others, its member a follower: the others
	// keep their leader (a cut leader's place is taken after an election,
	// which is etcd's matter, not this test's).
	sa := ec.Members[0].Etcd().Server
	if sa.Leader() == sa.MemberID() {
		require.NoError(t, sa.MoveLeader(t.Context(), uint64(sa.MemberID()), uint64(ec.Members[1].Etcd().Server.MemberID())))
	}
	require.NoError(t, ec.Members[0].Cut())
	// Mended before the API servers stop (cleanups run last first): a
	// server cut from its quorum takes its whole stop timeout.
	t.Cleanup(func() { _ = ec.Members[0].Join() })
	toA.Cut()
	fromAToB.Cut()
	fromAToC.Cut()
	cut := time.Now()

	// Its API server still answers it (its own health checks fail on
	// etcd), and serves reads from its cache: a node that took an answer
	// for the API server reached would not fence itself.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own API server
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, local.Host()+"/livez?verbose", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+local.Config().BearerToken)
	resp, err := hc.Do(req)
	require.NoError(t, err, "cp-a's API server answers")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var failing []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "[-]") {
			failing = append(failing, l)
		}
	}
	t.Logf("cp-a's API server: /livez %d, failing %q", resp.StatusCode, failing)
	if assert.Len(t, failing, 1, "only its etcd check fails") {
		assert.Contains(t, failing[0], "etcd")
	}
	cached, err := local.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err, "and serves reads from its cache")
	assert.Len(t, cached.Items, 3)

	dev, err := agentfence.New(controller, agentfence.Options{Namespace: ns})
	require.NoError(t, err)
	m := &fence.Method{Name: "agents", Node: a, Driver: agentfence.Name, Device: dev, Plug: a,
		Options: fence.Options{PowerTimeout: 40 * time.Second, PollInterval: 100 * time.Millisecond}}
	res, err := fence.Do(t.Context(), m, fence.ActionOff)
	offAt := time.Now()
	require.NoError(t, err, "%s", leases(t, rest, ns))
	assert.True(t, res.Fenced() && res.ByTime, "%+v", res)

	expired := procs[a].expiredAt(t)
	require.False(t, expired.IsZero(), "cp-a's agent fenced the node: its watchdog expired")
	assert.True(t, offAt.After(expired), "counted off %v after cp-a's watchdog reset it: never before", offAt.Sub(expired))
	assert.Less(t, expired.Sub(cut), 3*time.Second+2*time.Second+2*time.Second,
		"within its bound: the self-fence timeout, the watchdog's and a late look")
	assert.True(t, strings.Contains(procs[a].log.String(), "the node fences itself"), "cp-a's agent says why")
	// A renewal in flight at the cut may have committed; none stamped
	// after it.
	after, err := leaseClient.Get(t.Context(), nodeagent.LeasePrefix+a, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, after.Spec.RenewTime.After(cut), "no renewal of cp-a committed after the cut: renewed %v", after.Spec.RenewTime)
	for _, n := range []string{b, c} {
		_, exp := procs[n].watchdog(t)
		assert.False(t, exp, "%s, with the quorum, is not fenced", n)
	}
	t.Logf("cp-a cut: its watchdog expired %v later, counted off by the others %v after the cut",
		expired.Sub(cut).Round(10*time.Millisecond), offAt.Sub(cut).Round(10*time.Millisecond))
}
