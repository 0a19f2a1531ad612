//go:build tools

// Package etcd records the etcd server that scripts/kube-binaries.sh builds,
// so that go.mod and go.sum pin it. The build tag keeps every ordinary build
// from compiling it.
package etcd

import (
	_ "go.etcd.io/etcd/server/v3"
)
