package apc

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// switchLog merges the SETs simulated PDUs received at or after since, in
// the order they received them, as "A off", "B on", ...: the outlet control
// values of an APC rPDU (1 on, 2 off).
func switchLog(t testing.TB, pdus map[string]*snmpsim.Sim, since time.Time) []string {
	t.Helper()
	type entry struct {
		name string
		r    snmpsim.SetRequest
	}
	var all []entry
	for name, s := range pdus {
		sets, _, err := s.Sets()
		require.NoError(t, err)
		for _, r := range sets {
			if !r.At.Before(since) {
				all = append(all, entry{name, r})
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].r.At.Before(all[j].r.At) })
	var out []string
	for _, e := range all {
		v := fmt.Sprint(e.r.Value)
		switch e.r.Value {
		case 1:
			v = "on"
		case 2:
			v = "off"
		}
		out = append(out, e.name+" "+v)
	}
	return out
}

// twoPDUs starts two APC PDUs, A and B, both outlets of the node on.
func twoPDUs(t testing.TB) (a, b *snmpsim.Sim) {
	t.Helper()
	a = snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 8})
	b = snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 8})
	return a, b
}

// A node fed by two PDUs, on two live snmpd PDUs: the level's reboot
// switches both outlets off (each verified) before either is switched on,
// and ClusterLabs' fence_apc_snmp, run in Pacemaker's order for such a
// level (off, off, on, on), sends the same SETs in the same order.
func TestLevelTwoLivePDUs(t *testing.T) {
	const plug = "3"
	a, b := twoPDUs(t)
	pdus := map[string]*snmpsim.Sim{"A": a, "B": b}
	want := []string{"A off", "B off", "A on", "B on"}

	for _, shape := range []struct {
		name string
		own  fence.Action
	}{{"no action= (the step's reboot)", fence.ActionNone}, {"action=reboot", fence.ActionReboot}} {
		t.Run("fencekit/"+shape.name, func(t *testing.T) {
			ma := method(openSim(t, a, nil), plug)
			mb := method(openSim(t, b, nil), plug)
			ma.Name, mb.Name, ma.Action, mb.Action = "pdu-a", "pdu-b", shape.own, shape.own
			since := time.Now()
			res, err := fence.DoLevels(ctx(t), "node-1", []fence.Level{{Methods: []*fence.Method{ma, mb}}}, fence.ActionReboot)
			require.NoError(t, err)
			assert.True(t, res.Fenced)
			assert.NoError(t, res.OnErr)
			assert.Equal(t, want, switchLog(t, pdus, since), "all off, then all on")
			assert.Equal(t, fence.StateOn, mustTruth(t, a, plug))
			assert.Equal(t, fence.StateOn, mustTruth(t, b, plug))
		})
	}

	t.Run(agentName+" in Pacemaker's order", func(t *testing.T) {
		agent := pdu.RequireAgent(t)
		since := time.Now()
		for _, step := range []struct {
			s      *snmpsim.Sim
			action string
		}{{a, "off"}, {b, "off"}, {a, "on"}, {b, "on"}} {
			r := proctest.Run(t, nil, agent, pdu.Args(step.s, v2, plug, step.action)...)
			require.Equal(t, 0, r.Code, "%s %s: %s%s", agentName, step.action, r.Stdout, r.Stderr)
		}
		assert.Equal(t, want, switchLog(t, pdus, since))
	})
}

// The second PDU cannot switch its outlet off (its outlet control is
// refused): the level is no fence, and PDU A's outlet, verified off, is not
// switched on again.
func TestLevelTwoLivePDUsOneRefuses(t *testing.T) {
	const plug = "3"
	a, b := twoPDUs(t)
	ma := method(openSim(t, a, nil), plug)
	// B's community is read-only: its SET is refused, surely not done.
	mb := method(openSim(t, b, func(o *Options) { o.Community = fence.NewSecret(b.Options.ROCommunity) }), plug)
	ma.Name, mb.Name = "pdu-a", "pdu-b"
	res, err := fence.DoLevels(ctx(t), "node-1", []fence.Level{{Methods: []*fence.Method{ma, mb}}}, fence.ActionReboot)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrNotFenced)
	assert.False(t, res.Fenced)
	assert.Equal(t, fence.StateOff, mustTruth(t, a, plug), "A stays off: the node is not proven fenced")
	assert.Equal(t, fence.StateOn, mustTruth(t, b, plug))
	assert.False(t, slices.Contains(switchLog(t, map[string]*snmpsim.Sim{"A": a}, time.Time{}), "A on"), "A never switched on")
}

// power_management=pdu-off pdu-on on live PDUs, the on refused (its
// community is read-only) after the verified off: the node is fenced, the
// on error reported, the outlet stays off.
func TestLevelLiveOnRefusedAfterOff(t *testing.T) {
	const plug = "3"
	a := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 8})
	off := method(openSim(t, a, nil), plug)
	on := method(openSim(t, a, func(o *Options) { o.Community = fence.NewSecret(a.Options.ROCommunity) }), plug)
	off.Name, off.Action = "pdu-off", fence.ActionOff
	on.Name, on.Action = "pdu-on", fence.ActionOn
	res, err := fence.DoLevels(ctx(t), "node-1", []fence.Level{{Methods: []*fence.Method{off, on}}}, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced)
	require.Error(t, res.OnErr)
	assert.Contains(t, res.OnErr.Error(), "pdu-on")
	assert.Equal(t, fence.StateOff, mustTruth(t, a, plug), "the node stays off")
}
