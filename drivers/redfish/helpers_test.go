package redfish_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/fencekit/fencekit/internal/proctest"
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

// runProc runs a program as a process (see proctest.Run).
func runProc(t testing.TB, env []string, bin string, args ...string) result {
	t.Helper()
	r := proctest.Run(t, env, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
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

// fencectl returns cmd/fencectl built once per test binary, installed
// under name (fencectl, or fence_redfish to be picked by its name as the
// agents are).
func fencectl(t testing.TB, name string) string {
	t.Helper()
	if name == "fencectl" {
		return proctest.Fencectl(t, "", "")
	}
	return proctest.FencectlAs(t, name)
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }
