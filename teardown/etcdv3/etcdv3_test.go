package etcdv3_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/fencekit/fencekit/internal/etcdtest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/etcdv3"
)

// memberByName finds a member in a list.
func memberByName(t *testing.T, ms []teardown.Member, name string) teardown.Member {
	t.Helper()
	i := slices.IndexFunc(ms, func(m teardown.Member) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, "no member %s in %v", name, ms)
	return ms[i]
}

func names(ms []teardown.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

// executor runs the etcd steps over the adapter with short intervals.
func executor(cl *etcdv3.Cluster) *teardown.Executor {
	return &teardown.Executor{
		Etcd:            map[string]teardown.Etcd{"kubernetes": cl},
		EtcdPoll:        100 * time.Millisecond,
		EtcdCallTimeout: time.Second,
	}
}

// etcdPlan is a plan of the etcd steps for a node.
func etcdPlan(node string, removeTimeout, readyTimeout time.Duration) *teardown.Plan {
	return &teardown.Plan{Node: node, Steps: []teardown.Step{
		{Kind: teardown.StepRemoveEtcd, Timeout: removeTimeout, StopsPlan: true},
		{Kind: teardown.StepEtcdReady, Timeout: readyTimeout, StopsPlan: true},
	}}
}

func TestMembersAndHealth(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	cl := open(t, c)
	ctx := t.Context()

	ms, err := cl.Members(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"etcd-1", "etcd-2", "etcd-3"}, names(ms))
	for _, tm := range c.Members {
		m := memberByName(t, ms, tm.Name())
		assert.Equal(t, []string{tm.PeerURL()}, m.PeerURLs)
		assert.Equal(t, []string{tm.ClientURL()}, m.ClientURLs)
		assert.False(t, m.IsLearner)
		assert.NotZero(t, m.ID)
		require.NoError(t, cl.MemberHealth(ctx, m), tm.Name())
	}

	err = cl.MemberHealth(ctx, teardown.Member{ID: 0x99, Name: "etcd-9"})
	assert.ErrorContains(t, err, "etcd-9 (id 99): not started")

	err = cl.RemoveMember(ctx, 0xdead)
	assert.ErrorIs(t, err, teardown.ErrMemberNotFound)

	// An alarm anywhere makes a member unhealthy, as etcdctl endpoint
	// health says.
	e1 := memberByName(t, ms, "etcd-1")
	srv := c.Members[0].Etcd().Server
	_, err = srv.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: e1.ID, Alarm: pb.AlarmType_NOSPACE})
	require.NoError(t, err)
	err = cl.MemberHealth(ctx, memberByName(t, ms, "etcd-2"))
	assert.ErrorContains(t, err, "alarm NOSPACE raised on member")
	_, err = srv.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, MemberID: e1.ID, Alarm: pb.AlarmType_NOSPACE})
	require.NoError(t, err)
	require.NoError(t, cl.MemberHealth(ctx, memberByName(t, ms, "etcd-2")))

	// A stopped member is unhealthy, within the caller's deadline.
	c.Members[1].Stop()
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	err = cl.MemberHealth(hctx, memberByName(t, ms, "etcd-2"))
	assert.ErrorContains(t, err, "etcd-2 (id ")
	assert.Less(t, time.Since(start), 3*time.Second)
	_, err = cl.Members(ctx)
	require.NoError(t, err, "the others still answer")
}

// The remove-etcd and etcd-ready steps over a real cluster: the member is
// removed (after etcd's own check lets it: peers connected for 5 s), its
// server stops, the two others are healthy; a rerun finds it gone.
func TestTeardownRemovesMember(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	cl := open(t, c)
	ctx := t.Context()
	x := executor(cl)
	plan := etcdPlan("etcd-3", 30*time.Second, 10*time.Second)

	rep := x.Run(ctx, plan)
	require.NoError(t, rep.Err())
	assert.Equal(t, teardown.Done, rep.Steps[0].Outcome, rep.Steps[0].Message)
	assert.Contains(t, rep.Steps[0].Message, "removed kubernetes/etcd-3")
	assert.Equal(t, teardown.Done, rep.Steps[1].Outcome)
	assert.Equal(t, "healthy members, not counting node etcd-3: kubernetes 2/2", rep.Steps[1].Message)
	require.Len(t, rep.Steps[1].Details, 2)
	for _, d := range rep.Steps[1].Details {
		assert.Equal(t, "Healthy", d.Message, d.Name)
	}
	removed(t, c.Members[2])

	ms, err := cl.Members(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"etcd-1", "etcd-2"}, names(ms))

	rep = x.Run(ctx, plan)
	require.NoError(t, rep.Err())
	assert.Equal(t, teardown.Skipped, rep.Steps[0].Outcome)
	assert.Equal(t, "no etcd member on node etcd-3 in kubernetes", rep.Steps[0].Message)
	assert.Equal(t, teardown.Done, rep.Steps[1].Outcome)
}

// With one member down, removing another would leave one healthy member
// of two: the step refuses, and so does etcd itself when asked directly.
// etcd-ready times out while the member is down.
func TestTeardownRefusesToBreakQuorum(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	cl := open(t, c)
	ctx := t.Context()
	ms, err := cl.Members(ctx)
	require.NoError(t, err)
	e1 := memberByName(t, ms, "etcd-1")
	c.Members[1].Stop()
	require.Eventually(t, func() bool { // a leader again, if etcd-2 was it
		return cl.MemberHealth(ctx, e1) == nil
	}, 10*time.Second, 20*time.Millisecond)

	x := executor(cl)
	rep := x.Run(ctx, etcdPlan("etcd-3", 2*time.Second, time.Second))
	err = rep.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, teardown.ErrQuorum)
	assert.Equal(t, teardown.ReasonRemoveEtcdError, teardown.ReasonOf(err))
	assert.Contains(t, err.Error(), "3 voting members, 2 after the removal, 1 of them healthy (2 needed)")
	assert.Equal(t, teardown.NotRun, rep.Steps[1].Outcome)

	ms, err = cl.Members(ctx)
	require.NoError(t, err)
	assert.Len(t, ms, 3, "nothing removed")

	err = cl.RemoveMember(ctx, memberByName(t, ms, "etcd-3").ID)
	require.Error(t, err, "etcd's strict reconfiguration check")
	assert.False(t, errors.Is(err, teardown.ErrMemberNotFound))
	ms, err = cl.Members(ctx)
	require.NoError(t, err)
	assert.Len(t, ms, 3)

	plan := etcdPlan("etcd-3", time.Second, 2*time.Second)
	plan.Steps = plan.Steps[1:]
	rep = x.Run(ctx, plan)
	err = rep.Err()
	require.ErrorIs(t, err, teardown.ErrNotConfirmed)
	assert.Equal(t, teardown.ReasonEtcdNotAccessible, teardown.ReasonOf(err))
	assert.Contains(t, err.Error(), "cluster kubernetes: 1 of 2 members healthy (2 needed), 1 of 2 voting members")
}

// etcd-ready polls until a member that was down is back.
func TestEtcdReadyWaitsForMember(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	cl := open(t, c)
	c.Members[1].Stop()

	x := executor(cl)
	sleeps := 0
	x.Sleep = func(ctx context.Context, d time.Duration) error {
		sleeps++
		if sleeps == 2 {
			require.NoError(t, c.Members[1].Restart()) // back after two failed checks
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	plan := etcdPlan("etcd-3", time.Second, 20*time.Second)
	plan.Steps = plan.Steps[1:]
	rep := x.Run(t.Context(), plan)
	require.NoError(t, rep.Err())
	assert.GreaterOrEqual(t, sleeps, 2)
	assert.Equal(t, "healthy members, not counting node etcd-3: kubernetes 2/2", rep.Steps[0].Message)
}
