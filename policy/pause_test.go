package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPaused(t *testing.T) {
	ctx := context.Background()
	var ps []Pause
	var err error
	g := Paused(func(context.Context) ([]Pause, error) { return ps, err })
	cl := Cluster{Now: t0, Nodes: nodes(3, 1)}
	assert.True(t, g.Admit(ctx, candidate, cl).Admit, "no request")

	ps = []Pause{
		{Name: "window", By: "bob", Reason: "maintenance window", Since: t0.Add(-time.Hour)},
		{Name: "upgrade", By: "alice", Reason: "rack 3 switch upgrade", Since: t0.Add(-time.Minute)},
	}
	d := g.Admit(ctx, candidate, cl)
	assert.False(t, d.Admit)
	assert.Equal(t, GatePause, d.Gate)
	assert.Equal(t, "fencing paused by alice (request upgrade, since 2024-05-01 11:59:00): rack 3 switch upgrade (and 1 more request)", d.Reason)

	ps = []Pause{{Name: "x"}}
	assert.Equal(t, "fencing paused by an unnamed user (request x): no reason given", g.Admit(ctx, candidate, cl).Reason)

	ps, err = nil, errors.New("configmaps is forbidden")
	d = g.Admit(ctx, candidate, cl)
	assert.False(t, d.Admit, "a pause that cannot be read may be in force")
	assert.Contains(t, d.Reason, "configmaps is forbidden")
}

func TestExcluded(t *testing.T) {
	ctx := context.Background()
	n := Node{Name: "w3", Labels: map[string]string{ExcludeLabel: "true"}}
	d := Excluded{}.Admit(ctx, Candidate{Node: n}, Cluster{Nodes: []Node{n}})
	assert.False(t, d.Admit)
	assert.Equal(t, GateExcluded, d.Gate)
	assert.Equal(t, "node w3 carries the label fencekit.io/exclude-from-fencing=true: excluded from fencing (remove the label to allow it)", d.Reason)

	n.Labels = map[string]string{MedikExcludeLabel: ""}
	assert.False(t, Excluded{}.Admit(ctx, Candidate{Node: n}, Cluster{}).Admit, "Node Health Check's label, any value")
	n.Labels = map[string]string{ExcludeLabel: "false"}
	assert.True(t, Excluded{}.Admit(ctx, Candidate{Node: n}, Cluster{}).Admit, "=false does not exclude")
	n.Labels = nil
	assert.True(t, Excluded{}.Admit(ctx, Candidate{Node: n}, Cluster{Nodes: []Node{{Name: "w3"}}}).Admit)
	// The candidate's labels may be in its entry of the view only.
	entry := Node{Name: "w3", Labels: map[string]string{"example.com/keep": "yes"}}
	assert.False(t, Excluded{Labels: []string{"example.com/keep"}}.Admit(ctx, Candidate{Node: Node{Name: "w3"}}, Cluster{Nodes: []Node{entry}}).Admit)
}

func TestDetectOnly(t *testing.T) {
	ctx := context.Background()
	g := All(&StormGuard{MaxUnresponsivePercent: 50}, DetectOnly())
	d := g.Admit(ctx, Candidate{Node: Node{Name: "node-0"}, Step: "power_management"}, Cluster{Now: t0, Nodes: nodes(4, 1)})
	assert.False(t, d.Admit)
	assert.Equal(t, GateDetectOnly, d.Gate)
	assert.Equal(t, "detect-only mode: power_management of node node-0 would start now; no device is switched and no pod released", d.Reason)
	d = g.Admit(ctx, Candidate{Node: Node{Name: "node-0"}, Step: "power_management"}, Cluster{Now: t0, Nodes: nodes(4, 3)})
	assert.Equal(t, GateStormGuard, d.Gate, "what the other gates say comes first")
}
