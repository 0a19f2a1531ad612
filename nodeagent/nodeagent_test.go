package nodeagent_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
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
	wd := nodeagent.NewSimWatchdog(time.Second, "")
	g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Options: nodeagent.Options{Timeout: 1500 * time.Millisecond, Interval: 100 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- g.Run(t.Context()) }()
	time.Sleep(500 * time.Millisecond)
	l.set(nodeagent.Check{Reached: 1, Peers: 2}) // the API server gone, a peer left
	time.Sleep(2 * time.Second)
	l.set(nodeagent.Check{Peers: 2}) // alone
	time.Sleep(500 * time.Millisecond)
	l.set(nodeagent.Check{Reached: 2, Peers: 2}) // back in time
	time.Sleep(500 * time.Millisecond)
	_, expired := wd.State()
	require.True(t, expired.IsZero(), "not fenced while it reached its quorum or came back in time")
	alone := time.Now()
	l.set(nodeagent.Check{Peers: 2})
	select {
	case err := <-done:
		require.ErrorIs(t, err, nodeagent.ErrSelfFenced)
		// Counted from its last healthy look, which began at most two
		// intervals before.
		assert.GreaterOrEqual(t, time.Since(alone), 1300*time.Millisecond)
	case <-time.After(10 * time.Second):
		t.Fatal("not fenced")
	}
	require.Eventually(t, func() bool { _, e := wd.State(); return !e.IsZero() }, 3*time.Second, 10*time.Millisecond, "the watchdog expired")
	assert.ErrorIs(t, wd.Kick(), nodeagent.ErrExpired)
}

// A look that returns more than two intervals after it began counts as
// cut off, however healthy: an acknowledgement may have come long after
// the look began.
func TestGuardSlowLookCountsAsCut(t *testing.T) {
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	slow := func(ctx context.Context) nodeagent.Check {
		time.Sleep(250 * time.Millisecond) // the agent stalled
		return nodeagent.Check{API: true}
	}
	g := &nodeagent.Guard{Look: slow, Watchdog: wd, Options: nodeagent.Options{Timeout: time.Second, Interval: 100 * time.Millisecond}}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.ErrorIs(t, g.Run(ctx), nodeagent.ErrSelfFenced)
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
}

// Unarmed (its agent has not yet sent its Lease what it runs with), the
// Guard never fences, cut off or not; armed, it counts from its last
// unarmed look.
func TestGuardUnarmed(t *testing.T) {
	l := &look{c: nodeagent.Check{Unknown: true}}
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	var mu sync.Mutex
	armed := false
	g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Armed: func() bool { mu.Lock(); defer mu.Unlock(); return armed },
		Options: nodeagent.Options{Timeout: 500 * time.Millisecond, Interval: 50 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- g.Run(t.Context()) }()
	time.Sleep(time.Second) // twice the timeout, cut off
	select {
	case err := <-done:
		t.Fatalf("fenced unarmed: %v", err)
	default:
	}
	k, _ := wd.State()
	assert.Greater(t, k, 3)
	mu.Lock()
	armed = true
	mu.Unlock()
	at := time.Now()
	select {
	case err := <-done:
		require.ErrorIs(t, err, nodeagent.ErrSelfFenced)
		assert.GreaterOrEqual(t, time.Since(at), 400*time.Millisecond, "from its last unarmed look")
	case <-time.After(5 * time.Second):
		t.Fatal("not fenced once armed")
	}
}

// kicked signals each kick.
type kicked struct {
	nodeagent.Watchdog
	c chan struct{}
}

func (k kicked) Kick() error {
	err := k.Watchdog.Kick()
	select {
	case k.c <- struct{}{}:
	default:
	}
	return err
}

// A stop that comes past the timeout (a machine resumed with a stop
// pending) fences the node, whatever Disarm would say.
func TestGuardStopPastTimeoutFences(t *testing.T) {
	l := &look{c: nodeagent.Check{API: true}}
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	var mu sync.Mutex
	var jump time.Duration
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(jump) }
	asked := false
	ctx, cancel := context.WithCancel(t.Context())
	k := kicked{wd, make(chan struct{}, 1)}
	g := &nodeagent.Guard{Look: l.get, Watchdog: k, Now: now, Disarm: func() bool { asked = true; return true },
		Options: nodeagent.Options{Timeout: 10 * time.Second, Interval: 5 * time.Second}}
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case <-k.c: // kicked: waiting for its next look
	case err := <-done:
		t.Fatalf("stopped: %v", err)
	}
	mu.Lock()
	jump = 15 * time.Second // resumed, a stop pending
	mu.Unlock()
	cancel()
	err := <-done
	require.ErrorIs(t, err, nodeagent.ErrSelfFenced)
	assert.ErrorIs(t, err, context.Canceled, "through the stop")
	assert.False(t, asked, "not disarmed")
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
	secret := fence.NewSecret("0123456789abcdef0123")
	b := &nodeagent.Heartbeats{Node: "b", Secret: secret}
	srvB := httptest.NewServer(b)
	defer srvB.Close()
	impostor := &nodeagent.Heartbeats{Node: "c", Secret: fence.NewSecret("another secret of 16+ bytes")}
	srvC := httptest.NewServer(impostor)
	defer srvC.Close()
	a := &nodeagent.Heartbeats{Node: "a", Secret: secret}
	peers := []nodeagent.Peer{{Name: "b", Addr: srvB.Listener.Addr().String()}, {Name: "c", Addr: srvC.Listener.Addr().String()}, {Name: "d", Addr: "127.0.0.1:1"}}
	assert.Equal(t, map[string]bool{"b": true}, a.Send(t.Context(), peers))
	assert.Contains(t, b.Heard(), "a")
	// A peer named otherwise than it answers does not count either.
	assert.Empty(t, a.Send(t.Context(), []nodeagent.Peer{{Name: "x", Addr: srvB.Listener.Addr().String()}}))
	weak := &nodeagent.Heartbeats{Node: "a", Secret: fence.NewSecret("short")}
	assert.Empty(t, weak.Send(t.Context(), peers[:1]))
	// A heartbeat without the secret's proof is not heard: nobody can
	// make a peer say it hears a node it does not.
	forger := &nodeagent.Heartbeats{Node: "f", Secret: fence.NewSecret("not the agents' secret, 16+")}
	assert.Empty(t, forger.Send(t.Context(), peers[:1]))
	assert.NotContains(t, b.Heard(), "f")
	resp, err := srvB.Client().Post(srvB.URL+"/heartbeat?from=g&at="+strconv.FormatInt(time.Now().UnixNano(), 10)+"&nonce=0123456789abcdef0123456789abcdef", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 403, resp.StatusCode)
	assert.NotContains(t, b.Heard(), "g")
}

// recorder is a transport that keeps the URL of every request it carries.
type recorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.String())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// A heartbeat recorded on the wire and played again, by someone without
// the secret, is not heard: its nonce is remembered for its time window,
// and past the window its time is refused. A heartbeat whose time is
// outside the window (a sender's clock far apart, or a recording kept)
// is not heard either.
func TestHeartbeatReplayed(t *testing.T) {
	secret := fence.NewSecret("0123456789abcdef0123")
	now := time.Now()
	b := &nodeagent.Heartbeats{Node: "b", Secret: secret, Window: 30 * time.Second, Now: func() time.Time { return now }}
	srv := httptest.NewServer(b)
	defer srv.Close()
	rec := &recorder{}
	a := &nodeagent.Heartbeats{Node: "a", Secret: secret, Client: &http.Client{Transport: rec, Timeout: 5 * time.Second},
		Now: func() time.Time { return now }}
	peer := []nodeagent.Peer{{Name: "b", Addr: srv.Listener.Addr().String()}}
	require.Equal(t, map[string]bool{"b": true}, a.Send(t.Context(), peer))
	require.Len(t, rec.urls, 1)
	heard := b.Heard()["a"]

	replay := func() int {
		resp, err := srv.Client().Post(rec.urls[0], "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	now = now.Add(10 * time.Second)
	assert.Equal(t, http.StatusForbidden, replay(), "replayed within its window: its nonce was seen")
	assert.Equal(t, heard, b.Heard()["a"], "not heard again")
	now = now.Add(time.Hour)
	assert.Equal(t, http.StatusForbidden, replay(), "replayed after its window: its time is refused")
	assert.Equal(t, heard, b.Heard()["a"])

	// A sender whose clock is a minute apart is not heard, either way.
	for _, skew := range []time.Duration{-time.Minute, time.Minute} {
		c := &nodeagent.Heartbeats{Node: "c", Secret: secret, Now: func() time.Time { return now.Add(skew) }}
		assert.Empty(t, c.Send(t.Context(), peer), "%v", skew)
		assert.NotContains(t, b.Heard(), "c", "%v", skew)
	}
	// Within the window, heard.
	c := &nodeagent.Heartbeats{Node: "c", Secret: secret, Now: func() time.Time { return now.Add(5 * time.Second) }}
	assert.Equal(t, map[string]bool{"b": true}, c.Send(t.Context(), peer))
}

// A restarted agent goes on from the last healthy moment its state kept:
// cut off at its first look and that moment older than the timeout, it
// fences the node at once, kicking nothing.
func TestGuardGoesOnFromSince(t *testing.T) {
	l := &look{c: nodeagent.Check{Peers: 2}}
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Options: nodeagent.Options{Timeout: time.Second, Interval: 50 * time.Millisecond,
		Since: time.Now().Add(-2 * time.Second)}}
	require.ErrorIs(t, g.Run(t.Context()), nodeagent.ErrSelfFenced)
	k, _ := wd.State()
	assert.Zero(t, k)
}

// A clean stop disarms the watchdog only when Disarm allows it (the
// agent's Lease says it stopped); otherwise it is left armed and expires.
func TestGuardStopLeavesArmedWithoutLease(t *testing.T) {
	for _, allow := range []bool{true, false} {
		l := &look{c: nodeagent.Check{API: true}}
		wd := nodeagent.NewSimWatchdog(time.Second, "")
		g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Options: nodeagent.Options{Timeout: 3 * time.Second, Interval: 50 * time.Millisecond},
			Disarm: func() bool { return allow }}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		err := g.Run(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		time.Sleep(1500 * time.Millisecond)
		_, expired := wd.State()
		assert.Equal(t, !allow, !expired.IsZero(), "disarm allowed: %v", allow)
	}
}

func TestQuorumLost(t *testing.T) {
	for n := 0; n <= 9; n++ {
		// QuorumLost(n) unreached peers leave no quorum; one fewer does.
		lost := nodeagent.QuorumLost(n)
		if lost <= n {
			assert.False(t, nodeagent.Check{Reached: n - lost, Peers: n}.Quorate(), "n=%d", n)
		}
		if lost >= 1 && lost-1 <= n {
			assert.True(t, nodeagent.Check{Reached: n - lost + 1, Peers: n}.Quorate(), "n=%d", n)
		}
	}
}

// A machine that stood still past its timeout (suspended: the boot clock
// jumps) fences itself before its next look, though that look would have
// reached the API server: a controller may have counted it off meanwhile.
func TestGuardNoComebackPastTimeout(t *testing.T) {
	l := &look{c: nodeagent.Check{API: true}}
	wd := nodeagent.NewSimWatchdog(time.Hour, "")
	var mu sync.Mutex
	var jump time.Duration
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(jump) }
	g := &nodeagent.Guard{Look: l.get, Watchdog: wd, Now: now, Options: nodeagent.Options{Timeout: time.Second, Interval: 50 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- g.Run(t.Context()) }()
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	jump = 2 * time.Second // resumed after two seconds
	mu.Unlock()
	k0, _ := wd.State()
	select {
	case err := <-done:
		require.ErrorIs(t, err, nodeagent.ErrSelfFenced)
	case <-time.After(2 * time.Second):
		t.Fatal("a healthy look after the timeout kept it alive")
	}
	k, _ := wd.State()
	assert.LessOrEqual(t, k, k0+1, "no kick after the jump (one already past its check at most)")
}

// The shared secret never shows in %v, %+v, %#v or a log line of a
// Heartbeats.
func TestHeartbeatsSecretRedacted(t *testing.T) {
	h := &nodeagent.Heartbeats{Node: "a", Secret: fence.NewSecret("the agents' own secret value")}
	var log strings.Builder
	slog.New(slog.NewJSONHandler(&log, nil)).Info("heartbeats", "hb", h, "secret", h.Secret)
	for _, out := range []string{fmt.Sprintf("%v", h), fmt.Sprintf("%+v", h), fmt.Sprintf("%#v", h), log.String()} {
		assert.NotContains(t, out, "own secret", out)
	}
}
