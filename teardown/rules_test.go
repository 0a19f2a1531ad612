package teardown_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

func TestMemberOnNode(t *testing.T) {
	addrs := []string{"10.0.0.3", "fd00::3", "node-3.rack1.example.com"}
	tests := []struct {
		name string
		m    teardown.Member
		want bool
	}{
		{"by name", teardown.Member{Name: "node-3"}, true},
		{"other name", teardown.Member{Name: "node-30", PeerURLs: []string{"https://10.0.0.30:2380"}}, false},
		{"by peer IP", teardown.Member{Name: "etcd-c", PeerURLs: []string{"https://10.0.0.3:2380"}}, true},
		{"by client IP", teardown.Member{Name: "etcd-c", ClientURLs: []string{"http://10.0.0.9:2379", "https://10.0.0.3:2379"}}, true},
		{"by IPv6", teardown.Member{PeerURLs: []string{"https://[fd00:0:0:0::3]:2380"}}, true},
		{"by mapped IPv4", teardown.Member{PeerURLs: []string{"https://[::ffff:10.0.0.3]:2380"}}, true},
		{"by host name", teardown.Member{PeerURLs: []string{"https://NODE-3:2380"}}, true},
		{"by fqdn with a dot", teardown.Member{PeerURLs: []string{"https://node-3.rack1.example.com.:2380"}}, true},
		{"not started", teardown.Member{PeerURLs: []string{"https://10.0.0.3:2380"}}, true},
		{"prefix is not a match", teardown.Member{PeerURLs: []string{"https://10.0.0.33:2380"}}, false},
		{"name is not an IP", teardown.Member{PeerURLs: []string{"https://node-3.rack2.example.com:2380"}}, false},
		{"unix socket", teardown.Member{ClientURLs: []string{"unix:///run/etcd.sock"}}, false},
		{"garbage", teardown.Member{PeerURLs: []string{"://%zz"}}, false},
		{"empty", teardown.Member{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, teardown.MemberOnNode(tt.m, "node-3", addrs))
		})
	}
}

func TestCheckQuorum(t *testing.T) {
	// members 1..n; on lists the IDs on the node, down the unhealthy ones;
	// learners the learners.
	type tc struct {
		name                      string
		n                         int
		remove                    uint64
		on, down, learners        []uint64
		voters, remaining, health int
		ok                        bool
	}
	tests := []tc{
		{"3 healthy", 3, 3, []uint64{3}, nil, nil, 3, 2, 2, true},
		{"3, another down", 3, 3, []uint64{3}, []uint64{2}, nil, 3, 2, 1, false},
		{"3, the removed one down", 3, 3, []uint64{3}, []uint64{3}, nil, 3, 2, 2, true},
		{"5, two others down", 5, 5, []uint64{5}, []uint64{1, 2}, nil, 5, 4, 2, false},
		{"5, one other down", 5, 5, []uint64{5}, []uint64{1}, nil, 5, 4, 3, true},
		{"two on the node: the other is not counted", 5, 5, []uint64{4, 5}, []uint64{1}, nil, 5, 4, 2, false},
		{"last member", 1, 1, []uint64{1}, nil, nil, 1, 0, 0, false},
		{"2 members", 2, 2, []uint64{2}, nil, nil, 2, 1, 1, true},
		{"learners do not vote", 3, 3, []uint64{3}, []uint64{1}, []uint64{2}, 2, 1, 0, false},
		{"a healthy learner does not help", 4, 4, []uint64{4}, []uint64{1}, []uint64{3}, 3, 2, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []teardown.Member
			for i := 1; i <= tt.n; i++ {
				id := uint64(i)
				members = append(members, teardown.Member{ID: id, IsLearner: contains(tt.learners, id)})
			}
			q := teardown.CheckQuorum(members, tt.remove,
				func(m teardown.Member) bool { return contains(tt.on, m.ID) },
				func(m teardown.Member) bool { return !contains(tt.down, m.ID) })
			assert.Equal(t, teardown.Quorum{Voters: tt.voters, Remaining: tt.remaining, Healthy: tt.health}, q)
			assert.Equal(t, tt.ok, q.OK(), q.String())
		})
	}
	assert.Equal(t, "5 voting members, 4 after the removal, 2 of them healthy (3 needed)",
		teardown.Quorum{Voters: 5, Remaining: 4, Healthy: 2}.String())
}

func contains(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestLabels(t *testing.T) {
	labels := map[string]string{
		"kubernetes.io/hostname":                                  "node-3",
		"kubernetes.io/os":                                        "linux",
		"kubernetes.io/arch":                                      "amd64",
		"beta.kubernetes.io/instance-type":                        "m1",
		"node.kubernetes.io/instance-type":                        "m1",
		"topology.kubernetes.io/zone":                             "z",
		"failure-domain.beta.kubernetes.io/region":                "r",
		"node-role.kubernetes.io/control-plane":                   "",
		"node.kubernetes.io/exclude-from-external-load-balancers": "",
		"calico-etcd":                                             "enabled",
		teardown.DecommissionLabel:                                teardown.DecommissionValue,
	}
	assert.Equal(t, []string{"calico-etcd", "node-role.kubernetes.io/control-plane", "node.kubernetes.io/exclude-from-external-load-balancers"},
		teardown.ClearableLabels(labels, nil))
	assert.Equal(t, []string{"calico-etcd", "node-role.kubernetes.io/control-plane", "node.kubernetes.io/exclude-from-external-load-balancers"},
		teardown.LeftoverLabels(labels, nil))
	assert.Equal(t, []string{"calico-etcd", teardown.DecommissionLabel},
		teardown.ClearableLabels(labels, []string{teardown.DecommissionLabel, "calico-etcd", "calico-etcd", "absent"}))
	assert.Equal(t, []string{"calico-etcd"},
		teardown.LeftoverLabels(labels, []string{teardown.DecommissionLabel, "calico-etcd"}), "enabled is allowed")

	cleared := map[string]string{"kubernetes.io/hostname": "node-3", teardown.DecommissionLabel: teardown.DecommissionValue}
	assert.Empty(t, teardown.ClearableLabels(cleared, nil))
	assert.Empty(t, teardown.LeftoverLabels(cleared, nil))
	cleared[teardown.DecommissionLabel] = "disabled"
	assert.Empty(t, teardown.ClearableLabels(cleared, nil), "clear-labels leaves it to shutdown-kubelet")
	assert.Equal(t, []string{teardown.DecommissionLabel}, teardown.LeftoverLabels(cleared, nil))
	assert.Equal(t, []string{teardown.DecommissionLabel}, teardown.LeftoverLabels(cleared, []string{"x"}))

	for k, want := range map[string]bool{
		"kubernetes.io/hostname": true, "beta.kubernetes.io/arch": true, "topology.kubernetes.io/region": true,
		"kubernetes.io/role": false, "node-role.kubernetes.io/worker": false, "topology.example.com/zone": false,
	} {
		assert.Equal(t, want, teardown.KubeletLabel(k), k)
	}
}

func TestStatusOf(t *testing.T) {
	st := teardown.StatusOf(nil)
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, "Success", st.Status)
	assert.NotNil(t, st.Details.MessageList)

	st = teardown.StatusOf(errors.New("boom"))
	assert.Equal(t, 500, st.Code)
	assert.Equal(t, teardown.ReasonInternalError, st.Reason)
	assert.Equal(t, 1, st.Details.ErrorCount)

	wrapped := fmt.Errorf("calling: %w", &teardown.Error{Node: "n", Field: "node", Reason: teardown.ReasonNotFound, Err: teardown.ErrNodeNotFound})
	st = teardown.StatusOf(wrapped)
	assert.Equal(t, 404, st.Code)
	assert.Equal(t, "calling: teardown: node n, field node: node not found", st.Message)

	assert.Equal(t, teardown.ReasonSuccess, teardown.ReasonOf(nil))
	assert.Equal(t, teardown.ReasonInternalError, teardown.ReasonOf(errors.New("x")))
	for r, code := range map[teardown.Reason]int{
		teardown.ReasonSuccess: 200, teardown.ReasonBadRequest: 400, teardown.ReasonNotFound: 404, teardown.ReasonConflict: 409,
		teardown.ReasonPreconditionFailed: 412, teardown.ReasonDeleteNodeError: 500, teardown.ReasonDisassociateStepFailure: 500,
	} {
		assert.Equal(t, code, r.Code(), r)
	}
	assert.Equal(t, "teardown: Conflict", (&teardown.Error{Reason: teardown.ReasonConflict}).Error())
}

func TestEtcdHealthStatus(t *testing.T) {
	good := teardowntest.NewEtcd(teardown.Member{ID: 1, Name: "a"}, teardown.Member{ID: 2})
	good.SetHealth(2, errors.New("no leader"))
	bad := teardowntest.NewEtcd()
	bad.Hook = func(string, uint64) error { return errors.New("connection refused") }
	x := &teardown.Executor{Etcd: map[string]teardown.Etcd{"kubernetes": good}}

	st := x.EtcdHealth(t.Context())
	assert.Equal(t, 200, st.Code, "unhealthy is still a 200")
	require.Len(t, st.Details.MessageList, 2)
	assert.Equal(t, teardown.Message{Message: "Healthy", Kind: "HealthMessage", Name: "kubernetes/a"}, st.Details.MessageList[0])
	assert.Equal(t, teardown.Message{Message: "Unhealthy: no leader", Kind: "HealthMessage", Name: "kubernetes/2"}, st.Details.MessageList[1])

	x.Etcd["calico"] = bad
	st = x.EtcdHealth(t.Context())
	assert.Equal(t, 500, st.Code)
	assert.Equal(t, teardown.ReasonEtcdNotAccessible, st.Reason)
	assert.Equal(t, 1, st.Details.ErrorCount)
	assert.Equal(t, "Unable to access Etcd: connection refused", st.Details.MessageList[0].Message)
}
