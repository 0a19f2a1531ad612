package main

import (
	"flag"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// TestMain stops the shared API server of the integration tests. Each run
// of the program logs to its own buffer through its manager's logger;
// controller-runtime's global logger (set by realMain) discards.
//
// The package's parallel phase runs TestControlPlaneForceDetach's two
// cases (mostly waiting out the controller manager's 6 minutes) beside the
// end-to-end lane, one test at a time (controlplane_test.go): every test
// waiting for the lane holds a parallel slot meanwhile, so -parallel, by
// default GOMAXPROCS (2 on 2 cores), is raised to 32 unless given.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !given {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < 32 {
			_ = f.Value.Set("32")
		}
	}
	kubetest.Main(m)
}
