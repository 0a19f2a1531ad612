package eaton

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// These tests put fencekit and the ClusterLabs agent fence_eaton_snmp
// (which runs net-snmp's snmpget, snmpset and snmpwalk) on the same live
// simulator, in turns, and check that each reads the state the other left.

// agentStatus returns the agent's status of plug.
func agentStatus(t *testing.T, agent string, s *snmpsim.Sim, v version, plug string) fence.State {
	t.Helper()
	r := runProc(t, agent, agentArgs(s, v, plug, "status")...)
	switch {
	case r.Code == 0 && r.Stdout == "Status: ON\n":
		return fence.StateOn
	case r.Code == 2 && r.Stdout == "Status: OFF\n":
		return fence.StateOff
	}
	t.Fatalf("%s status: exit %d, stdout %q, stderr %q", agentName, r.Code, r.Stdout, r.Stderr)
	return fence.StateUnknown
}

func mustTruth(t *testing.T, s *snmpsim.Sim, plug string) fence.State {
	t.Helper()
	st, err := s.Truth(plug)
	require.NoError(t, err)
	return st
}

func TestAgreeWithAgent(t *testing.T) {
	agent := requireAgent(t)
	for _, c := range []struct {
		model snmpsim.Model
		v     version
	}{
		{snmpsim.EatonManaged, v1}, {snmpsim.EatonManaged, v2}, {snmpsim.EatonManaged, v3},
		{snmpsim.EatonSwitched, v1}, {snmpsim.EatonSwitched, v2}, {snmpsim.EatonSwitched, v3},
	} {
		t.Run(c.model.String()+"/"+c.v.Name, func(t *testing.T) {
			s := snmpsim.Start(t, snmpsim.Options{Model: c.model, Outlets: 4})
			d := openSim(t, s, c.v, nil)
			ours := func(a fence.Action, plug string) {
				t.Helper()
				res, err := fence.Do(ctx(t), method(d, plug), a)
				require.NoError(t, err, "fencekit %v %s", a, plug)
				if a == fence.ActionOff {
					require.True(t, res.Fenced())
				}
			}
			theirs := func(action, plug, stdout string) {
				t.Helper()
				r := runProc(t, agent, agentArgs(s, c.v, plug, action)...)
				require.Equal(t, 0, r.Code, "%s %s %s: %s", agentName, action, plug, r.Stderr)
				assert.Equal(t, stdout, r.Stdout, "%s %s %s", agentName, action, plug)
			}
			agree := func(plug string, want fence.State, after string) {
				t.Helper()
				st, err := d.Status(ctx(t), plug)
				require.NoError(t, err)
				assert.Equal(t, want, st, "fencekit's status of %s after %s", plug, after)
				assert.Equal(t, want, agentStatus(t, agent, s, c.v, plug), "%s's status of %s after %s", agentName, plug, after)
				assert.Equal(t, want, mustTruth(t, s, plug), "the PDU's state of %s after %s", plug, after)
			}

			// Outlets 1 and 4: the first and the last, where an index off
			// by one would show.
			ours(fence.ActionOff, "1")
			agree("1", fence.StateOff, "fencekit off")
			theirs("on", "1", "Success: Powered ON\n")
			agree("1", fence.StateOn, "agent on")
			theirs("off", "4", "Success: Powered OFF\n")
			agree("4", fence.StateOff, "agent off")
			theirs("off", "4", "Success: Already OFF\n")
			ours(fence.ActionOn, "4")
			agree("4", fence.StateOn, "fencekit on")
			if c.v.Name == "v2c" {
				ours(fence.ActionReboot, "2")
				theirs("reboot", "2", "Success: Rebooted\n")
				agree("2", fence.StateOn, "both reboots")
			}
			for n := 1; n <= 4; n++ {
				assert.Equal(t, fence.StateOn, mustTruth(t, s, fmt.Sprint(n)), "outlet %d", n)
			}

			// The same list.
			r := runProc(t, agent, agentArgs(s, c.v, "", "list")...)
			require.Equal(t, 0, r.Code, r.Stderr)
			theirList := strings.Split(strings.TrimSpace(r.Stdout), "\n")
			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			var mine []string
			for _, p := range plugs {
				mine = append(mine, p.ID+","+p.Name)
			}
			sort.Strings(theirList)
			sort.Strings(mine)
			assert.Equal(t, theirList, mine)
		})
	}
}

// A missing outlet: the agent fails, and so does fencekit, with an unknown
// plug.
func TestMissingOutlet(t *testing.T) {
	agent := requireAgent(t)
	s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.EatonManaged, Outlets: 4})
	r := runProc(t, agent, agentArgs(s, v2, "9", "off")...)
	assert.Equal(t, 1, r.Code, "%s: %s", r.Stdout, r.Stderr)
	assert.NotContains(t, r.Stdout, "Success")
	d := openSim(t, s, v2, nil)
	res, err := fence.Do(ctx(t), method(d, "9"), fence.ActionOff)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.False(t, res.Fenced())
	assert.Contains(t, err.Error(), fmt.Sprintf("eaton 127.0.0.1:%d: GET outlet 9 state (.1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.8)", s.Port))
}

// TestAgreeFencectl runs the built fencectl and the agent with the same
// command lines on two simulators, and compares what they print, return
// and leave.
func TestAgreeFencectl(t *testing.T) {
	agent := requireAgent(t)
	bin := fencectl(t)
	for _, c := range []struct {
		model snmpsim.Model
		v     version
	}{{snmpsim.EatonManaged, v1}, {snmpsim.EatonSwitched, v2}, {snmpsim.EatonManaged, v3}} {
		t.Run(c.model.String()+"/"+c.v.Name, func(t *testing.T) {
			ours := snmpsim.Start(t, snmpsim.Options{Model: c.model, Outlets: 4})
			theirs := snmpsim.Start(t, snmpsim.Options{Model: c.model, Outlets: 4})
			steps := []struct{ action, plug string }{
				{"status", "1"}, {"off", "1"}, {"off", "1"}, {"status", "1"}, {"on", "1"}, {"on", "1"},
				{"reboot", "4"}, {"status", "4"}, {"off", "3"}, {"monitor", ""}, {"list", ""},
			}
			for i, st := range steps {
				a := runProc(t, bin, append(agentArgs(ours, c.v, st.plug, st.action), "--driver", "eaton")...)
				b := runProc(t, agent, agentArgs(theirs, c.v, st.plug, st.action)...)
				assert.Equal(t, b.Stdout, a.Stdout, "step %d %s %s: stdout", i, st.action, st.plug)
				assert.Equal(t, b.Code, a.Code, "step %d %s %s: exit code\nours: %s\ntheirs: %s", i, st.action, st.plug, a.Stderr, b.Stderr)
				for n := 1; n <= 4; n++ {
					assert.Equal(t, mustTruth(t, theirs, fmt.Sprint(n)), mustTruth(t, ours, fmt.Sprint(n)), "step %d: outlet %d", i, n)
				}
			}
		})
	}
}

// The command lines fence-agents-remediation builds from its template
// (--key=value for every parameter, --action=status to check a template,
// then the remediation's --action=reboot, off and on): fencectl installed
// as fence_eaton_snmp and the agent, each on a PDU of its own, return the same
// codes and output and leave the same outlets, a wrong community or
// password included.
func TestFenceAgentsRemediationCommandLines(t *testing.T) {
	agent := requireAgent(t)
	ours := proctest.FencectlAs(t, "fence_eaton_snmp")
	for _, v := range []version{v2, v3} {
		t.Run(v.Name, func(t *testing.T) {
			s1 := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 4})
			s2 := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 4})
			for i, st := range []struct {
				action, plug string
				bad          bool
			}{
				{"status", "2", false}, {"reboot", "2", false}, {"status", "2", false}, {"off", "2", false},
				{"status", "2", false}, {"status", "2", true}, {"on", "2", true}, {"on", "2", false},
			} {
				argv := func(s *snmpsim.Sim) []string {
					args := agentArgs(s, v, st.plug, st.action)
					if st.bad {
						args = wrongSecret(args)
					}
					return proctest.EqualsForm(args)
				}
				a := runProc(t, ours, argv(s1)...)
				b := runProc(t, agent, argv(s2)...)
				assert.Equal(t, b.Code, a.Code, "step %d %s (bad secret %v): exit code\nours: %s\ntheirs: %s", i, st.action, st.bad, a.Stderr, b.Stderr)
				assert.Equal(t, b.Stdout, a.Stdout, "step %d %s: stdout", i, st.action)
				for n := 1; n <= 4; n++ {
					assert.Equal(t, mustTruth(t, s2, fmt.Sprint(n)), mustTruth(t, s1, fmt.Sprint(n)), "step %d: outlet %d", i, n)
				}
			}
		})
	}
}

// wrongSecret returns args with the community (SNMPv1/2c) or the
// passwords (SNMPv3) replaced by wrong ones.
func wrongSecret(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--community", "-c", "--password", "-p", "--snmp-priv-passwd", "--snmp-auth-passwd":
			out[i+1] = "wrong-" + out[i+1]
		}
	}
	return out
}
