package agentfence_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/agentfence"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rig is three agents' Leases in a fake API server.
type rig struct {
	t   *testing.T
	c   *kubefake.Clientset
	clk *clock
	dev *agentfence.Device
	n   int
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, c: kubefake.NewClientset(), clk: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	var err error
	r.dev, err = agentfence.New(r.c, agentfence.Options{Namespace: "agents", SelfFenceTimeout: 60 * time.Second,
		WatchdogTimeout: 15 * time.Second, Margin: 15 * time.Second, Fresh: 5 * time.Second, Now: r.clk.Now})
	require.NoError(t, err)
	return r
}

// renew writes node's Lease as its agent would, with its unheard list.
func (r *rig) renew(node, unheard string) {
	r.n++
	at := metav1.NewMicroTime(time.Date(2026, 3, 1, 12, 0, 0, r.n, time.UTC))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agentfence.LeasePrefix + node, Namespace: "agents",
		Labels: map[string]string{"app.kubernetes.io/name": "fencekit-agent"}, Annotations: map[string]string{agentfence.UnheardAnnotation: unheard}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &at}}
	ctx := context.Background()
	if _, err := r.c.CoordinationV1().Leases("agents").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		_, err = r.c.CoordinationV1().Leases("agents").Create(ctx, l, metav1.CreateOptions{})
		require.NoError(r.t, err)
	}
}

func (r *rig) status(node string) fence.State {
	st, err := r.dev.Status(context.Background(), node)
	require.NoError(r.t, err)
	return st
}

// The node counts off only once its Lease has stood for the self-fence
// timeout, the watchdog's and the margin (90 s), and a majority of the
// agents it counted its quorum among say they have not heard it that long;
// a restarted controller waits again; the witnesses must themselves renew.
func TestStatus(t *testing.T) {
	r := newRig(t)
	_, err := r.dev.Status(context.Background(), "c")
	require.ErrorIs(t, err, fence.ErrUnknownPlug, "no agent: nothing proves it")

	r.renew("a", "b=0.5,c=0.5")
	r.renew("b", "a=0.5,c=0.5")
	r.renew("c", "a=0.5,b=0.5")
	assert.Equal(t, fence.StateOn, r.status("c"), "its agent renews")
	for i := range 19 { // 95 s: c silent, a and b renewing
		r.clk.Add(5 * time.Second)
		secs := float64(5 * (i + 1))
		r.renew("a", "b=0.5,c="+ftoa(secs))
		r.renew("b", "a=0.5,c="+ftoa(secs))
		st := r.status("c")
		if secs < 90 {
			assert.NotEqual(t, fence.StateOff, st, "after %v s", secs)
		}
	}
	assert.Equal(t, fence.StateOff, r.status("c"))
	assert.Equal(t, fence.StateOn, r.status("a"))

	// Only one witness renews: b's word is too old to count.
	r.clk.Add(10 * time.Second)
	r.renew("a", "b=0.5,c=200")
	assert.NotEqual(t, fence.StateOff, r.status("c"), "one witness of three is no majority")

	// A controller that restarts waits the whole time again.
	r2 := newRig(t)
	r2.c = r.c
	r2.dev, err = agentfence.New(r.c, agentfence.Options{Namespace: "agents", SelfFenceTimeout: 60 * time.Second,
		WatchdogTimeout: 15 * time.Second, Margin: 15 * time.Second, Fresh: 5 * time.Second, Now: r.clk.Now})
	require.NoError(t, err)
	r.renew("b", "a=0.5,c=210")
	st, err := r2.dev.Status(context.Background(), "c")
	require.NoError(t, err)
	assert.NotEqual(t, fence.StateOff, st, "a new controller has not seen c's Lease stand")
	for range 17 { // 85 s: not yet
		r.clk.Add(5 * time.Second)
		r.renew("a", "b=0.5,c=300")
		r.renew("b", "a=0.5,c=300")
		st, err = r2.dev.Status(context.Background(), "c")
		require.NoError(t, err)
		assert.NotEqual(t, fence.StateOff, st)
	}
	r.clk.Add(10 * time.Second)
	r.renew("a", "b=0.5,c=310")
	r.renew("b", "a=0.5,c=310")
	st, err = r2.dev.Status(context.Background(), "c")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "after the whole wait")
}

// A node whose Lease lists no peers (a cluster of one, or an agent that
// never learnt them) is never counted off: it has its quorum alone.
func TestNoPeersNeverOff(t *testing.T) {
	r := newRig(t)
	r.renew("c", "")
	r.renew("a", "c=0.5")
	for range 30 {
		r.clk.Add(5 * time.Second)
		r.renew("a", "c=500")
	}
	assert.NotEqual(t, fence.StateOff, r.status("c"))
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
