package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/agentfence"
)

// cutter is a TCP relay to the API server that the test can cut, as a
// network fault between one node and the API server would.
type cutter struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newCutter(t *testing.T, to string) *cutter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &cutter{l: l}
	t.Cleanup(func() { c.close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			if c.cut {
				c.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				c.mu.Unlock()
				in.Close()
				continue
			}
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

// close cuts every connection, and refuses new ones.
func (c *cutter) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, x := range c.conns {
		x.Close()
	}
	c.conns = nil
}

// The controller's side (kube/agentfence, the "nodeagent" driver): a node
// counts off only on the agents' word and time. Three agents on loopback
// against a real API server (self-fence timeout 3 s, watchdog 2 s,
// margin 1 s):
//
//   - node-b's agent killed (its machine gone, or the agent dead, whose
//     watchdog fires the same): its Lease stops, the two others say they
//     have not heard it; off once 6 s have passed, not before;
//   - then node-c cut from the API server alone (its relay cut) still
//     reaches node-a, a majority of three with itself: it is not fenced,
//     and the driver never says off (node-a still hears it);
//   - node-a, renewing its Lease, is never off.
func TestControllerCountsOnTheAgentsWord(t *testing.T) {
	bin := buildAgent(t)
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	kubeconfig := c.Kubeconfig(t)
	u, err := url.Parse(c.Host())
	require.NoError(t, err)
	relay := newCutter(t, u.Host)
	raw, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	cutKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(cutKubeconfig, []byte(strings.ReplaceAll(string(raw), u.Host, relay.l.Addr().String())), 0o600))

	procs := startAgents(t, bin, kubeconfig, ns, nil, "node-a", "node-b")
	procC := startAgents(t, bin, cutKubeconfig, ns, nil, "node-c")["node-c"]
	dev, err := agentfence.New(c.Client(), agentfence.Options{Namespace: ns, SelfFenceTimeout: 3 * time.Second,
		WatchdogTimeout: 2 * time.Second, Margin: time.Second, Fresh: 3 * time.Second})
	require.NoError(t, err)
	status := func(node string) fence.State {
		st, err := dev.Status(t.Context(), node)
		require.NoError(t, err, node)
		return st
	}
	require.Eventually(t, func() bool {
		for _, n := range []string{"node-a", "node-b", "node-c"} {
			if st, err := dev.Status(t.Context(), n); err != nil || st != fence.StateOn {
				return false
			}
		}
		return true
	}, 20*time.Second, 100*time.Millisecond, "every agent renews its Lease")
	// Each agent has learnt its peers from the others' Leases (it reads
	// them every 10 s) and lists them in its own.
	require.Eventually(t, func() bool {
		l, err := c.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, it := range l.Items {
			if strings.Count(it.Annotations[agentfence.UnheardAnnotation], "=") != 2 {
				return false
			}
		}
		return len(l.Items) == 3
	}, 30*time.Second, 200*time.Millisecond, "each agent lists its two peers")

	killed := time.Now()
	procs["node-b"].kill()
	var offAt time.Duration
	for end := time.Now().Add(20 * time.Second); offAt == 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if status("node-b") == fence.StateOff {
			offAt = time.Since(killed)
		}
		assert.NotEqual(t, fence.StateOff, status("node-a"), "node-a renews its Lease: never off")
	}
	require.NotZero(t, offAt, "node-b never counted off: %s", leases(t, c, ns))
	assert.GreaterOrEqual(t, offAt, 6*time.Second, "not before its timeout, its watchdog's and the margin")

	// node-c cut from the API server: it still reaches node-a, a majority
	// of the three with itself.
	relay.close()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		assert.NotEqual(t, fence.StateOff, status("node-c"), "node-c reaches its quorum: never off")
		assert.NotEqual(t, fence.StateOff, status("node-a"), "node-a renews its Lease: never off")
	}
	_, expired := procC.watchdog(t)
	assert.False(t, expired, "node-c, cut from the API server only, is not fenced")
	t.Logf("node-b's agent killed: counted off %v later", offAt.Round(10*time.Millisecond))
}

// leases describes the agents' Leases, for a failing test.
func leases(t *testing.T, c *kubetest.Cluster, ns string) string {
	l, err := c.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, it := range l.Items {
		fmt.Fprintf(&b, "%s renewed %v unheard %q; ", it.Name, it.Spec.RenewTime, it.Annotations[agentfence.UnheardAnnotation])
	}
	return b.String()
}
