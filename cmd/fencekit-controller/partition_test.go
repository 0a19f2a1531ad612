package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// partition cuts the connections it dials, both ways, while it is on:
// nothing is written, and what was read is held back until it is off. The
// connections stay open, as across a network that drops packets.
type partition struct {
	mu  sync.Mutex
	cut chan struct{} // open while cut; nil when not
}

func (p *partition) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, p: p}, nil
}

// set cuts (on) or heals the partition.
func (p *partition) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.cut == nil:
		p.cut = make(chan struct{})
	case !on && p.cut != nil:
		close(p.cut)
		p.cut = nil
	}
}

// wait returns once the partition is healed.
func (p *partition) wait() {
	p.mu.Lock()
	c := p.cut
	p.mu.Unlock()
	if c != nil {
		<-c
	}
}

type cutConn struct {
	net.Conn
	p *partition
}

func (c *cutConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.p.wait()
	return n, err
}

func (c *cutConn) Write(b []byte) (int, error) {
	c.p.wait()
	return c.Conn.Write(b)
}

// TestControlPlanePartitionedController: the controller (detection from the
// node leases, --lease-grace=6s, kwok renewing them every 2 s) is cut from
// the API server for 15 s while every node runs: it sees no lease renewed
// for more than twice the grace, every node at once. It fences nothing:
// no device is switched, no node tainted, no pod deleted; the storm guard
// refuses what it asks. Healed, it goes on with the nodes as they are.
func TestControlPlanePartitionedController(t *testing.T) {
	p := &partition{}
	a, b, c := "node-a", "node-b", "node-c"
	e := startE2E(t, e2eSpec{
		groups: map[string][]string{"a": {a}, "b": {b}, "c": {c}},
		fenced: []string{a, b, c},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: 5s\nmaxInFlight: 3\n",
		// Without leader election: a leader cut off this long would lose
		// its lease and stop, which would prove nothing here.
		args: []string{"--lease-grace=6s", "--lease-renew-interval=2s", "--leader-elect=false"},
		dial: p.dial,
	})
	// Healed before the controller is stopped (the cleanups run last
	// first): a failure while cut must not leave its connections blocked.
	t.Cleanup(func() { p.set(false) })
	ctx := t.Context()
	admin := e.cp.Client()
	ns := e.cp.Namespace(t)
	_, err := admin.AppsV1().StatefulSets(ns).Create(ctx, kubetest.StatefulSet("db", ns, 1), metav1.CreateOptions{})
	require.NoError(t, err)
	pod := kubetest.WaitPodRunning(t, admin, ns, "db-0", "", 30*time.Second)

	p.set(true)
	time.Sleep(15 * time.Second)
	p.set(false)
	// Healed: the held-back renewals arrive, and the controller catches
	// up. Long enough for a fencing to have started and switched.
	time.Sleep(10 * time.Second)

	select {
	case err := <-e.run.errc:
		t.Fatalf("the controller stopped: %v", err)
	default:
	}
	for _, n := range []string{a, b, c} {
		assert.Empty(t, e.bmcs[n].PowerLog(), "%s: switched", n)
		node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		assert.False(t, fencekube.HasOutOfServiceTaint(node), "%s: tainted", n)
		if r := e.record(n); r != nil {
			assert.True(t, r.FencedAt.IsZero() && !r.Isolated && !r.PoweredOff, "%s: %+v", n, r)
			assert.Empty(t, r.Jobs, "%s: never admitted, no method run: %+v", n, r)
		}
	}
	now, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod.UID, now.UID, "the pod was not deleted")
	var refused []string
	for l := range strings.Lines(e.run.logs.String()) {
		if strings.Contains(l, "refused by storm-guard") {
			refused = append(refused, l)
		}
	}
	assert.NotEmpty(t, refused, "the controller saw every lease stop, and took it for a storm")
	t.Logf("%d refusals by the storm guard; the first: %s", len(refused), strings.Join(refused[:min(1, len(refused))], ""))
}
