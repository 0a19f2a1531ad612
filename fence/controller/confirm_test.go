package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
)

// Every device of a node is dead (its BMC and PDU lost power with it): the
// fencing fails. A person's confirmation is refused while its proof cannot
// be read (asked again at the next pass); once its proof says it was not
// made by whom it names, it is refused for good: a later change (a policy
// applied, a right granted) does not revive it, and the check is not asked
// again until the confirmation is written again. Written again and proven,
// it fences the node on the person's word: its pods released, no device
// switched, and the record and events saying who.
func TestPersonConfirmsADeadNode(t *testing.T) {
	f := newFixture(t, 2)
	c := f.controller(nil)
	var asked []flow.Confirmation
	answer := errors.New("reading CertificateSigningRequest x: the API server did not answer")
	c.ConfirmCheck = func(_ context.Context, node string, conf flow.Confirmation) error {
		assert.Equal(t, "node-1", node)
		asked = append(asked, conf)
		return answer
	}
	f.fc.Inject(fake.Fault{Kind: fake.Down})
	f.pdu.Inject(fake.Fault{Kind: fake.Down})
	f.down("node-1")
	for range 12 {
		pass(t, c)
		f.clock.Add(time.Minute)
	}
	r := f.record("node-1")
	require.Equal(t, flow.StatusFailed, r.Status, r.Message)
	offs := f.pdu.History("1")

	require.True(t, f.store.Confirm("node-1", "alice", "rack B7 dark, checked on site"))
	pass(t, c)
	r = f.record("node-1")
	assert.False(t, r.Fenced())
	assert.Equal(t, answer.Error(), r.ConfirmRefused)
	assert.True(t, f.events.has("FenceConfirmationRefused"))
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))
	require.NotEmpty(t, asked)
	assert.Equal(t, "alice", asked[0].By)
	n := len(asked)

	// Its proof says bob made it: refused for good.
	answer = fmt.Errorf("%w: the API server recorded bob as the creator of its request, not alice", controller.ErrUnproven)
	pass(t, c)
	r = f.record("node-1")
	assert.False(t, r.Fenced())
	assert.Equal(t, "the API server recorded bob as the creator of its request, not alice", r.ConfirmRefused)
	require.Greater(t, len(asked), n, "a check that could not read its proof is asked again")
	n = len(asked)

	// Whatever changes now, that confirmation stays refused, unasked.
	answer = nil
	for range 3 {
		pass(t, c)
		f.clock.Add(time.Minute)
	}
	r = f.record("node-1")
	assert.False(t, r.Fenced(), "a confirmation refused for good is not revived")
	assert.Len(t, asked, n, "nor asked about again")
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))

	// Written again, and proven.
	require.True(t, f.store.Confirm("node-1", "alice", "rack B7 dark, checked on site again"))
	pass(t, c)
	r = f.record("node-1")
	assert.Greater(t, len(asked), n)
	assert.True(t, r.ConfirmedOff, "%+v", r)
	assert.False(t, r.PoweredOff)
	assert.Equal(t, "alice", r.Confirmation.By)
	assert.Equal(t, flow.ReleasePower, f.pods.state("node-1"))
	assert.True(t, f.events.has("FenceConfirmedByPerson"))
	assert.True(t, f.events.has("confirmed off by a person, not by a device: alice: rack B7 dark"))
	assert.Equal(t, offs, f.pdu.History("1"), "no device switched")

	// The devices come back with the node: recovered, pods returned.
	f.fc.ClearFaults()
	f.pdu.ClearFaults()
	f.health.set("node-1", true, f.clock.Now())
	for range 3 {
		pass(t, c)
	}
	r = f.record("node-1")
	assert.True(t, r.Closed(), "%+v", r)
	assert.False(t, r.ConfirmedOff)
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"))

	// A node without a record cannot be confirmed.
	assert.False(t, f.store.Confirm("node-2", "alice", "checked"))
}

// holdingPods is a pod treatment whose hold fails while fail is set.
type holdingPods struct {
	*pods
	mu    sync.Mutex
	fail  bool
	holds []string
}

func (h *holdingPods) Hold(ctx context.Context, node string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail {
		return errors.New("nodes is forbidden")
	}
	h.holds = append(h.holds, "hold "+node)
	return nil
}

func (h *holdingPods) Unhold(ctx context.Context, node string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = append(h.holds, "unhold "+node)
	return nil
}

// A hold that fails never holds up the fencing: the node is fenced all the
// same, a FenceHoldFailed event says why, and the hold is asked again
// until it works; it ends with the record.
func TestHoldFailureDoesNotStopTheFence(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	hp := &holdingPods{pods: f.pods, fail: true}
	c.Pods = hp
	f.down("node-1")
	for range 3 {
		pass(t, c)
	}
	r := f.record("node-1")
	assert.True(t, r.Isolated, "%+v", r)
	assert.True(t, r.Hold)
	assert.False(t, r.Held)
	assert.True(t, f.events.has("FenceHoldFailed"))
	assert.Empty(t, hp.holds)

	hp.mu.Lock()
	hp.fail = false
	hp.mu.Unlock()
	pass(t, c)
	r = f.record("node-1")
	assert.True(t, r.Held)
	assert.Equal(t, []string{"hold node-1"}, hp.holds)

	f.health.set("node-1", true, f.clock.Now())
	for range 4 {
		pass(t, c)
	}
	assert.True(t, f.record("node-1").Closed())
	assert.Equal(t, []string{"hold node-1", "unhold node-1"}, hp.holds)
}
