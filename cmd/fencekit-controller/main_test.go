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
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	kubetest.Main(m)
}
