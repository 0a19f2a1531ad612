package promfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
	"github.com/fencekit/fencekit/promfence"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := promfence.New(reg, promfence.Options{})

	m.Observe(fence.Event{Node: "n1", Driver: "ipmi", Phase: fence.ActionOff, Outcome: fence.OutcomeConfirmed, Duration: 300 * time.Millisecond})
	m.Observe(fence.Event{Node: "n2", Driver: "ipmi", Phase: fence.ActionOff, Outcome: fence.OutcomeConfirmed, Duration: 200 * time.Millisecond})
	m.Observe(fence.Event{Node: "n3", Driver: "apc", Phase: fence.ActionOn, Outcome: fence.OutcomeUncertain, Err: errors.New("password s3cret refused")})

	g := m.Gate(policy.All(&policy.StormGuard{MaxUnresponsive: 1}))
	cl := policy.Cluster{Now: time.Now(), Nodes: []policy.Node{{Name: "a", Unresponsive: true}, {Name: "b", Unresponsive: true}}}
	d := g.Admit(context.Background(), policy.Candidate{Node: cl.Nodes[0]}, cl)
	require.False(t, d.Admit)
	_, keeps := g.(policy.StormMemory)
	assert.True(t, keeps, "the counting gate keeps the storm memory")

	m.WatchRecords(func(context.Context) ([]*flow.NodeFence, error) {
		return []*flow.NodeFence{
			{Node: "n1", Step: fence.StepPowerManagement, Status: flow.StatusDone, PoweredOff: true, FoundOn: "pdu-off read the node on"},
			{Node: "n2", Step: fence.StepPowerManagement, Status: flow.StatusDone, ConfirmedOff: true},
			{Node: "n4", Step: fence.StepIsolation, Status: flow.StatusNew},
		}, nil
	})

	want := `
# HELP fencekit_attempts_total Attempts of fencing methods, by driver, phase (status, off, on) and outcome.
# TYPE fencekit_attempts_total counter
fencekit_attempts_total{driver="apc",outcome="` + fence.OutcomeUncertain.String() + `",phase="on"} 1
fencekit_attempts_total{driver="ipmi",outcome="` + fence.OutcomeConfirmed.String() + `",phase="off"} 2
# HELP fencekit_gate_refusals_total Fencings refused by the policy gates, by gate.
# TYPE fencekit_gate_refusals_total counter
fencekit_gate_refusals_total{gate="storm-guard"} 1
# HELP fencekit_nodes Nodes with a NodeFence record, by step and status.
# TYPE fencekit_nodes gauge
fencekit_nodes{status="Done",step="power_management"} 2
fencekit_nodes{status="New",step="isolation"} 1
# HELP fencekit_nodes_fenced Nodes that count as fenced now, by proof: devices (confirmed off or isolated by every required device of a level) or person (confirmed off by a person, no device could).
# TYPE fencekit_nodes_fenced gauge
fencekit_nodes_fenced{proof="devices"} 1
fencekit_nodes_fenced{proof="person"} 1
# HELP fencekit_nodes_found_on Fenced nodes whose pods are released and that a device that fenced them reads on again (or their storage port enabled): switched on behind the controller.
# TYPE fencekit_nodes_found_on gauge
fencekit_nodes_found_on 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"fencekit_attempts_total", "fencekit_gate_refusals_total", "fencekit_nodes", "fencekit_nodes_fenced", "fencekit_nodes_found_on"))
	assert.Equal(t, 2, testutil.CollectAndCount(reg, "fencekit_attempt_duration_seconds"))

	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotContains(t, mf.String(), "s3cret")
		assert.NotContains(t, mf.String(), `"n1"`, "no node names in labels")
	}
}
