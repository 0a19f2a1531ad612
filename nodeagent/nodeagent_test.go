package nodeagent_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/nodeagent"
)

func TestQuorum(t *testing.T) {
	for _, tc := range []struct {
		c       nodeagent.Check
		quorate bool
		healthy bool
	}{
		{nodeagent.Check{Reached: 2, Peers: 2}, true, true},
		{nodeagent.Check{Reached: 1, Peers: 2}, true, true},   // two of three
		{nodeagent.Check{Reached: 0, Peers: 2}, false, false}, // alone
		{nodeagent.Check{API: true, Peers: 2}, false, true},   // reaches the API server
		{nodeagent.Check{Reached: 1, Peers: 3}, false, false}, // two of four: no majority
		{nodeagent.Check{Reached: 2, Peers: 3}, true, true},
		{nodeagent.Check{Peers: 0}, true, true},                  // a cluster of one
		{nodeagent.Check{Peers: 0, Unknown: true}, false, false}, // peers not known yet
		{nodeagent.Check{API: true, Unknown: true}, false, true},
	} {
		assert.Equal(t, tc.quorate, tc.c.Quorate(), "%+v", tc.c)
		assert.Equal(t, tc.healthy, tc.c.Healthy(), "%+v", tc.c)
	}
}

// look is a settable reach.
type look struct {
	mu sync.Mutex
	c  nodeagent.Check
}

func (l *look) set(c nodeagent.Check) { l.mu.Lock(); l.c = c; l.mu.Unlock() }
func (l *look) get(context.Context) nodeagent.Check {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

// The node fences itself only once it has lost the API server and its
// quorum for the timeout; reaching either again in time starts over; the
// watchdog is kicked meanwhile, and left to expire once it fenced.
func TestGuard(t *testing.T) {
	l := &look{c: nodeagent.Check{API: true, Peers: 2}}
	wd := nodeagent.NewSimWatchdog(500*time.Millisecond, "")
	g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Options: nodeagent.Options{Timeout: 600 * time.Millisecond, Interval: 50 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- g.Run(t.Context()) }()
	time.Sleep(300 * time.Millisecond)
	l.set(nodeagent.Check{Reached: 1, Peers: 2}) // the API server gone, a peer left
	time.Sleep(800 * time.Millisecond)
	l.set(nodeagent.Check{Peers: 2}) // alone
	time.Sleep(400 * time.Millisecond)
	l.set(nodeagent.Check{Reached: 2, Peers: 2}) // back in time
	time.Sleep(400 * time.Millisecond)
	_, expired := wd.State()
	require.True(t, expired.IsZero(), "not fenced while it reached its quorum or came back in time")
	alone := time.Now()
	l.set(nodeagent.Check{Peers: 2})
	select {
	case err := <-done:
		require.ErrorIs(t, err, nodeagent.ErrSelfFenced)
		assert.GreaterOrEqual(t, time.Since(alone), 600*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("not fenced")
	}
	require.Eventually(t, func() bool { _, e := wd.State(); return !e.IsZero() }, 2*time.Second, 10*time.Millisecond, "the watchdog expired")
	assert.ErrorIs(t, wd.Kick(), nodeagent.ErrExpired)
}

// One guard closing armed fences the node through the shared watchdog;
// the watchdog is kicked only while every guard kicks.
func TestGate(t *testing.T) {
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	g := nodeagent.NewGate(wd, 2)
	a, b := g.Handle(0), g.Handle(1)
	require.NoError(t, a.Kick())
	require.NoError(t, a.Kick())
	k, _ := wd.State()
	assert.Equal(t, 0, k, "b has not kicked")
	require.NoError(t, b.Kick())
	k, _ = wd.State()
	assert.Equal(t, 1, k)
	require.NoError(t, b.Close(true)) // b stops cleanly: a alone decides
	require.NoError(t, a.Kick())
	k, _ = wd.State()
	assert.Equal(t, 2, k)
	require.NoError(t, a.Close(false))
	require.NoError(t, a.Kick())
	k, _ = wd.State()
	assert.Equal(t, 2, k, "fenced: never kicked again")
}

// A heartbeat counts only when the peer answers with the shared secret's
// proof; an impostor without it does not keep a cut-off node alive.
func TestHeartbeats(t *testing.T) {
	secret := []byte("0123456789abcdef0123")
	b := &nodeagent.Heartbeats{Node: "b", Secret: secret}
	srvB := httptest.NewServer(b)
	defer srvB.Close()
	impostor := &nodeagent.Heartbeats{Node: "c", Secret: []byte("another secret of 16+ bytes")}
	srvC := httptest.NewServer(impostor)
	defer srvC.Close()
	a := &nodeagent.Heartbeats{Node: "a", Secret: secret}
	peers := []nodeagent.Peer{{Name: "b", Addr: srvB.Listener.Addr().String()}, {Name: "c", Addr: srvC.Listener.Addr().String()}, {Name: "d", Addr: "127.0.0.1:1"}}
	assert.Equal(t, 1, a.Send(t.Context(), peers))
	assert.Contains(t, b.Heard(), "a")
	// A peer named otherwise than it answers does not count either.
	assert.Equal(t, 0, a.Send(t.Context(), []nodeagent.Peer{{Name: "x", Addr: srvB.Listener.Addr().String()}}))
	weak := &nodeagent.Heartbeats{Node: "a", Secret: []byte("short")}
	assert.Equal(t, 0, weak.Send(t.Context(), peers[:1]))
}
