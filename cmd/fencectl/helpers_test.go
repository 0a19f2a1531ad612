package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testbin"
)

var slogDiscard = slog.New(slog.DiscardHandler)

// secret is a password no output may ever hold.
const secret = "Qz7-unl1kely-Pa55word"

// The probe driver exists only in the tests: it requires the agents'
// usual options (ip, username, password, plug), has a secret parameter of
// its own, and a device with neither a plug list nor a native cycle.
func init() {
	fence.Register(fence.Driver{
		Name:        "probe",
		Description: "Test device with the agents' required options",
		Agents:      []string{"fence_probe"},
		Params: []fence.ParamSpec{
			{Name: "ip", Required: true},
			{Name: "username", Required: true},
			{Name: "password", Required: true},
			{Name: "plug", Required: true},
			{Name: "community", Description: "SNMP community", Type: "string"},
			{Name: "lanplus", Description: "Use IPMI v2.0", Type: "boolean"},
		},
		Open: func(_ context.Context, o fence.OpenOptions) (fence.Device, error) {
			if pw, _ := o.Params.Get("password"); pw == "wrong-password" {
				return nil, fence.NotDone(fmt.Errorf("probe: %w", fence.ErrLoginDenied))
			}
			return &probeDevice{st: fence.StateOn}, nil
		},
	})
}

type probeDevice struct {
	mu sync.Mutex
	st fence.State
}

func (p *probeDevice) Status(_ context.Context, plug string) (fence.State, error) {
	if plug != "n1" {
		return fence.StateUnknown, fmt.Errorf("probe: plug %q: %w", plug, fence.ErrUnknownPlug)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st, nil
}

func (p *probeDevice) Set(_ context.Context, plug string, s fence.State) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st = s
	return nil
}

// result is what one run of a tool printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func noEnv(string) string { return "" }

// runCLI runs fencectl in-process with args (program name excluded).
func runCLI(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return runAs(t, "fencectl", stdin, args...)
}

// runAs runs fencectl in-process under the program name prog.
func runAs(t testing.TB, prog, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, append([]string{prog}, args...), strings.NewReader(stdin), &out, &errb, noEnv)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// runProc runs a program as a process.
func runProc(t testing.TB, env []string, stdin, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run %s: %v", bin, err)
		}
		code = ee.ExitCode()
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// buildFencectl builds the program into a temporary directory (or takes it
// prebuilt, see internal/testbin) and returns the binary's path.
func buildFencectl(t testing.TB) string {
	t.Helper()
	bin, err := testbin.Build("github.com/fencekit/fencekit/cmd/fencectl", t.TempDir())
	require.NoError(t, err)
	return bin
}

const dummyPath = "/usr/sbin/fence_dummy"

// requireDummy skips the test when fence_dummy is not installed, or fails
// it under CI=true.
func requireDummy(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(dummyPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: install fence-agents (apt-get install fence-agents, or run make deps)", dummyPath)
		}
		t.Skipf("%s is missing: install fence-agents to compare with the reference agent", dummyPath)
	}
	return dummyPath
}

// runDummy runs fence_dummy.
func runDummy(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return runProc(t, []string{"PYTHONWARNINGS=ignore"}, stdin, requireDummy(t), args...)
}

var (
	logLine  = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (ERROR|WARNING|INFO|DEBUG): (.*)$`)
	rootLine = regexp.MustCompile(`^(ERROR|WARNING|INFO|DEBUG):root:(.*)$`)
)

// messages returns the "LEVEL: message" of the agents' log lines in
// stderr (timestamped, or Python's root format), without fencekit's
// detailed error lines ("fence: ...") and without blank lines.
func messages(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		var m []string
		if m = logLine.FindStringSubmatch(l); m == nil {
			m = rootLine.FindStringSubmatch(l)
		}
		if m == nil || strings.HasPrefix(m[2], "fence: ") {
			continue
		}
		out = append(out, m[1]+": "+m[2])
	}
	return out
}

// details returns fencekit's detailed error lines.
func details(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if m := logLine.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[2], "fence: ") {
			out = append(out, m[2])
		}
	}
	return out
}

// stateFile returns a path in a temporary directory holding content, or
// no file when content is "-".
func stateFile(t testing.TB, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "status")
	if content != "-" {
		require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
	}
	return f
}

func readFile(t testing.TB, f string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	return string(b)
}
