package ipmi

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/proctest"
)

// These tests put fencekit and the ClusterLabs agent fence_ipmilan (which
// runs ipmitool) on the same live BMC, in turns, and check that each reads
// the state the other left.

// result is what one run of a program printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runProc runs a program as a process (see proctest.Run).
func runProc(t testing.TB, bin string, args ...string) result {
	t.Helper()
	r := proctest.Run(t, nil, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// agentArgs are fence_ipmilan's options for a BMC: IPMI v2.0, cipher
// suite 3 (without it, ipmitool probes the suites for seconds), no wait
// after a power command.
func agentArgs(p peer, action string) []string {
	return []string{"--lanplus", "--cipher", "3", "--power-wait", "0", "--ip", ipmisim.Host,
		"--ipport", strconv.Itoa(p.port), "--username", p.user, "--password", p.password, "--action", action}
}

// requireAgent returns fence_ipmilan's path, or skips the test (fails it
// under CI=true) when fence_ipmilan or ipmitool is missing.
func requireAgent(t testing.TB) string {
	t.Helper()
	ipmisim.RequireTool(t, "ipmitool", "ipmitool")
	return ipmisim.RequireTool(t, "fence_ipmilan", "fence-agents")
}

func agentStatus(t *testing.T, agent string, p peer) fence.State {
	t.Helper()
	r := runProc(t, agent, agentArgs(p, "status")...)
	switch {
	case r.code == 0 && r.stdout == "Status: ON\n":
		return fence.StateOn
	case r.code == 2 && r.stdout == "Status: OFF\n":
		return fence.StateOff
	}
	t.Fatalf("fence_ipmilan status: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	return fence.StateUnknown
}

func TestAgreeWithFenceIPMILan(t *testing.T) {
	agent := requireAgent(t)
	_, sp := simPeer(t, ipmisim.SimOptions{Password: secret})
	_, gp := goBMCPeer(t, ipmisim.GoBMCOptions{Password: secret, CycleOffTime: 20 * time.Millisecond})
	for _, p := range []peer{sp, gp} {
		t.Run(p.name, func(t *testing.T) {
			d := p.open(t, nil)
			ours := func(a fence.Action) {
				t.Helper()
				res, err := fence.Do(ctx(t), method(d, "fencekit"), a)
				require.NoError(t, err, "fencekit %v", a)
				if a == fence.ActionOff {
					require.True(t, res.Fenced())
				}
			}
			theirs := func(action, stdout string) {
				t.Helper()
				r := runProc(t, agent, agentArgs(p, action)...)
				require.Equal(t, 0, r.code, "fence_ipmilan %s: %s", action, r.stderr)
				assert.Equal(t, stdout, r.stdout, "fence_ipmilan %s", action)
				assert.NotContains(t, r.stderr, secret)
			}
			agree := func(want fence.State, after string) {
				t.Helper()
				st, err := d.Status(ctx(t), "")
				require.NoError(t, err)
				assert.Equal(t, want, st, "fencekit's status after %s", after)
				assert.Equal(t, want, agentStatus(t, agent, p), "fence_ipmilan's status after %s", after)
				truth, err := p.truth()
				require.NoError(t, err)
				assert.Equal(t, want, truth, "the BMC's state after %s", after)
			}
			require.NoError(t, p.setTruth(fence.StateOn))

			ours(fence.ActionOff)
			agree(fence.StateOff, "fencekit off")
			theirs("on", "Success: Powered ON\n")
			agree(fence.StateOn, "fence_ipmilan on")
			ours(fence.ActionReboot)
			agree(fence.StateOn, "fencekit reboot")
			theirs("off", "Success: Powered OFF\n")
			agree(fence.StateOff, "fence_ipmilan off")
			theirs("off", "Success: Already OFF\n")
			ours(fence.ActionOn)
			agree(fence.StateOn, "fencekit on")
			theirs("reboot", "Success: Rebooted\n")
			agree(fence.StateOn, "fence_ipmilan reboot")
			require.NoError(t, d.SoftOff(ctx(t), ""))
			agree(fence.StateOff, "fencekit soft off")
			theirs("on", "Success: Powered ON\n")
			m := method(d, "fencekit-cycle")
			m.Options.RebootMethod = fence.RebootCycle
			_, err := fence.Do(ctx(t), m, fence.ActionReboot)
			require.NoError(t, err)
			// The BMC may still be in the off half of its cycle.
			require.Eventually(t, func() bool { st, _ := p.truth(); return st == fence.StateOn }, 10*time.Second, 10*time.Millisecond)
			agree(fence.StateOn, "fencekit cycle")
			theirs("monitor", "")
			require.NoError(t, d.Monitor(ctx(t)))
		})
	}
}

// IPMI v1.5 sessions: fence_ipmilan without --lanplus runs ipmitool -I lan.
func TestAgreeWithFenceIPMILanV15(t *testing.T) {
	agent := requireAgent(t)
	_, p := simPeer(t, ipmisim.SimOptions{})
	d := p.open(t, func(o *Options) { o.V15 = true })
	lan := func(action string) result {
		args := agentArgs(p, action)[1:] // without --lanplus
		return runProc(t, agent, args...)
	}
	res, err := fence.Do(ctx(t), method(d, "fencekit"), fence.ActionOff)
	require.NoError(t, err)
	require.True(t, res.Fenced())
	r := lan("status")
	assert.Equal(t, "Status: OFF\n", r.stdout, r.stderr)
	r = lan("on")
	assert.Equal(t, "Success: Powered ON\n", r.stdout, r.stderr)
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }

// buildFencectl returns cmd/fencectl built once per test binary, or skips t
// when that fencectl does not know the ipmi driver.
func buildFencectl(t testing.TB) string {
	t.Helper()
	return proctest.Fencectl(t, "ipmi", "--cipher")
}

// fencectl and fence_ipmilan, each on a BMC of its own, run the same
// actions: they print the same lines, return the same codes, and leave
// their BMCs in the same state.
func TestFencectlAgreesWithFenceIPMILan(t *testing.T) {
	agent := requireAgent(t)
	bin := buildFencectl(t)
	s1, p1 := simPeer(t, ipmisim.SimOptions{Password: secret})
	s2, p2 := simPeer(t, ipmisim.SimOptions{Password: secret})
	for _, action := range []string{"status", "off", "off", "status", "on", "on", "reboot", "status", "monitor"} {
		a := runProc(t, bin, append(agentArgs(p1, action), "--driver", "ipmi")...)
		b := runProc(t, agent, agentArgs(p2, action)...)
		assert.Equal(t, b.stdout, a.stdout, "stdout of %s", action)
		assert.Equal(t, b.code, a.code, "exit code of %s: %s", action, a.stderr)
		assert.NotContains(t, a.stdout+a.stderr, secret)
		t1, err := s1.Truth()
		require.NoError(t, err)
		t2, err := s2.Truth()
		require.NoError(t, err)
		assert.Equal(t, t2, t1, "state after %s", action)
	}
	// Installed under the agent's name, fencectl takes the agent's options.
	agentLink := filepath.Join(t.TempDir(), "fence_ipmilan")
	require.NoError(t, os.Symlink(bin, agentLink))
	r := runProc(t, agentLink, agentArgs(p1, "off")...)
	assert.Equal(t, "Success: Powered OFF\n", r.stdout, r.stderr)
	assert.Equal(t, fence.StateOff, agentStatus(t, agent, p1))

	// A wrong password fails both, and ours names the BMC.
	bad := agentArgs(p1, "status")
	bad[12] = "wrong-password"
	a := runProc(t, bin, append(bad, "--driver", "ipmi")...)
	bad = agentArgs(p2, "status")
	bad[12] = "wrong-password"
	b := runProc(t, agent, bad...)
	assert.Equal(t, 1, b.code)
	assert.Equal(t, 1, a.code)
	assert.Contains(t, a.stderr, fmt.Sprintf("127.0.0.1:%d", p1.port))
	assert.Contains(t, a.stderr, "login denied")
	assert.NotContains(t, a.stderr, "wrong-password")
}

// The command lines fence-agents-remediation builds from its template
// (--key=value for every parameter, a bare --lanplus for a flag, and
// --action=reboot, or --action=status to check a template): fencectl
// installed as fence_ipmilan and the agent, each on a BMC of its own,
// return the same codes and leave the same states, a wrong password
// included.
func TestFenceAgentsRemediationCommandLines(t *testing.T) {
	agent := requireAgent(t)
	ours := proctest.FencectlAs(t, "fence_ipmilan")
	s1, p1 := simPeer(t, ipmisim.SimOptions{Password: secret})
	s2, p2 := simPeer(t, ipmisim.SimOptions{Password: secret})
	argv := func(p peer, password, action string) []string {
		return []string{"--ip=" + ipmisim.Host, "--ipport=" + strconv.Itoa(p.port), "--username=" + p.user,
			"--password=" + password, "--lanplus", "--cipher=3", "--action=" + action}
	}
	for _, step := range []struct{ password, action string }{
		{secret, "status"}, {secret, "reboot"}, {secret, "status"}, {secret, "off"}, {secret, "status"},
		{"wrong-password", "status"}, {"wrong-password", "reboot"}, {secret, "on"},
	} {
		a := runProc(t, ours, argv(p1, step.password, step.action)...)
		b := runProc(t, agent, argv(p2, step.password, step.action)...)
		assert.Equal(t, b.code, a.code, "exit code of %s (password %s): %s", step.action, step.password, a.stderr)
		assert.Equal(t, b.stdout, a.stdout, "stdout of %s", step.action)
		assert.NotContains(t, a.stdout+a.stderr, secret)
		t1, err := s1.Truth()
		require.NoError(t, err)
		t2, err := s2.Truth()
		require.NoError(t, err)
		assert.Equal(t, t2, t1, "state after %s", step.action)
	}
}
