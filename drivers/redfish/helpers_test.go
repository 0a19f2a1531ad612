package redfish_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/redfishsim"
)

// agentPath is the ClusterLabs agent the driver stands in for.
const agentPath = "/usr/sbin/fence_redfish"

// requireAgent skips when fence_redfish is not installed, or fails under
// CI=true.
func requireAgent(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(agentPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: install fence-agents (apt-get install fence-agents)", agentPath)
		}
		t.Skipf("%s is missing: install fence-agents to compare with the reference agent", agentPath)
	}
}

// result is what one run of a program printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runProc runs a program as a process.
func runProc(t testing.TB, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
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

// agentArgs are the options both tools take to reach s: https, Basic
// authentication, the certificate not verified.
func agentArgs(s *redfishsim.Server, action string, extra ...string) []string {
	return append([]string{"--ip", s.Host(), "--ipport", strconv.Itoa(s.Port()),
		"--username", s.Username(), "--password", s.Password(), "--ssl-insecure", "--action", action}, extra...)
}

// runAgent runs fence_redfish against s.
func runAgent(t testing.TB, s *redfishsim.Server, action string, extra ...string) result {
	t.Helper()
	requireAgent(t)
	return runProc(t, []string{"PYTHONWARNINGS=ignore"}, agentPath, agentArgs(s, action, extra...)...)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// fencectl builds examples/fencectl once per test binary and returns the
// path of the program, installed under name (fencectl, or fence_redfish to
// be picked by its name as the agents are).
func fencectl(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "redfish-fencectl-")
		if buildErr != nil {
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(buildDir, "fencectl"), "github.com/fencekit/fencekit/examples/fencectl")
		buildOut, buildErr = cmd.CombinedOutput()
		if buildErr == nil {
			buildErr = os.Symlink("fencectl", filepath.Join(buildDir, "fence_redfish"))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build examples/fencectl: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
