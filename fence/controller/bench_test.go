package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// One pass over 10,000 nodes, 50 of them being fenced (their records
// waiting out the power delay) and 9,950 healthy: the cost of looking.
// The goal is at most 10 ms per pass and 2 KiB per tracked node.
func BenchmarkPass10000Nodes(b *testing.B) {
	const n, fencing = 10000, 50
	clk := newClock()
	h := &health{}
	store := controller.NewMemoryStore()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("node-%d", i)
		ready := i >= fencing
		h.nodes = append(h.nodes, controller.NodeHealth{Name: name, Ready: ready, Since: clk.Now().Add(-time.Hour),
			Labels: map[string]string{"kubernetes.io/hostname": name}})
		if !ready {
			_, err := store.Create(ctx, &flow.NodeFence{Node: name, Step: fence.StepIsolation, Status: flow.StatusDone,
				Isolated: true, Released: flow.ReleaseStorage, Changed: clk.Now()})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	c := &controller.Controller{Health: h, Store: store, Config: controller.StaticConfig{C: mustConfigB(b)},
		Gate: policy.GateFunc(func(context.Context, policy.Candidate, policy.Cluster) policy.Decision { return policy.Admitted() }),
		Now:  clk.Now, Options: controller.Options{MaxWorkers: 64}}
	// What the controller keeps between passes, per node: measured around
	// its first pass.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := c.Pass(ctx); err != nil {
		b.Fatal(err)
	}
	c.Wait()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	retained := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / n
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := c.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		c.Wait()
	}
	b.ReportMetric(retained, "kept-B/node")
	runtime.KeepAlive(c)
}

func mustConfigB(b *testing.B) *config.Config {
	cfg, err := config.Parse(configMaps("bench", 1, false))
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// From "not ready for UnhealthyAfter" to "pods released": one pass with
// a fake clock and fake devices that switch at once, so the time measured
// is what the controller adds to the device time (store writes, the gate,
// opening the method, the engine).
func BenchmarkNotReadyToPodsReleased(b *testing.B) {
	clk := newClock()
	ctx := context.Background()
	cfg := mustConfigB(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fake.NewNamed("bench-fc", fake.Options{})
		h := &health{}
		for i := range 100 {
			h.set(fmt.Sprintf("node-%d", i+1), true, clk.Now().Add(-time.Hour))
		}
		h.set("node-1", false, clk.Now().Add(-time.Minute))
		p := &pods{}
		c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
			Pods: p, Now: clk.Now, Gate: policy.GateFunc(func(context.Context, policy.Candidate, policy.Cluster) policy.Decision {
				return policy.Admitted()
			})}
		b.StartTimer()
		if err := c.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		c.Wait()
		b.StopTimer()
		if p.state("node-1") != flow.ReleaseStorage {
			b.Fatal("pods not released")
		}
		b.StartTimer()
	}
}
