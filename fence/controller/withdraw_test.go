package controller_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
)

// request is a Requests of one node whose request can be withdrawn.
type request struct {
	since  time.Time
	active atomic.Bool
}

func (r *request) Requested(string) (time.Time, bool) { return r.since, r.active.Load() }

// withdrawRig is a node asked for by a request, with two power levels:
// pdu-a (level 1) and pdu-b (level 2).
func withdrawRig(t *testing.T, prefix string, faults ...fake.Fault) (*controller.Controller, *request, *fake.Device, *fake.Device, *events) {
	t.Helper()
	a := fake.NewNamed(prefix+"-a", fake.Options{Plugs: []string{"1"}})
	b := fake.NewNamed(prefix+"-b", fake.Options{Plugs: []string{"1"}})
	t.Cleanup(func() { fake.Forget(prefix + "-a"); fake.Forget(prefix + "-b") })
	for _, f := range faults {
		a.Inject(f)
	}
	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-pdu-a-node-1", Data: map[string]string{"method.properties": "address=fake://" + prefix + "-a\nplug=1\naction=off\nstonith_status_sleep=0\npower_timeout=1\n"}},
		{Name: "fence-method-pdu-b-node-1", Data: map[string]string{"method.properties": "address=fake://" + prefix + "-b\nplug=1\naction=off\nstonith_status_sleep=0\npower_timeout=1\n"}},
		{Name: "fence-config-node-1", Data: map[string]string{"config.properties": "power_management=pdu-a\npower_management.2=pdu-b\n"}},
	})
	require.NoError(t, err)
	clk := newClock()
	req := &request{since: clk.Now()}
	req.active.Store(true)
	h := &health{nodes: []controller.NodeHealth{{Name: "node-1", Since: clk.Now().Add(-time.Hour)}, {Name: "node-2", Ready: true, Since: clk.Now().Add(-time.Hour)}, {Name: "node-3", Ready: true, Since: clk.Now().Add(-time.Hour)}}}
	ev := &events{}
	c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
		Pods: &pods{}, Events: ev, Now: clk.Now, Requests: req,
		Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute}}
	return c, req, a, b, ev
}

// A remediation withdrawn while the first level's switch is under way (its
// device hangs): the switch is cancelled through its context, the step
// fails as withdrawn (a FenceWithdrawn event), and the second level's
// device is never switched.
func TestWithdrawCancelsTheSwitchUnderWay(t *testing.T) {
	c, req, a, b, ev := withdrawRig(t, strings.ToLower(t.Name()), fake.Fault{Op: fake.OpSet, Kind: fake.Hang})
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { err := c.Pass(ctx); c.Wait(); done <- err }()
	require.Eventually(t, func() bool { return a.Calls(fake.OpSet) > 0 }, 10*time.Second, time.Millisecond, "level 1 switching")
	req.active.Store(false)
	c.Withdraw("node-1")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the switch under way was not cancelled")
	}
	for range 3 {
		pass(t, c)
	}
	nf, err := c.Store.Get(ctx, "node-1")
	require.NoError(t, err)
	assert.Equal(t, flow.StatusFailed, nf.Status)
	assert.Contains(t, nf.Message, "withdrawn")
	assert.True(t, nf.FencedAt.IsZero())
	assert.Zero(t, b.Calls(fake.OpSet), "level 2 never switched")
	assert.True(t, ev.has(flow.ReasonWithdrawn), "%v", ev.reasons())
}

// The withdrawal races the pass that would start the fencing, many times,
// at the same instant: whichever comes first, once both are over nothing
// switches any more, level 2 is never switched, and the record is either
// fenced (the switch was confirmed before the withdrawal) or failed as
// withdrawn.
func TestWithdrawRacesTheSwitch(t *testing.T) {
	for i := range 100 {
		c, req, a, b, _ := withdrawRig(t, strings.ToLower(t.Name())+"-"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; _ = c.Pass(t.Context()); c.Wait() }()
		go func() { defer wg.Done(); <-start; req.active.Store(false); c.Withdraw("node-1") }()
		close(start)
		wg.Wait()
		sets := a.Calls(fake.OpSet)
		for range 3 {
			pass(t, c)
		}
		assert.Equal(t, sets, a.Calls(fake.OpSet), "run %d: a switch after the withdrawal", i)
		assert.Zero(t, b.Calls(fake.OpSet), "run %d: level 2 switched", i)
		nf, err := c.Store.Get(context.Background(), "node-1")
		if err != nil {
			assert.Zero(t, sets, "run %d: no record, no switch", i)
			continue
		}
		ok := !nf.FencedAt.IsZero() || nf.Status == flow.StatusFailed && strings.Contains(nf.Message, "withdrawn")
		assert.True(t, ok, "run %d: %s %s: %s", i, nf.Step, nf.Status, nf.Message)
	}
}

// countingHealth is a Health that reads one node too, and counts the
// passes over every node.
type countingHealth struct {
	health
	passes atomic.Int64
}

func (h *countingHealth) Nodes() []controller.NodeHealth {
	h.passes.Add(1)
	return h.health.Nodes()
}

func (h *countingHealth) Node(name string) (controller.NodeHealth, bool) {
	for _, n := range h.health.Nodes() {
		if n.Name == name {
			return n, true
		}
	}
	return controller.NodeHealth{}, false
}

// A reconcile of a ready node without a record reads that node alone: no
// pass over every node (a manager reconciles each of thousands of nodes at
// its start). A node that is not ready still gets its pass and its fence.
func TestReconcileOfAQuietNodeSkipsThePass(t *testing.T) {
	clk := newClock()
	h := &countingHealth{health: health{nodes: []controller.NodeHealth{
		{Name: "node-1", Ready: true, Since: clk.Now().Add(-time.Hour)},
		{Name: "node-2", Ready: false, Since: clk.Now().Add(-time.Hour)},
		{Name: "node-3", Ready: true, Since: clk.Now().Add(-time.Hour)},
	}}}
	cfg, err := config.Parse(configMaps(strings.ToLower(t.Name()), 3, false))
	require.NoError(t, err)
	c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
		Pods: &pods{}, Events: &events{}, Now: clk.Now, Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute}}
	after, err := c.Reconcile(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Zero(t, after)
	assert.Zero(t, h.passes.Load(), "no pass for a quiet node")
	_, err = c.Reconcile(t.Context(), "node-2")
	require.NoError(t, err)
	assert.Positive(t, h.passes.Load())
	nf, err := c.Store.Get(t.Context(), "node-2")
	require.NoError(t, err)
	assert.NotEqual(t, flow.StatusNew, nf.Status, "the node that is down is worked on: %s", nf.Message)
}
