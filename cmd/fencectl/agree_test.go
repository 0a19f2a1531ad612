package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run fencectl (driver fake, --state-file) and the reference
// agent fence_dummy (--type file --status-file) through the same steps and
// compare what they print and return.

// tool runs one of the two tools on a status file with an action; stdin
// mode when viaStdin.
type tool func(t *testing.T, file, action string, viaStdin bool, extra ...string) result

func ours(t *testing.T, file, action string, viaStdin bool, extra ...string) result {
	if viaStdin {
		in := "driver=fake\nstatus_file=" + file + "\naction=" + action + "\n" + strings.Join(extra, "\n")
		return runCLI(t, in)
	}
	return runCLI(t, "", append([]string{"--driver", "fake", "--state-file", file, "--action", action}, extra...)...)
}

func theirs(t *testing.T, file, action string, viaStdin bool, extra ...string) result {
	if viaStdin {
		in := "type=file\nstatus_file=" + file + "\naction=" + action + "\n" + strings.Join(extra, "\n")
		return runDummy(t, in)
	}
	return runDummy(t, "", append([]string{"--type", "file", "--status-file", file, "--action", action}, extra...)...)
}

// agree runs both tools and asserts the same stdout, exit code and log
// messages (after the timestamp; fencekit's detailed lines left out).
func agree(t *testing.T, a, b result, what string) {
	t.Helper()
	assert.Equal(t, b.stdout, a.stdout, "stdout: %s", what)
	assert.Equal(t, b.code, a.code, "exit code: %s", what)
	assert.Equal(t, messages(b.stderr), messages(a.stderr), "log messages: %s\nours:\n%s\ntheirs:\n%s", what, a.stderr, b.stderr)
}

func TestAgreeWithFenceDummy(t *testing.T) {
	requireDummy(t)
	for _, viaStdin := range []bool{false, true} {
		t.Run(fmt.Sprintf("stdin=%v", viaStdin), func(t *testing.T) {
			f1, f2 := stateFile(t, "on"), stateFile(t, "on")
			for _, action := range []string{"status", "off", "off", "status", "on", "on", "reboot", "monitor",
				"validate-all", "OFF", "reboot", "status", "meta-data-is-not-an-action", "bogus"} {
				a := ours(t, f1, action, viaStdin)
				b := theirs(t, f2, action, viaStdin)
				agree(t, a, b, action)
				assert.Equal(t, readFile(t, f2), readFile(t, f1), "status file after %s", action)
			}
		})
	}
}

func TestAgreeOnBadStatusFiles(t *testing.T) {
	requireDummy(t)
	for _, content := range []string{"garbage", "", "on\n", " off", "ON", "Off", "-"} {
		for _, action := range []string{"status", "off", "on", "reboot", "monitor"} {
			for _, viaStdin := range []bool{false, true} {
				f1, f2 := stateFile(t, content), stateFile(t, content)
				what := fmt.Sprintf("file %q, action %s, stdin %v", content, action, viaStdin)
				a := ours(t, f1, action, viaStdin)
				b := theirs(t, f2, action, viaStdin)
				agree(t, a, b, what)
				if b.code == 1 {
					// Both failed: same message, and ours adds its detail.
					require.NotEmpty(t, messages(a.stderr), what)
					assert.Len(t, details(a.stderr), 1, what)
				}
				_, e1 := os.Stat(f1)
				_, e2 := os.Stat(f2)
				if e2 == nil {
					assert.Equal(t, readFile(t, f2), readFile(t, f1), what)
				} else {
					assert.Error(t, e1, what)
				}
			}
		}
	}
}

func TestAgreeOnUsageErrors(t *testing.T) {
	requireDummy(t)
	f := stateFile(t, "on")
	for _, extra := range [][]string{
		{"--delay", "abc"},
		{"--retry-on", "x"},
		{"--power-timeout", "soon"},
		{"--bogus-opt"},
		{"extra_arg"},
		{"--status-file"},
	} {
		a := ours(t, f, "status", false, extra...)
		b := theirs(t, f, "status", false, extra...)
		agree(t, a, b, strings.Join(extra, " "))
	}
	for _, extra := range []string{"delay=abc", "retry_on=x", "verbose=maybe"} {
		a := ours(t, f, "status", true, extra)
		b := theirs(t, f, "status", true, extra)
		agree(t, a, b, extra)
	}
}

// Both tools act, in turn, on the same status file.
func TestAlternateOnSameFile(t *testing.T) {
	requireDummy(t)
	f := stateFile(t, "on")
	steps := []struct {
		tool   tool
		action string
		stdout string
		code   int
	}{
		{ours, "off", "Success: Powered OFF\n", 0},
		{theirs, "status", "Status: OFF\n", 2},
		{theirs, "off", "Success: Already OFF\n", 0},
		{theirs, "on", "Success: Powered ON\n", 0},
		{ours, "status", "Status: ON\n", 0},
		{ours, "on", "Success: Already ON\n", 0},
		{ours, "reboot", "Success: Rebooted\n", 0},
		{theirs, "status", "Status: ON\n", 0},
		{theirs, "off", "Success: Powered OFF\n", 0},
		{ours, "status", "Status: OFF\n", 2},
		{ours, "on", "Success: Powered ON\n", 0},
		{theirs, "on", "Success: Already ON\n", 0},
	}
	for i, s := range steps {
		r := s.tool(t, f, s.action, i%3 == 2)
		assert.Equal(t, s.stdout, r.stdout, "step %d: %s", i, s.action)
		assert.Equal(t, s.code, r.code, "step %d: %s", i, s.action)
	}
}

// The built program, run as a process, agrees too; and installed under
// fence_dummy's name it is a drop-in for the agent's file mode.
func TestBinaryAgreesWithFenceDummy(t *testing.T) {
	requireDummy(t)
	bin := buildFencectl(t)
	agent := filepath.Join(filepath.Dir(bin), "fence_dummy")
	require.NoError(t, os.Symlink(bin, agent))
	f1, f2, f3 := stateFile(t, "on"), stateFile(t, "on"), stateFile(t, "on")
	for _, action := range []string{"status", "off", "off", "status", "on", "on", "reboot", "monitor"} {
		a := runProc(t, nil, "", bin, "--driver", "fake", "--state-file", f1, "-o", action)
		b := theirs(t, f2, action, false)
		agree(t, a, b, action)
		c := runProc(t, nil, "", agent, "--status-file", f3, "-o", action)
		agree(t, c, b, "as fence_dummy: "+action)
		d := runProc(t, nil, "status_file="+f3+"\naction="+action+"\n", agent)
		if action == "off" || action == "on" {
			// Already there after the run just before.
			assert.Contains(t, d.stdout, "Success: Already ", action)
		} else {
			agree(t, d, b, "as fence_dummy, stdin: "+action)
		}
	}
	require.NoError(t, os.WriteFile(f1, []byte("garbage"), 0o644))
	require.NoError(t, os.WriteFile(f2, []byte("garbage"), 0o644))
	a := runProc(t, nil, "", bin, "--driver", "fake", "--state-file", f1, "-o", "off")
	b := theirs(t, f2, "off", false)
	agree(t, a, b, "garbage")
	assert.Equal(t, 1, a.code)
	assert.Contains(t, a.stderr, "ERROR: Failed: Unable to obtain correct plug status or plug is not available\n")
}
