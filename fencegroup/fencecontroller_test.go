package fencegroup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fencegroup"
)

// nodeHealth is a settable controller.Health.
type nodeHealth struct {
	mu    sync.Mutex
	nodes []controller.NodeHealth
}

func (h *nodeHealth) Nodes() []controller.NodeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]controller.NodeHealth(nil), h.nodes...)
}

func (h *nodeHealth) set(name string, ready bool, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.nodes {
		if h.nodes[i].Name == name {
			h.nodes[i].Ready, h.nodes[i].Since = ready, since
		}
	}
}

// eventLog records the controller's events.
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (e *eventLog) Event(node string, warning bool, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, node+" "+reason+": "+message)
}

// fenceConfig is the fence configuration for node-1..node-n, as ConfigMaps
// of the Kubernetes node-fencing design: isolation by disabling FC port i
// of a fake switch (which cuts the node's OSDs from their disks), power
// management by outlet i of a fake PDU.
func fenceConfig(t *testing.T, prefix string, n int) *config.Config {
	cms := []config.ConfigMap{
		{Name: "fence-method-template-fc", Data: map[string]string{"template.properties": "name=fc\ndriver=fake\naddress=fake://" + prefix + "-fc\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
		{Name: "fence-method-template-pdu", Data: map[string]string{"template.properties": "name=pdu\ndriver=fake\naddress=fake://" + prefix + "-pdu\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
	}
	for i := 1; i <= n; i++ {
		node := fmt.Sprintf("node-%d", i)
		for _, m := range []struct{ name, tmpl, action string }{
			{"fc-off", "fc", "off"}, {"fc-on", "fc", "on"}, {"pdu-off", "pdu", "off"}, {"pdu-on", "pdu", "on"},
		} {
			cms = append(cms, config.ConfigMap{Name: "fence-method-" + m.name + "-" + node, Data: map[string]string{
				"method.properties": fmt.Sprintf("template=%s\nplug=%d\naction=%s\n", m.tmpl, i, m.action)}})
		}
		cms = append(cms, config.ConfigMap{Name: "fence-config-" + node, Data: map[string]string{
			"config.properties": "node_name=" + node + "\nisolation=fc-off\npower_management=pdu-off pdu-on\nrecovery=fc-on\n"}})
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	return cfg
}

// The gate inside the fence controller: two OSD nodes stop answering at
// once, their OSDs still up. One is fenced: its isolation cuts its OSDs
// from their disks, the PGs degrade, and its own power management goes on
// all the same. The other waits, first for the first one, then, once the
// first is back and recovered, until the PGs are clean again; then it is
// fenced. A node outside the group is fenced at once meanwhile.
func TestFenceControllerTwoOSDNodes(t *testing.T) {
	clk := newClock()
	prefix := strings.ToLower(t.Name())
	fc := fake.NewNamed(prefix+"-fc", fake.Options{Plugs: []string{"1", "2", "3", "4"}})
	pdu := fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: []string{"1", "2", "3", "4"}})
	t.Cleanup(func() { fake.Forget(prefix + "-fc"); fake.Forget(prefix + "-pdu") })

	// node-1..3 run OSDs; node-4 does not.
	ceph := newSimCeph(clk, "node-1", "node-2", "node-3")
	health, err := fencegroup.NewHealth("rook-ceph", ceph, fencegroup.HealthOptions{Now: clk.Now})
	require.NoError(t, err)
	gate, err := fencegroup.NewGate("rook-ceph", health, fencegroup.GateOptions{})
	require.NoError(t, err)
	nodes := &nodeHealth{}
	for i := 1; i <= 4; i++ {
		labels := map[string]string{}
		if i <= 3 {
			labels[fencegroup.Label("rook-ceph")] = ""
		}
		nodes.nodes = append(nodes.nodes, controller.NodeHealth{Name: fmt.Sprintf("node-%d", i), Ready: true, Since: clk.Now().Add(-time.Hour), Labels: labels})
	}
	events := &eventLog{}
	c := &controller.Controller{
		Health: nodes, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: fenceConfig(t, prefix, 4)},
		Events: events, Gate: gate, Now: clk.Now,
		Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute,
			Flow: flow.Options{PowerDelay: 2 * time.Minute, PollInterval: 10 * time.Second, MaxPolls: 4, RetryBackoff: 10 * time.Second, MaxRetries: 2}},
	}

	// The timeline: what the fake devices did, and when the PGs changed.
	var timeline []string
	logf := func(format string, args ...any) {
		timeline = append(timeline, clk.Now().Format("15:04:05")+" "+fmt.Sprintf(format, args...))
	}
	isolated := map[string]bool{}
	wasClean := true
	noteClean := func() {
		if clean := ceph.clean(); clean != wasClean {
			wasClean = clean
			logf("PGs clean: %v", clean)
		}
	}
	pass := func() {
		// The PGs may turn clean by the clock alone, and the pass admit a
		// node at once: note it before the pass.
		noteClean()
		require.NoError(t, c.Pass(context.Background()))
		c.Wait()
		// A disabled FC port takes the node's OSDs down; enabled, up.
		for i := 1; i <= 3; i++ {
			n := fmt.Sprintf("node-%d", i)
			off := fc.Truth(fmt.Sprint(i)) == fence.StateOff
			if off != isolated[n] {
				isolated[n] = off
				ceph.setUp(n, !off)
				if off {
					logf("%s isolated: its OSDs are down", n)
				} else {
					logf("%s reconnected: its OSDs are up", n)
				}
			}
		}
		noteClean()
	}
	run := func(d time.Duration, until func() bool) {
		end := clk.Now().Add(d)
		for i := 0; clk.Now().Before(end); i++ {
			if i%6 == 0 {
				_, err := health.Refresh(context.Background())
				require.NoError(t, err)
			}
			pass()
			if until != nil && until() {
				return
			}
			clk.Add(10 * time.Second)
		}
	}
	record := func(node string) *flow.NodeFence {
		r, err := c.Store.Get(context.Background(), node)
		if errors.Is(err, controller.ErrNotFound) {
			return nil
		}
		require.NoError(t, err)
		return r
	}

	run(time.Minute, nil)
	for _, n := range []string{"node-1", "node-2", "node-4"} {
		nodes.set(n, false, clk.Now())
	}
	// node-1 and node-4 are fenced; node-2 waits.
	run(10*time.Minute, func() bool {
		r1, r4 := record("node-1"), record("node-4")
		return r1 != nil && r1.PoweredOff && r4 != nil && r4.PoweredOff
	})
	r2 := record("node-2")
	require.NotNil(t, r2)
	assert.Equal(t, flow.StatusNew, r2.Status)
	assert.Contains(t, r2.Message, "refused by ceph-fence-group/rook-ceph: ")
	assert.Equal(t, fence.StateOn, fc.Truth("2"), "node-2 not isolated")
	assert.Equal(t, []fence.State{fence.StateOn}, pdu.History("2"), "node-2 not powered off")
	assert.False(t, ceph.clean(), "node-1's isolation degraded the PGs")

	// node-1 comes back after its reboot: recovery reconnects it; its OSDs
	// recover; then node-2 is fenced.
	nodes.set("node-1", true, clk.Now())
	nodes.set("node-4", true, clk.Now())
	run(30*time.Minute, func() bool { r := record("node-2"); return r != nil && r.PoweredOff })
	require.True(t, record("node-2").PoweredOff, "node-2 fenced in the end:\n%s", strings.Join(timeline, "\n"))

	// node-2 was isolated only after the PGs were clean again.
	var cleanAgain, node2Isolated int = -1, -1
	for i, l := range timeline {
		if strings.HasSuffix(l, "PGs clean: true") && cleanAgain < 0 {
			cleanAgain = i
		}
		if strings.Contains(l, "node-2 isolated") {
			node2Isolated = i
		}
	}
	t.Logf("timeline:\n%s", strings.Join(timeline, "\n"))
	require.Positive(t, cleanAgain)
	assert.Greater(t, node2Isolated, cleanAgain, "node-2 isolated before the PGs were clean again")

	// The refusals said why, in events a user can read.
	var refusals []string
	events.mu.Lock()
	for _, e := range events.evs {
		if strings.HasPrefix(e, "node-2 FenceRefused") {
			refusals = append(refusals, e)
		}
	}
	events.mu.Unlock()
	require.NotEmpty(t, refusals)
	joined := strings.Join(refusals, "\n")
	assert.Contains(t, joined, "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and node-1 ")
	assert.Contains(t, joined, "PGs not active+clean (")
}
