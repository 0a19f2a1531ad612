package main

import (
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// TestMain stops the shared API server of the integration tests. Each run
// of the program logs to its own buffer through its manager's logger;
// controller-runtime's global logger (set by realMain) discards.
//
// The end-to-end tests (TestControlPlane*) each start a control plane of
// their own and are parallel: they run together once the tests on the
// shared API server are done, four at a time unless -test.parallel says
// otherwise (the default, GOMAXPROCS, is two on CI's machine), so that
// TestControlPlaneForceDetach's two control planes, which wait out the
// controller manager's 6-minute force detach, run beside the others
// rather than after them.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	kubetest.MainParallel(m, 4)
}
