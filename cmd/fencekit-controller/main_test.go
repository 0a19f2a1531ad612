package main

import (
	"testing"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// TestMain stops the shared API server of the integration tests.
func TestMain(m *testing.M) { kubetest.Main(m) }
