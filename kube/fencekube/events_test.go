package fencekube_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/kube/fencekube"
)

func TestEvents(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	ev := fencekube.NewEvents(client, fencekube.EventsOptions{Host: "host-1"})
	t.Cleanup(ev.Shutdown)

	ev.Event("worker-1", true, "FenceIsolation", "isolation: node not ready for the configured duration: fencing starts")
	ev.Event("worker-1", false, "FenceRunning", strings.Repeat("x", 5000))
	var got []corev1.Event
	require.Eventually(t, func() bool {
		l, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		got = l.Items
		return len(got) == 2
	}, 10*time.Second, 10*time.Millisecond)
	byReason := map[string]corev1.Event{}
	for _, e := range got {
		byReason[e.Reason] = e
	}
	e := byReason["FenceIsolation"]
	assert.Equal(t, corev1.EventTypeWarning, e.Type)
	assert.Equal(t, "Node", e.InvolvedObject.Kind)
	assert.Equal(t, "worker-1", e.InvolvedObject.Name)
	assert.Equal(t, "worker-1", string(e.InvolvedObject.UID), "as the kubelet refers to its node")
	assert.Equal(t, "fencekit-controller", e.Source.Component)
	assert.Equal(t, "host-1", e.Source.Host)
	assert.Contains(t, e.Message, "fencing starts")
	e = byReason["FenceRunning"]
	assert.Equal(t, corev1.EventTypeNormal, e.Type)
	assert.LessOrEqual(t, len(e.Message), 1024+3, "clipped")

	ev.Shutdown()
	ev.Shutdown()
	ev.Event("worker-1", false, "After", "dropped") // never blocks or panics
}

func TestRunLeaderOptions(t *testing.T) {
	client := fake.NewClientset()
	run := func(context.Context) {}
	err := fencekube.RunLeader(t.Context(), client, fencekube.LeaderOptions{Name: "x"}, run)
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpLeader, e.Op)

	err = fencekube.RunLeader(t.Context(), client, fencekube.LeaderOptions{Namespace: "ns", Name: "x",
		LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, run)
	require.ErrorAs(t, err, &e)
	assert.Contains(t, err.Error(), "leaseDuration must be greater than renewDeadline")

	assert.Error(t, fencekube.RunLeader(t.Context(), client, fencekube.LeaderOptions{Namespace: "ns", Name: "x"}, nil))
}

// leaderOptions are short timings for tests.
func leaderOptions(ns, name, id string) fencekube.LeaderOptions {
	return fencekube.LeaderOptions{Namespace: ns, Name: name, Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
}

// candidates runs two candidates for one lease on client; each one's run
// marks itself leading until its context ends or its stop channel closes.
type candidates struct {
	leading [2]atomic.Bool
	both    atomic.Bool // both led at once
	stop    [2]chan struct{}
	errs    [2]chan error
	cancel  [2]context.CancelFunc
}

func runCandidates(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) *candidates {
	c := &candidates{}
	for i := range 2 {
		c.stop[i] = make(chan struct{})
		c.errs[i] = make(chan error, 1)
		cctx, cancel := context.WithCancel(ctx)
		c.cancel[i] = cancel
		t.Cleanup(cancel)
		go func() {
			c.errs[i] <- fencekube.RunLeader(cctx, client, leaderOptions(ns, "fence-controller", []string{"a", "b"}[i]), func(ctx context.Context) {
				c.leading[i].Store(true)
				if c.leading[1-i].Load() {
					c.both.Store(true)
				}
				defer c.leading[i].Store(false)
				select {
				case <-ctx.Done():
				case <-c.stop[i]:
				}
			})
		}()
	}
	return c
}

// leader waits until exactly one candidate leads and returns it.
func (c *candidates) leader(t *testing.T) int {
	t.Helper()
	var who int
	require.Eventually(t, func() bool {
		a, b := c.leading[0].Load(), c.leading[1].Load()
		if a != b {
			who = map[bool]int{true: 0, false: 1}[a]
			return true
		}
		return false
	}, 20*time.Second, 10*time.Millisecond)
	return who
}

func TestRunLeaderFake(t *testing.T) {
	client := fake.NewClientset()
	c := runCandidates(t, t.Context(), client, "kube-system")
	first := c.leader(t)

	// The leader's run returns: RunLeader returns nil and releases the
	// lease; the other candidate takes over.
	close(c.stop[first])
	select {
	case err := <-c.errs[first]:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("RunLeader did not return")
	}
	second := c.leader(t)
	assert.Equal(t, 1-first, second)

	c.cancel[second]()
	select {
	case err := <-c.errs[second]:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		t.Fatal("RunLeader did not return")
	}
	assert.False(t, c.both.Load(), "never two leaders at once")
}

func TestRunLeaderCancelledBeforeLeading(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var ran atomic.Bool
	err := fencekube.RunLeader(ctx, fake.NewClientset(), leaderOptions("ns", "x", "a"), func(context.Context) { ran.Store(true) })
	assert.True(t, errors.Is(err, context.Canceled))
	assert.False(t, ran.Load())
}
