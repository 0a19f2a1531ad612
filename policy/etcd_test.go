package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/policy"
)

// The quorum arithmetic: the healthy voting members not on the node must
// be a quorum of all the voting members.
func TestEtcdQuorumArithmetic(t *testing.T) {
	m := func(name string, onNode, healthy bool) policy.EtcdMember {
		return policy.EtcdMember{Name: name, OnNode: onNode, Healthy: healthy}
	}
	learner := func(name string, onNode, healthy bool) policy.EtcdMember {
		e := m(name, onNode, healthy)
		e.Learner = true
		return e
	}
	for _, tc := range []struct {
		name    string
		members []policy.EtcdMember
		admit   bool
		reason  string
	}{
		{"three healthy", []policy.EtcdMember{m("a", true, true), m("b", false, true), m("c", false, true)}, true, ""},
		{"three, another down", []policy.EtcdMember{m("a", true, true), m("b", false, true), m("c", false, false)}, false,
			"leave 1 of 3 voting members healthy, under the quorum of 2 (c: unhealthy)"},
		{"three, its own down", []policy.EtcdMember{m("a", true, false), m("b", false, true), m("c", false, false)}, true, ""},
		{"two healthy", []policy.EtcdMember{m("a", true, true), m("b", false, true)}, false, "leave 1 of 2 voting members healthy, under the quorum of 2"},
		{"one, its own", []policy.EtcdMember{m("a", true, true)}, false, "leave 0 of 1 voting members healthy, under the quorum of 1"},
		{"five, two down", []policy.EtcdMember{m("a", true, true), m("b", false, true), m("c", false, true), m("d", false, false), m("e", false, false)}, false,
			"leave 2 of 5 voting members healthy, under the quorum of 3"},
		{"five, one down", []policy.EtcdMember{m("a", true, true), m("b", false, true), m("c", false, true), m("d", false, true), m("e", false, false)}, true, ""},
		{"a learner on the node", []policy.EtcdMember{learner("l", true, true), m("b", false, true), m("c", false, false)}, true, ""},
		{"learners do not vote", []policy.EtcdMember{m("a", true, true), m("b", false, true), m("c", false, false), learner("l", false, true)}, false,
			"leave 1 of 3 voting members healthy"},
		{"no member on the node", []policy.EtcdMember{m("b", false, true), m("c", false, false)}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := policy.EtcdQuorum(func(context.Context, string) ([]policy.EtcdMember, error) { return tc.members, nil })
			d := g.Admit(context.Background(), policy.Candidate{Node: policy.Node{Name: "cp-1", ControlPlane: true}}, policy.Cluster{})
			assert.Equal(t, tc.admit, d.Admit, "%+v", d)
			if !tc.admit {
				assert.Equal(t, policy.GateEtcdQuorum, d.Gate)
				assert.Contains(t, d.Reason, tc.reason)
				assert.Positive(t, d.RetryAfter)
			}
		})
	}
}

// Members that cannot be read refuse a control-plane node, and are not
// asked for a worker.
func TestEtcdQuorumUnknown(t *testing.T) {
	asked := 0
	g := policy.EtcdQuorum(func(context.Context, string) ([]policy.EtcdMember, error) {
		asked++
		return nil, errors.New("context deadline exceeded")
	})
	d := g.Admit(context.Background(), policy.Candidate{Node: policy.Node{Name: "cp-1", ControlPlane: true}}, policy.Cluster{})
	assert.False(t, d.Admit)
	assert.Contains(t, d.Reason, "the etcd members cannot be read, so fencing control-plane node cp-1 could break etcd's quorum: context deadline exceeded")
	d = g.Admit(context.Background(), policy.Candidate{Node: policy.Node{Name: "w-1"}}, policy.Cluster{Nodes: []policy.Node{{Name: "w-1"}}})
	assert.True(t, d.Admit)
	assert.Equal(t, 1, asked, "a worker is admitted without a look")
}
