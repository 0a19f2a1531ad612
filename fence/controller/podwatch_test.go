package controller_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// notifyingPods is a pod treatment whose pods go when the test says, and
// that tells the controller so through WatchPods (controller.PodsNotifier).
type notifyingPods struct {
	*pods
	gone    atomic.Bool
	mu      sync.Mutex
	changed func()
	watches atomic.Int32 // running
}

func (n *notifyingPods) Gone(context.Context, string, flow.Release) (bool, string, error) {
	if n.gone.Load() {
		return true, "", nil
	}
	return false, "1 pod left", nil
}

func (n *notifyingPods) WatchPods(ctx context.Context, node string, changed func()) error {
	n.watches.Add(1)
	defer n.watches.Add(-1)
	n.mu.Lock()
	n.changed = changed
	n.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (n *notifyingPods) tell() {
	n.mu.Lock()
	f := n.changed
	n.mu.Unlock()
	f()
}

// The node's pods gone, the watch wakes the node at once: the on comes
// then, not at the next look; while the watch tells, the controller does
// not look every 2 s. The watch ends with the wait.
func TestPodsGoneWakesTheNode(t *testing.T) {
	f := newFixture(t, 1)
	np := &notifyingPods{pods: f.pods}
	c := f.controller(nil)
	c.Pods = np
	woken := make(chan string, 16)
	c.WakeNode = func(node string) { woken <- node }
	f.down("node-1")
	pass(t, c)
	f.clock.Add(6 * time.Minute)
	pass(t, c)
	r := f.record("node-1")
	require.True(t, r.WaitingForPods(), r.Message)
	require.Equal(t, fence.StateOff, f.pdu.Truth("1"))
	require.Eventually(t, func() bool { return np.watches.Load() == 1 }, 5*time.Second, time.Millisecond, "the pods watched")

	due, err := c.Reconcile(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Greater(t, due, 2*time.Second, "no look every 2 s while the watch tells")

	np.gone.Store(true)
	np.tell()
	select {
	case n := <-woken:
		assert.Equal(t, "node-1", n)
	case <-time.After(5 * time.Second):
		t.Fatal("the node was not woken")
	}
	_, err = c.Reconcile(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, f.pdu.Truth("1"), "switched on as its pods went")
	assert.False(t, f.record("node-1").WaitingForPods())
	require.Eventually(t, func() bool { return np.watches.Load() == 0 }, 5*time.Second, time.Millisecond, "the watch ended with the wait")
}

// A retry comes at the end of its backoff: the controller comes back then,
// not at its next interval after it.
func TestRetryDueRequeued(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	c.Options.Interval = time.Hour
	f.down("node-1")
	f.fc.Inject(fake.Fault{Kind: fake.Down})
	due, err := c.Reconcile(t.Context(), "node-1")
	require.NoError(t, err)
	r := f.record("node-1")
	require.Equal(t, flow.StatusError, r.Status, r.Message)
	assert.Equal(t, 10*time.Second, due, "the retry's backoff (10 s), not the interval (1 h)")
}
