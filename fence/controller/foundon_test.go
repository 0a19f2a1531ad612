package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// A node switched on behind the controller while it is held off with its
// pods released (an operator, or a BMC's power-restore policy after an
// outage) is found at the next read of its devices: an alarm (the record's
// FoundOn, a warning event), never a silent "still fenced"; nothing is
// switched by the read. Read off again, the alarm clears. The same holds
// for a storage port enabled again behind an isolation.
func TestFencedNodeFoundOn(t *testing.T) {
	f := newFixtureShaped(t, 1, false, shapeOffOnly)
	c := f.controller(nil)
	f.down("node-1")
	pass(t, c)
	r := f.record("node-1")
	require.True(t, r.Isolated, r.Message)
	require.Equal(t, flow.StatusDone, r.Status, r.Message)
	require.Equal(t, flow.ReleaseStorage, f.pods.state("node-1"))

	// The FC port enabled behind the controller, during the isolation.
	f.fc.SetTruth("1", fence.StateOn)
	f.clock.Add(29 * time.Second)
	pass(t, c)
	assert.Empty(t, f.record("node-1").FoundOn, "not read again before the poll interval")
	f.clock.Add(2 * time.Second)
	pass(t, c)
	r = f.record("node-1")
	require.Contains(t, r.FoundOn, "fc-off read the node on", r.Message)
	assert.Contains(t, r.Message, "no device proves its storage isolation now")
	assert.True(t, f.events.has(flow.ReasonFoundOn))
	assert.Equal(t, 1, sets(f.fc, "1", fence.StateOff), "the read switched nothing")
	assert.Equal(t, fence.StateOn, f.fc.Truth("1"))

	// Its power management follows (the node is still not ready): the
	// PDU fences it, which proves it off again.
	f.clock.Add(5 * time.Minute)
	pass(t, c)
	r = f.record("node-1")
	require.Equal(t, fence.StepPowerManagement, r.Step)
	require.Equal(t, flow.StatusDone, r.Status, r.Message)
	require.True(t, r.PoweredOff)
	assert.Empty(t, r.FoundOn, "a new proof clears the alarm")
	require.Equal(t, flow.ReleasePower, f.pods.state("node-1"))

	// Switched on behind the controller, pods released.
	f.pdu.SetTruth("1", fence.StateOn)
	f.clock.Add(31 * time.Second)
	pass(t, c)
	r = f.record("node-1")
	require.Contains(t, r.FoundOn, "pdu-off read the node on", r.Message)
	assert.Contains(t, r.Message, "no device proves its devices now")
	assert.True(t, r.PoweredOff, "its pods were released on a proof that held then")
	assert.Equal(t, 1, sets(f.pdu, "1", fence.StateOff), "the read switched nothing")
	assert.Equal(t, flow.ReleasePower, f.pods.state("node-1"), "the pods stay released")

	// Said once.
	f.events.mu.Lock()
	f.events.evs = nil
	f.events.mu.Unlock()
	f.clock.Add(31 * time.Second)
	pass(t, c)
	assert.False(t, f.events.has(flow.ReasonFoundOn))

	// Off again: cleared.
	f.pdu.SetTruth("1", fence.StateOff)
	f.clock.Add(31 * time.Second)
	pass(t, c)
	r = f.record("node-1")
	assert.Empty(t, r.FoundOn, r.Message)
	assert.True(t, f.events.has(flow.ReasonOffAgain))

	// The controller comes back when the read is due.
	due, err := c.Reconcile(t.Context(), "node-1")
	require.NoError(t, err)
	assert.LessOrEqual(t, due, 30*time.Second)
}

// A reboot's level switched the node on by design: its devices are not
// read again, and the record never reads "found on".
func TestRebootedNodeNotReadAgain(t *testing.T) {
	f := newFixture(t, 1)
	c := f.controller(nil)
	f.down("node-1")
	pass(t, c)
	f.clock.Add(6 * time.Minute)
	pass(t, c)
	r := f.record("node-1")
	require.Equal(t, fence.StepPowerManagement, r.Step)
	require.Equal(t, flow.StatusDone, r.Status, r.Message)
	require.Equal(t, fence.StateOn, f.pdu.Truth("1"))
	reads := f.pdu.Calls(fake.OpStatus)
	f.clock.Add(31 * time.Second)
	pass(t, c)
	assert.Empty(t, f.record("node-1").FoundOn)
	assert.Equal(t, reads, f.pdu.Calls(fake.OpStatus))
}
