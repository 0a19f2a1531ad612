package redfish_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// These tests run fencekit and the ClusterLabs agent fence_redfish against
// one responder: what one does, the other reads back.

// kit opens the responder's system through the registry, with the
// agent's parameters (and plug, kv), for fence.Do.
func kit(t *testing.T, s *redfishsim.Server, kv ...string) *fence.Method {
	t.Helper()
	p := fence.NewParams(append([]string{"ip", s.Host(), "ipport", strconv.Itoa(s.Port()), "username", s.Username(),
		"password", s.Password(), "ssl_insecure", "1", "stonith_status_sleep", "0.01"}, kv...)...)
	m, err := fence.DefaultRegistry().Open(ctxT(t), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Driver: "fence_redfish", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { m.Device.(*redfish.Device).Close() })
	return m
}

// agentSays checks fence_redfish's status of the responder.
func agentSays(t *testing.T, s *redfishsim.Server, want fence.State, extra ...string) {
	t.Helper()
	r := runAgent(t, s, "status", extra...)
	word, code := "ON", 0
	if want == fence.StateOff {
		word, code = "OFF", 2
	}
	assert.Equal(t, "Status: "+word+"\n", r.stdout, "fence_redfish status (stderr: %s)", r.stderr)
	assert.Equal(t, code, r.code, "fence_redfish status exit code")
}

// kitSays checks fencekit's status of the responder.
func kitSays(t *testing.T, m *fence.Method, want fence.State) {
	t.Helper()
	res, err := fence.Do(ctxT(t), m, fence.ActionStatus)
	require.NoError(t, err, "fencekit status")
	assert.Equal(t, want, res.State, "fencekit status")
}

func TestAgreeWithFenceRedfish(t *testing.T) {
	requireAgent(t)
	s := start(t, redfishsim.Options{})
	m := kit(t, s)

	kitSays(t, m, fence.StateOn)
	agentSays(t, s, fence.StateOn)

	_, err := fence.Do(ctxT(t), m, fence.ActionOff)
	require.NoError(t, err)
	agentSays(t, s, fence.StateOff)

	r := runAgent(t, s, "on")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Success: Powered ON\n", r.stdout)
	kitSays(t, m, fence.StateOn)

	r = runAgent(t, s, "off")
	require.Equal(t, 0, r.code, r.stderr)
	kitSays(t, m, fence.StateOff)

	_, err = fence.Do(ctxT(t), m, fence.ActionOn)
	require.NoError(t, err)
	agentSays(t, s, fence.StateOn)

	s.ResetCounters()
	r = runAgent(t, s, "reboot")
	require.Equal(t, 0, r.code, r.stderr)
	kitSays(t, m, fence.StateOn)
	assert.Equal(t, []redfishsim.Reset{{System: "1", Type: "ForceOff"}, {System: "1", Type: "On"}}, s.Resets())

	m.Options.RebootMethod = fence.RebootCycle
	_, err = fence.Do(ctxT(t), m, fence.ActionReboot)
	require.NoError(t, err)
	agentSays(t, s, fence.StateOn)
	assert.Equal(t, "PowerCycle", s.Resets()[2].Type)
}

// TestAgreeFencectl runs the built fencectl, under the agent's name, and
// fence_redfish with the same command lines on two responders, and
// compares what they print, return and leave.
func TestAgreeFencectl(t *testing.T) {
	requireAgent(t)
	ours, theirs := start(t, redfishsim.Options{}), start(t, redfishsim.Options{})
	bin := fencectl(t, "fence_redfish")
	for i, action := range []string{"status", "off", "off", "status", "on", "on", "reboot", "status", "monitor"} {
		a := runProc(t, nil, bin, agentArgs(ours, action)...)
		b := runAgent(t, theirs, action)
		assert.Equal(t, b.stdout, a.stdout, "step %d %s: stdout", i, action)
		assert.Equal(t, b.code, a.code, "step %d %s: exit code\nours: %s\ntheirs: %s", i, action, a.stderr, b.stderr)
		assert.Equal(t, theirs.PowerState("1"), ours.PowerState("1"), "step %d %s: state", i, action)
	}
	assert.Equal(t, theirs.Resets(), ours.Resets(), "the same resets")
	t.Logf("requests: fencectl %d on %d connections, fence_redfish %d on %d connections",
		ours.TotalRequests(), ours.Connections(), theirs.TotalRequests(), theirs.Connections())

	// The reverse: a CA file instead of --ssl-insecure, which the agent
	// lacks.
	ca, err := ours.WriteCA(t.TempDir())
	require.NoError(t, err)
	args := agentArgs(ours, "off")
	args = append(args[:len(args)-3], "--ssl-ca-file", ca, "--action", "off")
	r := runProc(t, nil, bin, args...)
	require.Equal(t, 0, r.code, r.stderr)
	agentSays(t, ours, fence.StateOff)
}

func TestAgreeSeveralSystems(t *testing.T) {
	requireAgent(t)
	s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "A"}, {ID: "B"}, {ID: "C"}}})

	// The agent takes the last system when none is given; fencekit does
	// not guess (the node may be any of the three: switching off the last
	// would report a fence of a machine that may still run), and says
	// which one the agent would take and how to choose.
	r := runAgent(t, s, "off")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, fence.StateOff, s.Truth("C"))
	assert.Equal(t, fence.StateOn, s.Truth("A"))
	_, err := fence.Do(ctxT(t), kit(t, s), fence.ActionStatus)
	assert.ErrorIs(t, err, redfish.ErrSeveralSystems)
	assert.Contains(t, err.Error(), "fence_redfish would take the last, "+s.SystemURI("C"))
	assert.Contains(t, err.Error(), "systems_uri")
	kitSays(t, kit(t, s, "plug", "C"), fence.StateOff)

	// Given the system, both act on it.
	uri := s.SystemURI("B")
	m := kit(t, s, "systems_uri", uri)
	_, err = fence.Do(ctxT(t), m, fence.ActionOff)
	require.NoError(t, err)
	agentSays(t, s, fence.StateOff, "--systems-uri", uri)
	r = runAgent(t, s, "on", "--systems-uri", uri)
	require.Equal(t, 0, r.code, r.stderr)
	kitSays(t, m, fence.StateOn)
	assert.Equal(t, fence.StateOn, s.Truth("A"))
}

// TestDisagreeOnTransitions shows where fencekit differs from the agent on
// purpose: the agent takes any PowerState but "Off" for on, PoweringOff
// included; fencekit takes it for no state.
func TestDisagreeOnTransitions(t *testing.T) {
	requireAgent(t)
	s := start(t, redfishsim.Options{})
	s.SetPowerState("1", "PoweringOff")
	agentSays(t, s, fence.StateOn)
	_, err := fence.Do(ctxT(t), kit(t, s), fence.ActionStatus)
	assert.ErrorIs(t, err, redfish.ErrTransition)

	r := runProc(t, nil, fencectl(t, "fence_redfish"), agentArgs(s, "status")...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Failed: Unable to obtain correct plug status or plug is not available")
	assert.Contains(t, r.stderr, `PowerState: "PoweringOff"`)
}

// TestWrongPasswordBothFail: the agent crashes on the 401 (its reply has
// no Members); fencectl reports the login failure. Neither succeeds, and
// fencectl's output holds no password.
func TestWrongPasswordBothFail(t *testing.T) {
	requireAgent(t)
	s := start(t, redfishsim.Options{})
	args := agentArgs(s, "off")
	for i, a := range args {
		if a == s.Password() {
			args[i] = "wrong-" + secret
		}
	}
	theirs := runProc(t, []string{"PYTHONWARNINGS=ignore"}, agentPath, args...)
	assert.Equal(t, 1, theirs.code)
	ours := runProc(t, nil, fencectl(t, "fence_redfish"), args...)
	assert.Equal(t, 1, ours.code)
	assert.Contains(t, ours.stderr, "Unable to connect/login to fencing device")
	assert.Contains(t, ours.stderr, "HTTP 401 Unauthorized")
	assert.NotContains(t, ours.stderr+ours.stdout, secret)
	assert.Equal(t, fence.StateOn, s.Truth("1"))
	assert.Empty(t, s.Resets())
	assert.False(t, strings.Contains(ours.stdout, "Success"))
}

// The command lines fence-agents-remediation builds from its template
// (--key=value, a bare --ssl-insecure, --ip=host:port as its templates
// often give it, --action=reboot, or --action=status to check a template):
// fencectl installed as fence_redfish and the agent, each on a service of
// its own, return the same codes and leave the same states.
func TestFenceAgentsRemediationCommandLines(t *testing.T) {
	requireAgent(t)
	ours := fencectl(t, "fence_redfish")
	s1 := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "1"}, {ID: "2"}}})
	s2 := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "1"}, {ID: "2"}}})
	argv := func(s *redfishsim.Server, password, action string) []string {
		return []string{"--ip=" + s.Host() + ":" + strconv.Itoa(s.Port()), "--username=" + s.Username(),
			"--password=" + password, "--ssl-insecure", "--systems-uri=" + s.SystemURI("2"), "--action=" + action}
	}
	for _, step := range []struct{ password, action string }{
		{s1.Password(), "status"}, {s1.Password(), "reboot"}, {s1.Password(), "off"}, {s1.Password(), "status"},
		{"wrong-password", "status"}, {s1.Password(), "on"},
	} {
		a := runProc(t, nil, ours, argv(s1, step.password, step.action)...)
		b := runProc(t, []string{"PYTHONWARNINGS=ignore"}, agentPath, argv(s2, step.password, step.action)...)
		assert.Equal(t, b.code, a.code, "exit code of %s: %s / %s", step.action, a.stderr, b.stderr)
		assert.Equal(t, b.stdout, a.stdout, "stdout of %s", step.action)
		assert.Equal(t, s2.Truth("2"), s1.Truth("2"), "state after %s", step.action)
		assert.Equal(t, fence.StateOn, s1.Truth("1"), "the other system untouched")
	}
}

// Under fence_redfish's name, fencectl ignores the port=<node name>
// Pacemaker adds (with nodename=), as the agent does, and still takes a plug
// that names one of several systems.
func TestFencectlPacemakerPortAndSystemPlug(t *testing.T) {
	ours := fencectl(t, "fence_redfish")
	one := start(t, redfishsim.Options{})
	stdin := strings.Join([]string{"ip=" + one.Host(), "ipport=" + strconv.Itoa(one.Port()), "username=" + one.Username(),
		"password=" + one.Password(), "ssl_insecure=1", "action=off", "port=node8", "nodename=node8"}, "\n") + "\n"
	cmd := exec.Command(ours)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, fence.StateOff, one.Truth("1"))

	two := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "1"}, {ID: "2"}}})
	rr := runProc(t, nil, ours, "--ip", two.Host(), "--ipport", strconv.Itoa(two.Port()), "--username", two.Username(),
		"--password", two.Password(), "--ssl-insecure", "--plug", "2", "--action", "off")
	require.Equal(t, 0, rr.code, rr.stderr)
	assert.Equal(t, fence.StateOff, two.Truth("2"))
	assert.Equal(t, fence.StateOn, two.Truth("1"))
}
