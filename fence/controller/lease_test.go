package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// renew sets node's lease renewal time.
func (h *health) renew(name string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.nodes {
		if h.nodes[i].Name == name {
			h.nodes[i].LeaseRenewed = at
		}
	}
}

// With a lease grace of 15 s, a node whose lease stops is fenced once the
// grace has run out, its Ready condition still True (the controller
// manager has not noticed yet); a node whose lease is renewed in time is
// left alone.
func TestLeaseDetection(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)
	c.Options.LeaseGrace = 15 * time.Second
	now := f.clock.Now()
	for i := 1; i <= 3; i++ {
		f.health.renew(fmt.Sprintf("node-%d", i), now)
	}
	f.clock.Add(10 * time.Second)
	f.health.renew("node-2", f.clock.Now())
	f.health.renew("node-3", f.clock.Now())
	pass(t, c)
	assert.Nil(t, f.record("node-1"), "within the grace")

	f.clock.Add(6 * time.Second) // node-1's lease is 16 s old
	f.health.renew("node-2", f.clock.Now())
	f.health.renew("node-3", f.clock.Now())
	pass(t, c)
	r := f.record("node-1")
	require.NotNil(t, r, "fenced on its lease, Ready still True")
	assert.True(t, r.Isolated, "%+v", r)
	assert.Nil(t, f.record("node-2"))

	// Its lease is renewed again (the kubelet was only stalled): it is
	// ready again, and recovered.
	f.health.renew("node-1", f.clock.Now())
	for range 3 {
		pass(t, c)
	}
	assert.True(t, f.record("node-1").Closed(), "%+v", f.record("node-1"))
}

// A lease renewed again before the fencing starts (the gate refused it so
// far): the node is left alone, nothing switched.
func TestLeaseRenewedBeforeTheFence(t *testing.T) {
	f := newFixture(t, 3)
	c := f.controller(nil)
	c.Options.LeaseGrace = 15 * time.Second
	refuse := true
	c.Gate = policy.GateFunc(func(context.Context, policy.Candidate, policy.Cluster) policy.Decision {
		if refuse {
			return policy.Refuse("test", "not yet")
		}
		return policy.Admitted()
	})
	now := f.clock.Now()
	for i := 1; i <= 3; i++ {
		f.health.renew(fmt.Sprintf("node-%d", i), now)
	}
	f.clock.Add(20 * time.Second)
	f.health.renew("node-2", f.clock.Now())
	f.health.renew("node-3", f.clock.Now())
	pass(t, c)
	r := f.record("node-1")
	require.NotNil(t, r)
	assert.Equal(t, flow.StatusNew, r.Status)

	f.health.renew("node-1", f.clock.Now())
	refuse = false
	for range 3 {
		pass(t, c)
	}
	r = f.record("node-1")
	assert.True(t, r.Closed(), "%+v", r)
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"), "nothing switched")
	assert.Equal(t, fence.StateOn, f.pdu.Truth("1"))
}

// Every lease stops at once (the controller or the API server cut off, not
// the nodes): a storm, refused.
func TestLeasesStopEverywhere(t *testing.T) {
	f := newFixture(t, 4)
	c := f.controller(nil)
	c.Gate = policy.Default()
	c.Options.LeaseGrace = 15 * time.Second
	for i := 1; i <= 4; i++ {
		f.health.renew(fmt.Sprintf("node-%d", i), f.clock.Now())
	}
	f.clock.Add(time.Minute)
	for range 3 {
		pass(t, c)
	}
	for i := 1; i <= 4; i++ {
		r := f.record(fmt.Sprintf("node-%d", i))
		require.NotNil(t, r)
		assert.Contains(t, r.Message, "refused by storm-guard", "%+v", r)
	}
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"))
}
