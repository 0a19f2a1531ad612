package etcdv3_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/internal/etcdtest"
	"github.com/fencekit/fencekit/policy"
	"github.com/fencekit/fencekit/teardown"
)

// The fencing gate policy.EtcdQuorum over a real three-member etcd
// (embedded, on loopback), each member on the control-plane node of its
// name. All healthy: any one may be fenced. etcd-2 stopped: fencing
// etcd-1 (healthy) would leave one of three, so it is refused with the
// arithmetic and the stopped member's problem; etcd-2 itself is fenced at
// once (its member already down). A learner that runs on a node does not
// vote: that node is admitted, and the quorum is still two of three.
// Without a quorum the members cannot be read, and every control-plane
// node is refused.
func TestEtcdQuorumGate(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	cl := open(t, c)
	ctx := t.Context()
	learnerAddr := "127.0.0.77"
	gate := policy.EtcdQuorum(teardown.EtcdMembersOf(cl, func(node string) []string {
		if node == "cp-learner" {
			return []string{learnerAddr}
		}
		return nil
	}, time.Second))
	admit := func(node string) policy.Decision {
		return gate.Admit(ctx, policy.Candidate{Node: policy.Node{Name: node, ControlPlane: true}}, policy.Cluster{})
	}
	for _, n := range []string{"etcd-1", "etcd-2", "etcd-3"} {
		assert.True(t, admit(n).Admit, "%s: all three healthy", n)
	}

	// A learner, added on a node whose member never starts: not a voter.
	cli, err := c.NewClient()
	require.NoError(t, err)
	defer cli.Close()
	// etcd's strict reconfiguration check lets a member in once the peers
	// have been connected for 5 s.
	require.Eventually(t, func() bool {
		_, err = cli.MemberAddAsLearner(ctx, []string{"http://" + learnerAddr + ":2380"})
		return err == nil
	}, 20*time.Second, 200*time.Millisecond, "adding the learner: %v", err)
	assert.True(t, admit("cp-learner").Admit, "a learner's node costs no quorum")

	c.Members[1].Stop()
	ms, err := cl.Members(ctx)
	require.NoError(t, err)
	e1 := memberByName(t, ms, "etcd-1")
	require.Eventually(t, func() bool { return cl.MemberHealth(ctx, e1) == nil }, 10*time.Second, 20*time.Millisecond,
		"a leader again, if etcd-2 was it")
	d := admit("etcd-1")
	require.False(t, d.Admit)
	assert.Equal(t, policy.GateEtcdQuorum, d.Gate)
	assert.Contains(t, d.Reason, "fencing node etcd-1 would take its healthy etcd member etcd-1 down and leave 1 of 3 voting members healthy, under the quorum of 2 (etcd-2: ")
	assert.True(t, admit("etcd-2").Admit, "its member is down already")
	assert.True(t, gate.Admit(ctx, policy.Candidate{Node: policy.Node{Name: "etcd-1"}}, policy.Cluster{Nodes: []policy.Node{{Name: "etcd-1"}}}).Admit,
		"not a control-plane node: not asked")

	c.Members[2].Stop()
	d = admit("etcd-1")
	require.False(t, d.Admit)
	assert.Contains(t, d.Reason, "the etcd members cannot be read, so fencing control-plane node etcd-1 could break etcd's quorum")
}

// Two voting members: neither may be fenced while both are healthy.
func TestEtcdQuorumGateTwoMembers(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 2)
	gate := policy.EtcdQuorum(teardown.EtcdMembersOf(open(t, c), nil, time.Second))
	for _, n := range []string{"etcd-1", "etcd-2"} {
		d := gate.Admit(t.Context(), policy.Candidate{Node: policy.Node{Name: n, ControlPlane: true}}, policy.Cluster{})
		require.False(t, d.Admit, n)
		assert.Contains(t, d.Reason, "leave 1 of 2 voting members healthy, under the quorum of 2")
	}
}
