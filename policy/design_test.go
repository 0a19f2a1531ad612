package policy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Tests tied to the sentences of the Kubernetes node-fencing design (the
// "Node fencing" proposal of kubernetes/community), section "Cluster fence
// policies".

// "Management system network failure - if the management system has
// connectivity issues, it might cause it to identify that nodes are
// unresponsive, while the issue is with the management system itself."
// "Skip fencing if select % of hosts in cluster is non-responsive (will
// help for issue #2 above)": with the defaults, every node looking silent
// is a storm, and no node is fenced, whichever asks first.
func TestDesignManagementNetworkFailure(t *testing.T) {
	g := Default()
	cl := Cluster{Now: t0, Nodes: nodes(12, 12)}
	for _, n := range cl.Nodes {
		d := g.Admit(context.Background(), Candidate{Node: n, Step: "isolation"}, cl)
		assert.False(t, d.Admit, n.Name)
		assert.Equal(t, "refused by storm-guard: 12 of 12 nodes unresponsive (100%), over the limit of 50%; fencing resumes 5m0s after the storm ends", d.String())
	}
}

// "Switch failure - a switch used to connect a few nodes to the
// environment is failing ... the nodes will be reported as unresponsive,
// while they are still alive." A rack of 8 of 40 nodes (20 %) is under the
// default share, so the defaults alone do not see a storm; they fence one
// node at a time (max-in-flight), which bounds the harm. A count bound
// (the design's "select %" for a rack) refuses all of them.
func TestDesignSwitchFailure(t *testing.T) {
	cl := Cluster{Now: t0, Nodes: nodes(40, 8)}
	fence := func(g Gate) (admitted int) {
		for i := range 8 {
			d := g.Admit(context.Background(), Candidate{Node: cl.Nodes[i], Step: "isolation"}, cl)
			if d.Admit {
				admitted++
				cl.Nodes[i].Fencing = true
			}
		}
		return admitted
	}
	assert.Equal(t, 1, fence(Default()))

	cl = Cluster{Now: t0, Nodes: nodes(40, 8)}
	c := DefaultConfig()
	c.StormGuard.MaxUnresponsive = 3
	g, err := c.Gate()
	assert.NoError(t, err)
	assert.Equal(t, 0, fence(g))
}

// "Fencing storm is a situation in which fencing for a few nodes in the
// cluster is triggered at the same time, due to an environmental issue."
// A refusal is not a verdict: when the storm is over and the cooldown has
// passed, the same candidates are admitted again (one at a time).
func TestDesignStormRefusalIsReevaluated(t *testing.T) {
	g := Default()
	storm := Cluster{Now: t0, Nodes: nodes(10, 7)}
	assert.False(t, g.Admit(context.Background(), candidate, storm).Admit)

	// The environment recovers except node-0, which really died.
	after := Cluster{Now: t0.Add(DefaultStormCooldown), Nodes: nodes(10, 1)}
	assert.True(t, g.Admit(context.Background(), candidate, after).Admit)
}
