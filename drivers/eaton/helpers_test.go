package eaton

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmppdu/pdutest"
)

// secret is a community that no error or output may ever hold.
const secret = pdutest.Secret

// agentName is the ClusterLabs agent the driver stands in for.
const agentName = "fence_eaton_snmp"

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context { return pdutest.Ctx(t) }

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }
