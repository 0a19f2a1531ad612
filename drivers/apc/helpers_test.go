package apc

// The suite these tests share with the other PDU drivers' is
// internal/snmppdu/pdutest (pdu, in suite_test.go); these names keep the
// APC-only tests short.

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

// agentName is the ClusterLabs agent the driver stands in for.
const agentName = "fence_apc_snmp"

var v2 = pdutest.V2

// openSim returns a device for s, reached with SNMPv2c and changed by mod,
// closed when t ends.
func openSim(t testing.TB, s *snmpsim.Sim, mod func(*Options)) *Device {
	t.Helper()
	return pdu.Open(t, s, v2, mod)
}

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context { return pdutest.Ctx(t) }

// method wraps a device for fence.Do, with fast polling.
func method(d fence.Device, plug string) *fence.Method { return pdu.Method(d, plug) }

// mustTruth returns the simulator's state of plug.
func mustTruth(t testing.TB, s *snmpsim.Sim, plug string) fence.State {
	t.Helper()
	return pdutest.Truth(t, s, plug)
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }
