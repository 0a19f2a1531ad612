package brocade

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/proctest"
)

// These tests put fencekit and the ClusterLabs agent fence_brocade (which
// runs OpenSSH's ssh under pexpect) on the same live switch, in turns, and
// check that each reads the state the other left; and they run fencectl
// and fence_brocade through the same steps, each on a switch of its own.

// result is what one run of a program printed and returned.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runProc runs a program as a process (see proctest.Run).
func runProc(t testing.TB, bin string, args ...string) result {
	t.Helper()
	r := proctest.Run(t, nil, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code, took: r.Took}
}

// requireAgent returns fence_brocade's path, or skips the test (fails it
// under CI=true) when it or ssh is missing.
func requireAgent(t testing.TB) string {
	t.Helper()
	brocadesim.Require(t, "ssh", "openssh-client")
	return brocadesim.Require(t, "fence_brocade", "fence-agents")
}

// agentArgs are fence_brocade's options for sw, with the switch's
// known_hosts file so that ssh checks the key (and root's known_hosts is
// left alone), and a login timeout for a loaded machine. With key, it logs
// in with the client key.
func agentArgs(sw *brocadesim.Switch, plug, action string, key bool) []string {
	args := []string{"--ip", brocadesim.Host, "--ipport", strconv.Itoa(sw.Port), "--username", sw.User,
		"--ssh", "--ssh-options=-oUserKnownHostsFile=" + sw.KnownHosts, "--action", action}
	if key {
		args = append(args, "--identity-file", sw.ClientKey)
	} else {
		args = append(args, "--password", sw.Password)
	}
	if plug != "" {
		args = append(args, "--plug", plug)
	}
	// A loaded machine can take the agent (python, pexpect, ssh) past its
	// default login timeout of 5 s.
	return append(args, "--login-timeout=20")
}

// fencectlArgs are fencectl's options for the same: its own names for the
// known_hosts file.
func fencectlArgs(sw *brocadesim.Switch, plug, action string) []string {
	args := []string{"--driver", "brocade", "--ip", brocadesim.Host, "--ipport", strconv.Itoa(sw.Port),
		"--username", sw.User, "--password", sw.Password, "--known-hosts", sw.KnownHosts, "--action", action}
	if plug != "" {
		args = append(args, "--plug", plug)
	}
	return args
}

func agentStatus(t *testing.T, agent string, sw *brocadesim.Switch, plug string) fence.State {
	t.Helper()
	r := runProc(t, agent, agentArgs(sw, plug, "status", false)...)
	switch {
	case r.code == 0 && r.stdout == "Status: ON\n":
		return fence.StateOn
	case r.code == 2 && r.stdout == "Status: OFF\n":
		return fence.StateOff
	}
	t.Fatalf("fence_brocade status: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	return fence.StateUnknown
}

func TestAgreeWithFenceBrocade(t *testing.T) {
	agent := requireAgent(t)
	sw := start(t, brocadesim.Options{Ports: 8})
	for _, key := range []bool{false, true} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			o := passwordOptions(sw)
			if key {
				o = keyOptions(sw)
			}
			d := openDevice(t, o)
			const plug = "3"
			ours := func(a fence.Action) {
				t.Helper()
				res, err := fence.Do(ctx(t), method(d, plug), a)
				require.NoError(t, err, "fencekit %v", a)
				if a == fence.ActionOff {
					require.True(t, res.Fenced())
				}
			}
			theirs := func(action, stdout string) {
				t.Helper()
				r := runProc(t, agent, agentArgs(sw, plug, action, key)...)
				require.Equal(t, 0, r.code, "fence_brocade %s: %s", action, r.stderr)
				assert.Equal(t, stdout, r.stdout, "fence_brocade %s", action)
			}
			agree := func(want fence.State, after string) {
				t.Helper()
				st, err := d.Status(ctx(t), plug)
				require.NoError(t, err)
				assert.Equal(t, want, st, "fencekit's status after %s", after)
				assert.Equal(t, want, agentStatus(t, agent, sw, plug), "fence_brocade's status after %s", after)
				assert.Equal(t, want, truth(t, sw, plug), "the switch's state after %s", after)
			}
			require.NoError(t, sw.SetTruth(plug, fence.StateOn))

			ours(fence.ActionOff)
			agree(fence.StateOff, "fencekit off")
			theirs("on", "Success: Powered ON\n")
			agree(fence.StateOn, "fence_brocade on")
			theirs("off", "Success: Powered OFF\n")
			agree(fence.StateOff, "fence_brocade off")
			theirs("off", "Success: Already OFF\n")
			ours(fence.ActionOn)
			agree(fence.StateOn, "fencekit on")
			ours(fence.ActionReboot)
			agree(fence.StateOn, "fencekit reboot")

			// Their list and ours.
			require.NoError(t, sw.SetTruth("6", fence.StateOff))
			r := runProc(t, agent, agentArgs(sw, "", "list-status", key)...)
			require.Equal(t, 0, r.code, r.stderr)
			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			var b strings.Builder
			for _, p := range plugs {
				fmt.Fprintf(&b, "%s,%s,%s\n", p.ID, p.Name, p.State)
			}
			assert.Equal(t, r.stdout, b.String())
			require.NoError(t, sw.SetTruth("6", fence.StateOn))
			assert.Equal(t, 1, d.Logins(), "one login for all of fencekit's calls")
		})
	}
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }

// buildFencectl returns cmd/fencectl built once per test binary, or skips t
// when that fencectl does not know the brocade driver.
func buildFencectl(t testing.TB) string {
	t.Helper()
	return proctest.Fencectl(t, "brocade", "--known-hosts")
}

// fencectl and fence_brocade, each on a switch of its own, run the same
// actions: they print the same lines, return the same codes, and leave
// their switches in the same state.
func TestFencectlAgreesWithFenceBrocade(t *testing.T) {
	agent := requireAgent(t)
	bin := buildFencectl(t)
	s1 := start(t, brocadesim.Options{Ports: 8, Disabled: []int{6}})
	s2 := start(t, brocadesim.Options{Ports: 8, Disabled: []int{6}})
	const plug = "2"
	for _, action := range []string{"status", "off", "off", "status", "on", "on", "status", "list", "list-status", "monitor", "OFF", "enable"} {
		a := runProc(t, bin, fencectlArgs(s1, plug, action)...)
		b := runProc(t, agent, agentArgs(s2, plug, action, false)...)
		assert.Equal(t, b.stdout, a.stdout, "stdout of %s", action)
		assert.Equal(t, b.code, a.code, "exit code of %s: %s", action, a.stderr)
		assert.NotContains(t, a.stdout+a.stderr, s1.Password)
		for i := 0; i < 8; i++ {
			assert.Equal(t, truth(t, s2, fmt.Sprint(i)), truth(t, s1, fmt.Sprint(i)), "port %d after %s", i, action)
		}
	}

	// Installed under the agent's name, fencectl takes the agent's
	// options, --ssh-options included.
	agentLink := filepath.Join(t.TempDir(), "fence_brocade")
	require.NoError(t, os.Symlink(bin, agentLink))
	r := runProc(t, agentLink, agentArgs(s1, plug, "off", false)...)
	assert.Equal(t, "Success: Powered OFF\n", r.stdout, r.stderr)
	assert.Equal(t, fence.StateOff, agentStatus(t, agent, s1, plug))
	r = runProc(t, agentLink, agentArgs(s1, plug, "on", true)...)
	assert.Equal(t, "Success: Powered ON\n", r.stdout, r.stderr)
	assert.Equal(t, fence.StateOn, agentStatus(t, agent, s1, plug))

	// A port the switch lacks: both fail (the agent with a KeyError),
	// ours says why.
	a := runProc(t, bin, fencectlArgs(s1, "42", "off")...)
	b := runProc(t, agent, agentArgs(s2, "42", "off", false)...)
	assert.Equal(t, 1, b.code)
	assert.Equal(t, 1, a.code)
	assert.Contains(t, a.stderr, "unknown plug \"42\"")

	// A wrong password fails both; ours at once, naming the switch.
	bad := fencectlArgs(s1, plug, "status")
	bad[9] = "wrong-password"
	a = runProc(t, bin, bad...)
	bad = agentArgs(s2, plug, "status", false)
	bad[11] = "wrong-password"
	b = runProc(t, agent, append(bad, "--login-timeout=5")...)
	assert.Equal(t, 1, b.code)
	assert.Equal(t, 1, a.code)
	assert.Contains(t, a.stderr, "Unable to connect/login to fencing device")
	assert.Contains(t, a.stderr, fmt.Sprintf("brocade ssh 127.0.0.1:%d: login: login denied", s1.Port))
	assert.NotContains(t, a.stderr, "wrong-password")
	assert.Less(t, a.took, b.took, "fence_brocade waits out its login timeout")

	// An unknown host key: ours refuses before logging in; the agent's
	// ssh, told to check strictly, too.
	other := start(t, brocadesim.Options{Ports: 2})
	badKH := fencectlArgs(s1, plug, "status")
	badKH[11] = other.KnownHosts
	a = runProc(t, bin, badKH...)
	assert.Equal(t, 1, a.code)
	assert.Contains(t, a.stderr, "host key not trusted")
	assert.Contains(t, a.stderr, s1.Fingerprint)
}

// A port disabled only for now (portdisable) is not fenced: a switch reboot
// or a portenable reconnects the node to its storage. fencekit reads it as
// on and its off sends portCfgPersistentDisable; fence_brocade reads it as
// off and sends nothing ("Already OFF"), leaving the port able to come back.
// This is where the two differ, on purpose.
func TestPortDisabledForNowIsNotFenced(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 8})
	d := openDevice(t, passwordOptions(sw))
	const plug = "4"
	require.NoError(t, sw.DisableNow(plug))

	st, err := d.Status(ctx(t), plug)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "a disable that is not persistent is no fence")

	res, err := fence.Do(ctx(t), method(d, plug), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.False(t, res.Already, "the persistent disable was sent")
	disabled, persistent, err := sw.PortFlags(plug)
	require.NoError(t, err)
	assert.True(t, disabled && persistent, "now persistently disabled")
	cmds, err := sw.Commands()
	require.NoError(t, err)
	assert.Contains(t, cmds, "portCfgPersistentDisable "+plug)

	// A persistently disabled port reads as off at once.
	st, err = d.Status(ctx(t), plug)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)

	t.Run("fence_brocade", func(t *testing.T) {
		agent := requireAgent(t)
		const plug = "5"
		require.NoError(t, sw.DisableNow(plug))
		assert.Equal(t, fence.StateOff, agentStatus(t, agent, sw, plug), "the agent reads a temporary disable as off")
		r := runProc(t, agent, agentArgs(sw, plug, "off", false)...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "Success: Already OFF\n", r.stdout)
		_, persistent, err := sw.PortFlags(plug)
		require.NoError(t, err)
		assert.False(t, persistent, "the agent left the port able to come back")
	})
}
