package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// racks returns nodes in racks of size each (rack-0, rack-1, ...), with
// down[r] nodes of rack r unresponsive (its first ones).
func racks(size int, down ...int) []Node {
	var out []Node
	for r, d := range down {
		for i := range size {
			out = append(out, Node{Name: fmt.Sprintf("r%d-n%d", r, i),
				Labels:       map[string]string{DefaultZoneLabel: fmt.Sprintf("rack-%d", r)},
				Unresponsive: i < d})
		}
	}
	return out
}

// A rack of 40 of a 400-node cluster loses its switch: 10 % of the
// cluster, far below the cluster-wide bound, but all of its rack. The
// cluster-wide guard admits, the zone guard refuses in that rack only,
// and keeps refusing there for its cooldown after the rack is back.
func TestZoneStormGuard(t *testing.T) {
	ctx := context.Background()
	g, err := DefaultConfig().Gate()
	if err != nil {
		t.Fatal(err)
	}
	down := make([]int, 10)
	down[3] = 40
	down[5] = 1
	cl := Cluster{Now: t0, Nodes: racks(40, down...)}
	at := func(name string) Candidate {
		for _, n := range cl.Nodes {
			if n.Name == name {
				return Candidate{Node: n, Step: "isolation"}
			}
		}
		t.Fatalf("no node %s", name)
		return Candidate{}
	}

	d := g.Admit(ctx, at("r3-n0"), cl)
	assert.False(t, d.Admit)
	assert.Equal(t, GateZoneStormGuard, d.Gate)
	assert.Equal(t, "40 of 40 nodes of topology.kubernetes.io/zone=rack-3 unresponsive (100%), over the limit of 55%; fencing in it resumes 5m0s after the storm ends", d.Reason)
	assert.Equal(t, 5*time.Minute, d.RetryAfter)
	assert.True(t, g.Admit(ctx, at("r5-n0"), cl).Admit, "one node of another rack is fenced")

	// The rack comes back but one node: refused there for the cooldown.
	down[3] = 1
	cl = Cluster{Now: t0.Add(time.Minute), Nodes: racks(40, down...)}
	d = g.Admit(ctx, at("r3-n0"), cl)
	assert.False(t, d.Admit)
	assert.Equal(t, "storm in topology.kubernetes.io/zone=rack-3 last seen at 12:00:00 (40 of 40 nodes unresponsive), cooling down until 12:05:00; now 1 of 40 unresponsive", d.Reason)
	assert.Equal(t, 4*time.Minute, d.RetryAfter)
	assert.True(t, g.Admit(ctx, at("r5-n0"), cl).Admit)
	cl.Now = t0.Add(5 * time.Minute)
	assert.True(t, g.Admit(ctx, at("r3-n0"), cl).Admit, "admitted once the cooldown has passed")
}

func TestZoneStormGuardBounds(t *testing.T) {
	ctx := context.Background()
	g := &ZoneStormGuard{MaxUnresponsivePercent: 55, MinUnresponsive: 3}
	cand := func(nodes []Node) Candidate { return Candidate{Node: nodes[0]} }

	// Two of a two-node rack: 100 %, but fewer than three: no storm.
	n := racks(2, 2)
	assert.True(t, g.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit)
	// Three of five (60 %): a storm; two of five (40 %): none.
	n = racks(5, 3)
	assert.False(t, g.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit)
	n = racks(5, 2)
	g = &ZoneStormGuard{MaxUnresponsivePercent: 55, MinUnresponsive: 1}
	assert.True(t, g.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit)
	// The candidate counts as unresponsive whatever its entry says.
	n = racks(4, 2)
	n[0].Unresponsive = false
	assert.True(t, g.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit, "2 of 4 is 50 %")
	n[3].Unresponsive = true
	assert.False(t, g.Admit(ctx, Candidate{Node: n[0]}, Cluster{Now: t0, Nodes: n}).Admit, "3 of 4 with the candidate")

	// A node without the label is in no zone; another label names racks.
	n = racks(3, 3)
	plain := Node{Name: "plain"}
	assert.True(t, g.Admit(ctx, Candidate{Node: plain}, Cluster{Now: t0, Nodes: append(n, plain)}).Admit)
	custom := &ZoneStormGuard{Label: "example.com/rack", MaxUnresponsivePercent: 55}
	assert.True(t, custom.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit, "the zone label is not example.com/rack")
	for i := range n {
		n[i].Labels = map[string]string{"example.com/rack": "r1"}
	}
	d := custom.Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n})
	assert.False(t, d.Admit)
	assert.Contains(t, d.Reason, "3 of 3 nodes of example.com/rack=r1 unresponsive")
	// Off.
	assert.True(t, (&ZoneStormGuard{}).Admit(ctx, cand(n), Cluster{Now: t0, Nodes: n}).Admit)
	// A cooldown without a time is refused.
	d = (&ZoneStormGuard{Label: "example.com/rack", MaxUnresponsivePercent: 55, Cooldown: time.Minute}).Admit(ctx, Candidate{Node: n[0]}, Cluster{Nodes: n})
	assert.False(t, d.Admit)
}
