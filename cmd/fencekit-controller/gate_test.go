package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/policy"
)

func TestBuildGatePolicy(t *testing.T) {
	var bg sync.WaitGroup
	o := options{Policy: policy.DefaultConfig()}
	g, err := buildGate(t.Context(), o, nil, &bg)
	require.NoError(t, err)
	now := time.Now()
	n := func(name string, unresponsive bool) policy.Node {
		return policy.Node{Name: name, Unresponsive: unresponsive}
	}
	cl := policy.Cluster{Now: now, Nodes: []policy.Node{n("a", true), n("b", true), n("c", false)}}
	d := g.Admit(t.Context(), policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl)
	assert.False(t, d.Admit, "the default storm guard: 2 of 3 unresponsive")
	assert.Equal(t, "storm-guard", d.Gate)

	o.Policy.StormGuard.MaxUnresponsivePercent = -1
	_, err = buildGate(t.Context(), o, nil, &bg)
	require.ErrorIs(t, err, policy.ErrConfig)
	assert.Contains(t, err.Error(), "--policy-file: policy config: stormGuard.maxUnresponsivePercent: ")
}

// --ceph-cluster puts the Ceph fence-group gate behind the policy's: a
// node of the group waits while Ceph is degraded, another node does not.
// The ceph command is a script that prints the outputs of a real cluster.
func TestBuildGateCeph(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ceph")
	status, err := filepath.Abs("../../fencegroup/testdata/status-pacific-osd-down-degraded.json")
	require.NoError(t, err)
	tree, err := filepath.Abs("../../fencegroup/testdata/osdtree-pacific.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
for a in "$@"; do
	case "$a" in
	status) exec cat '`+status+`' ;;
	tree) exec cat '`+tree+`' ;;
	esac
done
echo "unexpected: $*" >&2
exit 1
`), 0o755))

	o, err := parseFlags([]string{"--ceph-cluster=rook-ceph", "--ceph-command=" + script, "--ceph-id=fencer", "--ceph-interval=1m"}, env(nil), os.Stderr)
	require.NoError(t, err)
	require.NoError(t, o.loadPolicy())
	logs := &testtool.SyncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	g, err := buildGate(ctx, o, newLogger(logs, "text", 0), &bg)
	require.NoError(t, err)

	cl := policy.Cluster{Now: time.Now(), Nodes: []policy.Node{
		{Name: "worker-0", Unresponsive: true}, {Name: "worker-1"}, {Name: "worker-2"}, {Name: "gpu-0"}, {Name: "gpu-1"},
	}}
	var d policy.Decision
	require.Eventually(t, func() bool {
		cl.Now = time.Now()
		d = g.Admit(t.Context(), policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl)
		return !d.Admit && d.Gate == "ceph-fence-group/rook-ceph" && !strings.Contains(d.Reason, "not read yet")
	}, 10*time.Second, 10*time.Millisecond, "last decision: %v", d)
	assert.Contains(t, d.Reason, "PGs not active+clean")
	assert.Contains(t, d.Reason, "worker-0 is in its fence group")
	assert.Contains(t, logs.String(), "fencing refused")

	cl.Nodes[0].Unresponsive, cl.Nodes[3].Unresponsive = false, true
	d = g.Admit(t.Context(), policy.Candidate{Node: cl.Nodes[3], Step: "isolation"}, cl)
	assert.True(t, d.Admit, "gpu-0 runs no OSD: %v", d)
}
