//go:build tools

// Package tools records Cluster API's core manager, which the kubetest
// harness runs beside the control plane for the MachineHealthCheck tests,
// so that go.mod and go.sum pin it. Cluster API v1.14 requires the k8s.io
// libraries at v0.36 (and controller-runtime v0.24), so it lives in a module
// of its own and shares no build with the Kubernetes v1.37 binaries.
package tools

import (
	_ "sigs.k8s.io/cluster-api/core"
)
