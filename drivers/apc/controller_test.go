package apc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/controller/controllertest"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// liveHealth is a settable controller.Health of one node.
type liveHealth struct {
	mu sync.Mutex
	n  controller.NodeHealth
}

func (h *liveHealth) Nodes() []controller.NodeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return []controller.NodeHealth{h.n}
}

// liveConfig is node-1's fence configuration: power management through its
// outlet 3 on PDU A and PDU B, methods without action= (the step's reboot).
func liveConfig(t testing.TB, a, b *snmpsim.Sim) *config.Config {
	tpl := func(name string, s *snmpsim.Sim) config.ConfigMap {
		return config.ConfigMap{Name: "fence-method-template-" + name, Data: map[string]string{"template.properties": fmt.Sprintf(
			"agent_name=fence_apc_snmp\nip=%s\nipport=%d\nsnmp_version=2c\ncommunity=%s\nstonith_status_sleep=0.01\npower_timeout=5\n",
			snmpsim.Host, s.Port, s.Options.Community)}}
	}
	cfg, err := config.Parse([]config.ConfigMap{
		tpl("pdu-a", a), tpl("pdu-b", b),
		{Name: "fence-method-pdu-a-node-1", Data: map[string]string{"method.properties": "template=pdu-a\nplug=3\n"}},
		{Name: "fence-method-pdu-b-node-1", Data: map[string]string{"method.properties": "template=pdu-b\nplug=3\n"}},
		{Name: "fence-config-node-1", Data: map[string]string{"config.properties": "node_name=node-1\npower_management=pdu-a pdu-b\n"}},
	})
	require.NoError(t, err)
	return cfg
}

// The fence controller over two live PDUs, killed at every write of its
// store (before or after it) until power management is done: a new
// instance resumes from the record, and the PDUs received exactly A off,
// B off, A on, B on: no outlet switched twice, none switched on before both
// were off, and the node's pods released in between.
func TestControllerTwoLivePDUsKilledAtEveryWrite(t *testing.T) {
	a, b := twoPDUs(t)
	pdus := map[string]*snmpsim.Sim{"A": a, "B": b}
	cfg := liveConfig(t, a, b)
	want := []string{"A off", "B off", "A on", "B on"}

	// run fences node-1 once with a controller whose store dies at its
	// killAt-th write (never when killAt is 0), then with a new instance;
	// it returns the writes made and the SETs the PDUs received.
	run := func(t *testing.T, killAt int, before bool) (int, []string, []string) {
		require.NoError(t, a.SetTruth("3", fence.StateOn))
		require.NoError(t, b.SetTruth("3", fence.StateOn))
		since := time.Now()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		health := &liveHealth{n: controller.NodeHealth{Name: "node-1", Since: now}}
		mem := controller.NewMemoryStore()
		ks := &controllertest.KillStore{Store: mem, KillAt: killAt, Before: before}
		var mu sync.Mutex
		var order []string
		pods := podsFunc(func(r flow.Release) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, fmt.Sprintf("release %s with A %s, B %s", r, mustTruth(t, a, "3"), mustTruth(t, b, "3")))
		})
		clock := now.Add(2 * time.Minute)
		mk := func(store controller.Store) *controller.Controller {
			return &controller.Controller{Health: health, Store: store, Config: controller.StaticConfig{C: cfg}, Pods: pods,
				Now:     func() time.Time { return clock },
				Options: controller.Options{Identity: "ctl", UnhealthyAfter: time.Minute}}
		}
		for range 20 {
			clock = clock.Add(time.Second) // a pass a second: the reboot's off is held 2 s
			c := mk(ks)
			if ks.Dead() {
				c = mk(mem) // the new instance, same identity
			}
			_ = c.Pass(ctx(t))
			c.Wait()
			if r, err := mem.Get(ctx(t), "node-1"); err == nil && r.Step == fence.StepPowerManagement && r.Status == flow.StatusDone {
				break
			}
		}
		r, err := mem.Get(ctx(t), "node-1")
		require.NoError(t, err)
		require.Equal(t, flow.StatusDone, r.Status, "%+v", r)
		assert.True(t, r.PoweredOff)
		return ks.Writes(), switchLog(t, pdus, since), order
	}

	writes, sets, order := run(t, 0, false)
	require.Equal(t, want, sets)
	require.Equal(t, []string{"release Power with A off, B off"}, order)
	for k := 1; k <= writes; k++ {
		for _, before := range []bool{false, true} {
			t.Run(fmt.Sprintf("write%d/before=%v", k, before), func(t *testing.T) {
				_, sets, order := run(t, k, before)
				assert.Equal(t, want, sets)
				require.NotEmpty(t, order)
				for _, o := range order {
					assert.Equal(t, "release Power with A off, B off", o)
				}
			})
		}
	}
}

// podsFunc is a controller.Pods that calls f at every release.
type podsFunc func(flow.Release)

func (f podsFunc) Release(_ context.Context, _ string, r flow.Release) error { f(r); return nil }
func (f podsFunc) Restore(context.Context, string) error                     { return nil }
