//go:build tools

// Package tools records the commands that scripts/kube-binaries.sh builds,
// so that go.mod and go.sum pin them. The build tag keeps every ordinary
// build from compiling it.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
