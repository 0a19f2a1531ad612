package policy

import (
	"context"
	"fmt"
	"testing"
)

var sink Decision

// bigCluster is n nodes, 3 of them control-plane, u unresponsive; the
// candidate is node-0 (control-plane, unresponsive).
func bigCluster(n, u int) Cluster {
	ns := make([]Node, n)
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("node-%d", i), ControlPlane: i < 3, Unresponsive: i < u,
			Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}}
	}
	return Cluster{Now: t0, Nodes: ns}
}

// BenchmarkDefault asks All(Default) about one fencing in a cluster of
// 10,000 nodes: admitted (every gate scans the nodes), refused by the storm
// guard (the first gate; builds its reason), and refused by max-in-flight
// (after a full storm-guard scan; builds the reason with node names). The
// goal is no allocation on the admit path, which the controller takes at
// every pass.
func BenchmarkDefault(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		cl   func() Cluster
	}{
		{"nodes=10000/admitted", func() Cluster { return bigCluster(10000, 1) }},
		{"nodes=10000/refused=storm-guard", func() Cluster { return bigCluster(10000, 6000) }},
		{"nodes=10000/refused=max-in-flight", func() Cluster {
			cl := bigCluster(10000, 2)
			cl.Nodes[1].Fencing = true
			return cl
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := Default()
			cl := bc.cl()
			c := Candidate{Node: cl.Nodes[0], Step: "isolation"}
			b.ReportAllocs()
			for b.Loop() {
				sink = g.Admit(ctx, c, cl)
			}
		})
	}
}

// The admit path allocates nothing: checked here as well as reported by
// the benchmark, so that a regression fails the tests.
func TestDefaultAdmitAllocates(t *testing.T) {
	g := Logged(Default(), nil)
	cl := bigCluster(1000, 1)
	c := Candidate{Node: cl.Nodes[0], Step: "isolation"}
	allocs := testing.AllocsPerRun(100, func() { sink = g.Admit(context.Background(), c, cl) })
	if !sink.Admit {
		t.Fatalf("not admitted: %s", sink)
	}
	if allocs != 0 {
		t.Errorf("admit path: %v allocations, want 0", allocs)
	}
}
