package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
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

// methods returns the method of each job.
func methods(jobs []fence.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Step.String()+" "+j.Method)
	}
	return out
}

// transitions returns the history as "step status" entries.
func transitions(nf *fence.NodeFence) []string {
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
	assert.Equal(t, fence.StateOn, rep.Outlet)

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

	// Isolated at the FC port, power-fenced by the BMC (the PDU is only the
	// fallback level), the port enabled again.
	assert.Equal(t, []string{"isolation fc-off", "power_management bmc-reboot", "recovery fc-on"}, methods(rep.Jobs))
	for _, j := range rep.Jobs {
		assert.True(t, j.OK, "%s: %s", j.Method, j.Error)
	}
	assert.True(t, rep.Jobs[0].OffConfirmed, "fc-off confirmed the port disabled")
	assert.True(t, rep.Jobs[1].OffConfirmed, "the BMC confirmed the node off")

	// Pods released after each verified fence, then restored.
	assert.Equal(t, []string{"release node-2 Storage", "release node-2 Power", "restore node-2"}, rep.Pods)

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
		"done: node-2 is back, with its FC port on, its chassis power on (BMC) and its outlet on",
		"isolation:        level 1 of 1, node verified fenced",
		"power_management: level 1 of 2, node verified fenced",
		"recovery:         level 1 of 1, done",
		"now: recovery Done, isolated false, powered off false, pods released: none",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "pdu-off    off", "the PDU is only the fallback")
	assertNoSecret(t, s)
}

// When the BMC refuses the power commands, the PDU level power-fences the
// node: the outlet off and on, each confirmed.
func TestQuickstartPDUFallback(t *testing.T) {
	var out bytes.Buffer
	sc := fast
	sc.bmcFault = ipmisim.FaultRefuse
	rep, err := run(t.Context(), &out, sc)
	require.NoError(t, err, out.String())
	s := out.String()

	assert.True(t, rep.Ready)
	assert.Equal(t, fence.StateOn, rep.Outlet)
	assert.Equal(t, []string{
		"isolation fc-off", "power_management bmc-reboot",
		"power_management pdu-off", "power_management pdu-on", "recovery fc-on",
	}, methods(rep.Jobs))
	assert.False(t, rep.Jobs[1].OK, "the BMC refused")
	assert.True(t, rep.Jobs[2].OffConfirmed, "the PDU confirmed the outlet off")
	assert.Equal(t, []string{"release node-2 Storage", "release node-2 Power", "restore node-2"}, rep.Pods)
	for _, want := range []string{
		"FenceLevelFailed: power_management level 1 failed",
		"pdu-off    off     confirmed off by the device",
		"pdu-on     on      confirmed on by the device",
		"power_management: level 2 of 2, node verified fenced",
	} {
		assert.Contains(t, s, want)
	}
	assertNoSecret(t, s)
}
