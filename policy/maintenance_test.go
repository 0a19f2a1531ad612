package policy

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A node under maintenance is refused, naming what makes it so: a
// NodeMaintenance (on by default), a cordon, a label; another node is
// admitted; a source that cannot be read refuses.
func TestUnderMaintenance(t *testing.T) {
	src := func(context.Context) ([]Maintenance, error) {
		return []Maintenance{{Node: "w1", Name: "nm-w1", Reason: "firmware upgrade, CHG-42"}}, nil
	}
	cl := Cluster{Nodes: []Node{
		{Name: "w1"}, {Name: "w2", Unschedulable: true}, {Name: "w3", Labels: map[string]string{"example.com/upgrading": "true"}}, {Name: "w4"},
	}}
	ask := func(g Gate, node string) Decision {
		return g.Admit(t.Context(), Candidate{Node: Node{Name: node, Unresponsive: true}}, cl)
	}

	def := UnderMaintenance(DefaultConfig().Maintenance, src)
	d := ask(def, "w1")
	assert.False(t, d.Admit)
	assert.Equal(t, GateMaintenance, d.Gate)
	assert.Equal(t, "node w1 is under maintenance (NodeMaintenance nm-w1): firmware upgrade, CHG-42 (delete it when the work is done)", d.Reason)
	for _, n := range []string{"w2", "w3", "w4"} {
		assert.True(t, ask(def, n).Admit, "%s: by default only a NodeMaintenance counts", n)
	}

	all := UnderMaintenance(MaintenanceConfig{NodeMaintenance: true, Cordoned: true, Labels: map[string]string{"example.com/upgrading": ""}}, src)
	assert.Contains(t, ask(all, "w2").Reason, "node w2 is cordoned (unschedulable)")
	assert.Equal(t, "node w3 carries the label example.com/upgrading=true: under maintenance", ask(all, "w3").Reason)
	assert.True(t, ask(all, "w4").Admit)
	wrongValue := UnderMaintenance(MaintenanceConfig{Labels: map[string]string{"example.com/upgrading": "false"}}, nil)
	assert.True(t, ask(wrongValue, "w3").Admit, "another value")

	broken := UnderMaintenance(DefaultConfig().Maintenance, func(context.Context) ([]Maintenance, error) { return nil, errors.New("forbidden") })
	d = ask(broken, "w4")
	assert.False(t, d.Admit)
	assert.Contains(t, d.Reason, "the NodeMaintenance objects cannot be read, so node w4 may be under maintenance: forbidden")
	off := UnderMaintenance(MaintenanceConfig{}, func(context.Context) ([]Maintenance, error) { return nil, errors.New("forbidden") })
	assert.True(t, ask(off, "w1").Admit, "nodeMaintenance off: the source is not read")
}
