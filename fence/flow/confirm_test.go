package flow_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// A BMC that died with its host: every switch is not done, the fencing
// fails. A person's confirmation is refused while the node is Ready and
// when it names another incident; one for the current incident fences
// the node on the person's word (its pods released, no device switched,
// no poll that would fail the step into a retry); the node's recovery
// ends it, and it does not count for the next incident.
func TestFlowPersonConfirms(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"bmc"}), nil)
	f.opts.MaxRetries, f.opts.RetryBackoff = -1, time.Second
	f.fail["bmc"] = fence.NotDone(errors.New("no route to host"))
	f.settle()
	require.Equal(t, flow.StatusFailed, f.nf.Status, f.nf.Message)
	incident := f.nf.IncidentStart()
	require.Equal(t, t0, incident)
	switches := len(f.log)

	// Another incident's confirmation: refused, said once.
	f.nf.Confirm = &flow.Confirmation{By: "alice", Reason: "rack B7 dark", Incident: incident.Add(-time.Hour)}
	f.settle()
	assert.Contains(t, f.nf.ConfirmRefused, "not the current one")
	assert.False(t, f.nf.Fenced())
	assert.Equal(t, 1, countOf(f.evs, flow.ReasonConfirmRefused))
	f.settle()
	assert.Equal(t, 1, countOf(f.evs, flow.ReasonConfirmRefused), "a refusal is told once")

	// Detect-only mode acts on none.
	f.nf.Confirm.Incident = incident
	f.o.ConfirmBlocked = "detect-only mode: no pod is released"
	f.settle()
	assert.Equal(t, "detect-only mode: no pod is released", f.nf.ConfirmRefused)
	assert.False(t, f.nf.Fenced())
	f.o.ConfirmBlocked = ""

	// The current incident's: the node counts as off; its pods go.
	f.now = f.now.Add(time.Minute)
	f.settle()
	assert.True(t, f.nf.ConfirmedOff)
	assert.False(t, f.nf.PoweredOff, "no device proved it")
	assert.True(t, f.nf.Fenced())
	assert.Equal(t, fence.StepPowerManagement, f.nf.Step)
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.Equal(t, flow.ReleasePower, f.nf.Released)
	assert.Contains(t, f.nf.Message, "confirmed off by a person, not by a device: alice: rack B7 dark")
	require.NotNil(t, f.nf.Confirmation)
	assert.Equal(t, f.now, f.nf.Confirmation.At)
	assert.Empty(t, f.nf.ConfirmRefused)
	assert.Contains(t, f.evs, flow.ReasonConfirmed)
	assert.Equal(t, []string{"release Power"}, f.log[switches:], "nothing switched")
	assert.False(t, f.nf.Active(), "fenced: it no longer blocks others")

	// An hour later, still not ready: no poll fails it into a retry.
	for range 20 {
		f.now = f.now.Add(5 * time.Minute)
		f.settle()
	}
	assert.Equal(t, flow.StatusDone, f.nf.Status)
	assert.Equal(t, []string{"release Power"}, f.log[switches:], "nothing switched")

	// The BMC and the node come back: recovered, the pods returned. The
	// confirmation stays on record for its incident, and is not refused
	// again.
	delete(f.fail, "bmc")
	f.o.Ready, f.o.Unresponsive, f.o.ReadySince = true, false, f.now
	f.settle()
	assert.True(t, f.nf.Closed(), "%+v", f.nf)
	assert.False(t, f.nf.ConfirmedOff)
	assert.NotNil(t, f.nf.Confirmation)
	assert.Equal(t, 2, countOf(f.evs, flow.ReasonConfirmRefused), "the two refusals above, none since")

	// The next incident: the old confirmation does not count.
	f.o.Ready, f.o.Unresponsive, f.o.ReadySince = false, true, time.Time{}
	f.now = f.now.Add(time.Hour)
	f.fail["bmc"] = fence.NotDone(errors.New("no route to host"))
	f.settle()
	assert.Equal(t, f.now, f.nf.IncidentStart())
	assert.Nil(t, f.nf.Confirmation)
	assert.False(t, f.nf.Fenced())
	assert.Contains(t, f.nf.ConfirmRefused, "not the current one")
}

// A confirmation of a node that is Ready is refused, and releases nothing.
func TestFlowConfirmRefusedWhileReady(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"bmc"}), nil)
	f.fail["bmc"] = fence.NotDone(errors.New("no route to host"))
	f.advance()
	f.o.Ready, f.o.Unresponsive, f.o.ReadySince = true, false, f.now
	f.nf.Confirm = &flow.Confirmation{By: "alice", Reason: "checked", Incident: f.nf.IncidentStart()}
	f.settle()
	assert.False(t, f.nf.Fenced())
	assert.Equal(t, flow.ReleaseNone, f.nf.Released)
	assert.Contains(t, f.nf.ConfirmRefused, "the node is Ready")
	assert.NotContains(t, f.log, "release Power")
}

// A switch in flight comes first: the confirmation waits for its outcome
// while the job runs here, and is acted on at once when the job's
// controller is gone (its job taken over).
func TestFlowConfirmWaitsForTheSwitchInFlight(t *testing.T) {
	nf := running(t)
	nf.Confirm = &flow.Confirmation{By: "alice", Reason: "checked", Incident: nf.IncidentStart()}
	o := obs(time.Second, false)
	o.Busy = true
	next, cmds := flow.Advance(nf, "n1", o, flow.Options{})
	assert.Equal(t, nf, next)
	assert.Empty(t, cmds)

	o.Busy = false // restarted: nothing runs the job
	next, cmds = flow.Advance(nf, "n1", o, flow.Options{})
	assert.True(t, next.ConfirmedOff)
	assert.Equal(t, []flow.CommandKind{flow.CmdReleasePods}, kinds(cmds))
	assert.False(t, hasRun(cmds))
}

// Devices fenced the node: a confirmation is not needed and changes
// nothing of the proof.
func TestFlowConfirmNotNeededAfterDevices(t *testing.T) {
	f := newFlow(t, powerOnly([]string{"pdu"}), map[string]fence.Action{"pdu": fence.ActionOff})
	f.settle()
	require.True(t, f.nf.PoweredOff)
	f.nf.Confirm = &flow.Confirmation{By: "alice", Reason: "checked", Incident: f.nf.IncidentStart()}
	f.settle()
	assert.False(t, f.nf.ConfirmedOff)
	assert.Contains(t, f.nf.ConfirmRefused, "not needed")
}
