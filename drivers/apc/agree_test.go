package apc

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

// These tests put fencekit and the ClusterLabs agent fence_apc_snmp (which
// runs net-snmp's snmpget, snmpset and snmpwalk) on the same live
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

// agentList returns the agent's list: "number,name" lines, sorted.
func agentList(t *testing.T, agent string, s *snmpsim.Sim, v version) []string {
	t.Helper()
	r := runProc(t, agent, agentArgs(s, v, "", "list")...)
	require.Equal(t, 0, r.Code, "%s list: %s", agentName, r.Stderr)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	sort.Strings(lines)
	return lines
}

func TestAgreeWithAgent(t *testing.T) {
	agent := requireAgent(t)
	type tc struct {
		model snmpsim.Model
		v     version
		full  bool // every step; else the off and on of both, by number and name, and the list
	}
	cases := []tc{
		{snmpsim.APC, v1, true}, {snmpsim.APC, v2, true}, {snmpsim.APC, v3, true},
		{snmpsim.APCMasterSwitch, v2, false}, {snmpsim.APCRPDU2, v2, false}, {snmpsim.Tripplite, v2, false}, {snmpsim.TrippliteLX, v3, false},
	}
	for _, c := range cases {
		t.Run(c.model.String()+"/"+c.v.Name, func(t *testing.T) {
			s := snmpsim.Start(t, snmpsim.Options{Model: c.model, Outlets: 4, Names: map[int]string{3: "web-3"}})
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
			var agree func(plug string, want fence.State, after string)
			full := func() {
				theirs("off", "2", "Success: Powered OFF\n")
				theirs("off", "2", "Success: Already OFF\n")
				ours(fence.ActionOn, "2")
				ours(fence.ActionReboot, "2")
				agree("2", fence.StateOn, "fencekit reboot")
				theirs("reboot", "2", "Success: Rebooted\n")
				agree("2", fence.StateOn, "agent reboot")
			}
			agree = func(plug string, want fence.State, after string) {
				t.Helper()
				st, err := d.Status(ctx(t), plug)
				require.NoError(t, err)
				assert.Equal(t, want, st, "fencekit's status of %s after %s", plug, after)
				assert.Equal(t, want, agentStatus(t, agent, s, c.v, plug), "%s's status of %s after %s", agentName, plug, after)
				truth, err := s.Truth(outletOf(s, plug))
				require.NoError(t, err)
				assert.Equal(t, want, truth, "the PDU's state of %s after %s", plug, after)
			}

			ours(fence.ActionOff, "2")
			agree("2", fence.StateOff, "fencekit off")
			theirs("on", "2", "Success: Powered ON\n")
			agree("2", fence.StateOn, "agent on")
			if c.full {
				full()
			}
			theirs("off", "2", "Success: Powered OFF\n")
			agree("2", fence.StateOff, "agent off")
			ours(fence.ActionOn, "2")
			agree("2", fence.StateOn, "fencekit on")
			assert.Equal(t, fence.StateOn, mustTruth(t, s, "1"), "outlet 1 untouched")

			// By name, both ways.
			theirs("off", "web-3", "Success: Powered OFF\n")
			agree("web-3", fence.StateOff, "agent off by name")
			ours(fence.ActionOn, "web-3")
			agree("3", fence.StateOn, "fencekit on by name")

			// The same outlets in the lists.
			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			var mine []string
			for _, p := range plugs {
				mine = append(mine, p.ID+","+p.Name)
			}
			sort.Strings(mine)
			assert.Equal(t, agentList(t, agent, s, c.v), mine)
		})
	}
}

func mustTruth(t *testing.T, s *snmpsim.Sim, plug string) fence.State {
	t.Helper()
	st, err := s.Truth(plug)
	require.NoError(t, err)
	return st
}

// TestMissingOutletNotCopied: fence_apc_snmp reads a missing outlet's
// noSuchInstance as "off" and reports a fencing success it never did.
// fencekit reports an unknown plug, and fails.
func TestMissingOutletNotCopied(t *testing.T) {
	agent := requireAgent(t)
	s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 8})
	for _, v := range []version{v1, v2} {
		t.Run(v.Name, func(t *testing.T) {
			r := runProc(t, agent, agentArgs(s, v, "20", "off")...)
			if r.Code == 0 && r.Stdout == "Success: Already OFF\n" {
				t.Logf("%s --plug 20 --action off on an 8-outlet PDU: %q, exit 0: a false success", agentName, r.Stdout)
			} else {
				t.Logf("%s --plug 20 --action off: exit %d, %q %q", agentName, r.Code, r.Stdout, r.Stderr)
			}
			d := openSim(t, s, v, nil)
			res, err := fence.Do(ctx(t), method(d, "20"), fence.ActionOff)
			require.Error(t, err)
			assert.ErrorIs(t, err, fence.ErrUnknownPlug)
			assert.False(t, res.Fenced(), "never a success")
			assert.Contains(t, err.Error(), "method pdu-off")
			assert.Contains(t, err.Error(), fmt.Sprintf("apc 127.0.0.1:%d: GET outlet 20 state", s.Port))

			if bin := fencectlOrSkip(t); bin != "" {
				r := runProc(t, bin, append(agentArgs(s, v, "20", "off"), "--driver", "apc")...)
				assert.Equal(t, 1, r.Code)
				assert.NotContains(t, r.Stdout, "Success")
				assert.Contains(t, r.Stderr, "Failed: Unable to obtain correct plug status or plug is not available")
			}
		})
	}
}

// fencectlOrSkip returns the built fencectl, or "" when it lacks this
// driver (the rest of the test still runs).
func fencectlOrSkip(t *testing.T) string {
	t.Helper()
	var bin string
	t.Run("fencectl", func(t *testing.T) { bin = fencectl(t) })
	return bin
}

// TestAgreeFencectl runs the built fencectl and the agent with the same
// command lines on two simulators, and compares what they print, return
// and leave.
func TestAgreeFencectl(t *testing.T) {
	agent := requireAgent(t)
	bin := fencectl(t)
	for _, v := range []version{v1, v2, v3} {
		t.Run(v.Name, func(t *testing.T) {
			ours := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
			theirs := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
			steps := []struct{ action, plug string }{
				{"status", "1"}, {"off", "1"}, {"off", "1"}, {"status", "1"}, {"on", "1"}, {"on", "1"},
				{"reboot", "2"}, {"status", "2"}, {"off", "node3"}, {"status", "node3"}, {"monitor", ""}, {"list", ""},
			}
			for i, st := range steps {
				a := runProc(t, bin, append(agentArgs(ours, v, st.plug, st.action), "--driver", "apc")...)
				b := runProc(t, agent, agentArgs(theirs, v, st.plug, st.action)...)
				assert.Equal(t, b.Stdout, a.Stdout, "step %d %s %s: stdout", i, st.action, st.plug)
				assert.Equal(t, b.Code, a.Code, "step %d %s %s: exit code\nours: %s\ntheirs: %s", i, st.action, st.plug, a.Stderr, b.Stderr)
				for n := 1; n <= 4; n++ {
					assert.Equal(t, mustTruth(t, theirs, fmt.Sprint(n)), mustTruth(t, ours, fmt.Sprint(n)), "step %d: outlet %d", i, n)
				}
			}
		})
	}
}

// fencectl's agent driver runs ClusterLabs' agent, and takes that agent's
// own options (from its metadata) on the command line and passes them on:
// --snmp-version 2c reaches fence_apc_snmp, which switches the outlet.
func TestFencectlAgentDriverTakesTheAgentsOptions(t *testing.T) {
	requireAgent(t)
	bin := fencectl(t)
	s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
	args := append([]string{"--driver", "agent", "--agent", agentName}, agentArgs(s, v2, "3", "off")...)
	r := runProc(t, bin, args...)
	require.Equal(t, 0, r.Code, "%s%s", r.Stdout, r.Stderr)
	assert.Equal(t, "Success: Powered OFF\n", r.Stdout)
	assert.Equal(t, fence.StateOff, mustTruth(t, s, "3"))
	assert.NotContains(t, r.Stdout+r.Stderr, "not recognized")
}

// The command lines fence-agents-remediation builds from its template
// (--key=value for every parameter, --action=status to check a template,
// then the remediation's --action=reboot, off and on): fencectl installed
// as fence_apc_snmp and the agent, each on a PDU of its own, return the same
// codes and output and leave the same outlets, a wrong community or
// password included.
func TestFenceAgentsRemediationCommandLines(t *testing.T) {
	agent := requireAgent(t)
	ours := proctest.FencectlAs(t, "fence_apc_snmp")
	for _, v := range []version{v2, v3} {
		t.Run(v.Name, func(t *testing.T) {
			s1 := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
			s2 := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
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
