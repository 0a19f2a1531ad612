//go:build tools

// Package tools records kwok, the simulated kubelets that internal/kubetest
// runs beside the control plane, so that go.mod and go.sum pin it. kwok
// v0.8.0 requires the k8s.io libraries at v0.36, so it lives in a module of
// its own and shares no build with the Kubernetes v1.37 binaries.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
