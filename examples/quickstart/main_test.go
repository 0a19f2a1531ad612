package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// fast is the scenario with its delays cut down for tests.
var fast = scenario{
	unhealthyAfter: 30 * time.Millisecond,
	interval:       10 * time.Millisecond,
	powerDelay:     60 * time.Millisecond,
	pollInterval:   30 * time.Millisecond, // 10 polls: 300 ms for a boot of 50 ms
	boot:           50 * time.Millisecond,
	fcSwitch:       20 * time.Millisecond,
	pdu:            30 * time.Millisecond,
	limit:          20 * time.Second,
}

// methods returns the method and phase of each job.
func methods(jobs []flow.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Step.String()+" "+j.Method+" "+j.Phase.String())
	}
	return out
}

// transitions returns the history as "step status" entries.
func transitions(nf *flow.NodeFence) []string {
	var out []string
	for _, h := range nf.History {
		out = append(out, h.Step.String()+" "+string(h.Status))
	}
	return out
}

func assertNoSecret(t *testing.T, out string) {
	t.Helper()
	for _, secret := range []string{"fc-secret", "pdu-secret", ipmisim.DefaultPassword} {
		assert.NotContains(t, out, secret)
	}
}

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	rep, err := run(t.Context(), &out, fast)
	require.NoError(t, err, out.String())
	s := out.String()

	// node-2 is back, its FC port enabled again, its power on.
	assert.True(t, rep.Ready)
	assert.Equal(t, fence.StateOn, rep.FCPort)
	assert.Equal(t, fence.StateOn, rep.Chassis)
	assert.Equal(t, fence.StateOn, rep.OutletA)
	assert.Equal(t, fence.StateOn, rep.OutletB)
	assert.Equal(t, "chassis off (BMC), outlet A on, outlet B on", rep.LostPower)

	// The record went through the three steps and is closed; no other node
	// was fenced.
	rec := rep.Record
	assert.True(t, rec.Closed())
	assert.False(t, rec.Isolated)
	assert.False(t, rec.PoweredOff)
	assert.Equal(t, []string{
		"isolation New", "isolation Running", "isolation Done",
		"power_management New", "power_management Running", "power_management Done",
		"recovery New", "recovery Running", "recovery Done",
	}, transitions(rec), s)
	require.Len(t, rep.Records, 1)
	assert.Equal(t, "node-2", rep.Records[0].Node)

	// Isolated at the FC port, power-fenced by the BMC (the PDUs are only
	// the fallback level): its off, then its on, each a job; the port
	// enabled again.
	assert.Equal(t, []string{"isolation fc-off off", "power_management bmc-reboot off", "power_management bmc-reboot on",
		"recovery fc-on on"}, methods(rep.Jobs))
	for _, j := range rep.Jobs {
		assert.True(t, j.OK, "%s: %s", j.Method, j.Error)
	}
	assert.True(t, rep.Jobs[0].OffConfirmed, "fc-off confirmed the port disabled")
	assert.True(t, rep.Jobs[1].OffConfirmed, "the BMC confirmed the node off")

	// Pods released after each verified fence (the power one while the
	// node is off, and the node switched on only once they are gone), then
	// restored.
	assert.Equal(t, []string{"release node-2 Storage", "release node-2 Power", "gone node-2", "restore node-2"}, rep.Pods)

	for _, want := range []string{
		"policy: isolation of node-2 admitted",
		"policy: power_management of node-2 admitted",
		"its isolation would be refused by storm-guard: 2 of 3 nodes unresponsive",
		"event node-2 Warning FenceIsolation: isolation: node not ready for the configured duration: fencing starts",
		"fc-off     off     confirmed off by the device",
		"event node-2 Normal FenceIsolated:",
		"bmc-reboot off     confirmed off by the device",
		"bmc-reboot on      confirmed on by the device",
		"event node-2 Normal FencePowerFenced:",
		"taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute applied",
		"node-2 booted after its power cycle: its kubelet reports Ready",
		"fc-on      on      confirmed on",
		"out-of-service taint removed",
		"done: node-2 is back, with its FC port on, its chassis power on (BMC) and its outlets on (A) and on (B)",
		"isolation:        level 1 of 1, node verified fenced",
		"power_management: level 1 of 2, node verified fenced",
		"recovery:         level 1 of 1, done",
		"now: recovery Done, isolated false, powered off false, pods released: none",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "pdu-a      off", "the PDUs are only the fallback")
	assertNoSecret(t, s)
}

// When the BMC refuses the power commands (the default scenario), the
// two-PDU level power-fences the node: both outlets off, each confirmed, the
// node loses power, its pods are released, then both outlets on.
func TestQuickstartTwoPDUs(t *testing.T) {
	var out bytes.Buffer
	sc := fast
	sc.bmcFault = ipmisim.FaultRefuse
	rep, err := run(t.Context(), &out, sc)
	require.NoError(t, err, out.String())
	s := out.String()

	assert.True(t, rep.Ready)
	assert.Equal(t, fence.StateOn, rep.OutletA)
	assert.Equal(t, fence.StateOn, rep.OutletB)
	assert.Equal(t, "chassis on (BMC), outlet A off, outlet B off", rep.LostPower, "both supplies off at once")
	assert.Equal(t, []string{
		"isolation fc-off off", "power_management bmc-reboot off",
		"power_management pdu-a off", "power_management pdu-b off", "power_management pdu-a on", "power_management pdu-b on",
		"recovery fc-on on",
	}, methods(rep.Jobs))
	assert.False(t, rep.Jobs[1].OK, "the BMC refused")
	assert.True(t, rep.Jobs[2].OffConfirmed, "PDU A confirmed the outlet off")
	assert.True(t, rep.Jobs[3].OffConfirmed, "PDU B confirmed the outlet off")
	assert.Equal(t, []string{"release node-2 Storage", "release node-2 Power", "gone node-2", "restore node-2"}, rep.Pods)
	// In the timeline: both offs, the power loss and the taint, then the ons.
	order := []string{
		"FenceLevelFailed: power_management level 1 failed",
		"pdu-a      off     confirmed off by the device",
		"pdu-b      off     confirmed off by the device",
		"node-2 has lost power",
		"event node-2 Normal FencePowerFenced: node power fenced: every device of level 2 confirmed it off",
		"taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute applied",
		"pods: node-2's pods are gone",
		"pdu-a      on      confirmed on by the device",
		"pdu-b      on      confirmed on by the device",
		"power_management: level 2 of 2, node verified fenced",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(s[at:], want)
		require.GreaterOrEqual(t, i, 0, "%q after position %d in\n%s", want, at, s)
		at += i + len(want)
	}
	// It boots once one supply is fed again.
	assert.Contains(t, s, "node-2 booted after its power cycle")
	assertNoSecret(t, s)
}
