package eaton

// The harness these tests share with the other PDU drivers' is
// internal/snmppdu/pdutest; these names keep the tests short.

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmppdu/pdutest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// secret is a community that no error or output may ever hold.
const secret = pdutest.Secret

// version is how a test reaches a simulator (pdutest.Version).
type version = pdutest.Version

var v1, v2, v3 = pdutest.V1, pdutest.V2, pdutest.V3

// openSim returns a device for s, closed when t ends.
func openSim(t testing.TB, s *snmpsim.Sim, v version, mod func(*Options)) *Device {
	t.Helper()
	return pdutest.OpenSim(t, kind, s, v, mod)
}

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context { return pdutest.Ctx(t) }

// method wraps a device for fence.Do, with fast polling.
func method(d fence.Device, plug string) *fence.Method { return pdutest.Method(name, d, plug) }

// result is what one run of a program printed and returned.
type result = proctest.Result

// runProc runs a program as a process (see proctest.Run).
func runProc(t testing.TB, bin string, args ...string) result {
	t.Helper()
	return proctest.Run(t, nil, bin, args...)
}

// agentName is the ClusterLabs agent the driver stands in for.
const agentName = "fence_eaton_snmp"

// requireAgent returns the agent's path, or skips t (fails it under
// CI=true) when it or net-snmp's tools are missing.
func requireAgent(t testing.TB) string {
	t.Helper()
	return pdutest.RequireAgent(t, agentName)
}

// agentArgs are the agent's options to run action on plug of s.
//
// The agent waits 2 s after a command by default; the tests need no wait
// (the benchmark gives it the same --power-wait 0).
func agentArgs(s *snmpsim.Sim, v version, plug, action string, extra ...string) []string {
	return pdutest.AgentArgs(s, v, plug, action, append([]string{"--power-wait", "0"}, extra...)...)
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }

// fencectl returns cmd/fencectl built once per test binary, or skips t
// when that fencectl does not know the eaton driver.
func fencectl(t testing.TB) string {
	t.Helper()
	return proctest.Fencectl(t, name, "--snmp-priv-prot")
}
