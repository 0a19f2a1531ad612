package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// Every device of a node is dead (its BMC and PDU lost power with it): the
// fencing fails. A person's confirmation is refused while the check of
// its proof fails (no admission policy in force), and, once it passes,
// fences the node on the person's word: its pods released, no device
// switched, and the record and events saying who.
func TestPersonConfirmsADeadNode(t *testing.T) {
	f := newFixture(t, 2)
	c := f.controller(nil)
	policyErr := errors.New("the admission policy fencekit-confirmations is not in force")
	c.ConfirmCheck = func(context.Context) error { return policyErr }
	f.fc.Inject(fake.Fault{Kind: fake.Down})
	f.pdu.Inject(fake.Fault{Kind: fake.Down})
	f.health.set("node-1", false, f.clock.Now())
	f.clock.Add(2 * time.Minute)
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
	assert.Equal(t, policyErr.Error(), r.ConfirmRefused)
	assert.True(t, f.events.has("FenceConfirmationRefused"))
	assert.Equal(t, flow.ReleaseNone, f.pods.state("node-1"))

	c.ConfirmCheck = func(context.Context) error { return nil }
	// Refused as it stands: asked again only when the check's answer
	// changes, which it did.
	pass(t, c)
	r = f.record("node-1")
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
