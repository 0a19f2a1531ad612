//go:build linux

package fencegroup_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/internal/cephtest"
	"github.com/fencekit/fencekit/policy"
)

// The CLI source, the health, the labels and the gate on a real Ceph
// cluster through both flows of the design: an OSD node stops answering
// with its OSDs up (fenced, clean PGs), then its OSD dies (the PGs degrade,
// another node of the group waits), Ceph marks the OSD out and recovers
// (clean again), and the OSD comes back.
func TestRealCeph(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Ceph cluster")
	}
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	c := cephtest.Start(t, "worker-0", "worker-1", "worker-2")
	phase("cluster started")
	cli := &fencegroup.CLI{Conf: c.Conf, ID: "admin", Keyring: c.Keyring, Timeout: 20 * time.Second}
	h, err := fencegroup.NewHealth("rook-ceph", cli, fencegroup.HealthOptions{})
	require.NoError(t, err)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{})
	require.NoError(t, err)
	var snap fencegroup.Snapshot
	budget := func() fencegroup.Budget {
		snap, err = h.Refresh(t.Context())
		require.NoError(t, err)
		return snap.Budget(fencegroup.Rules{})
	}
	// Before the manager's first statistics, the monitors report no PGs
	// and no pools: the CLI counts the pools from the OSD map then, and
	// the budget is not clean until the PGs are.
	c.WaitFor("all PGs clean", func() bool { return budget().Clean })
	phase("all PGs clean")
	assert.Equal(t, "all 17 PGs active+clean", snap.Budget(fencegroup.Rules{}).Reason)
	assert.Equal(t, fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}, snap.Status.OSDs)
	assert.Equal(t, 2, snap.Status.NumPools)
	pools, err := fencegroup.ParsePoolList([]byte(c.Ceph("osd", "pool", "ls", "--format", "json")))
	require.NoError(t, err)
	assert.Equal(t, 2, pools, "the OSD map's pools, as the status counts them")

	// The labels from the real CRUSH map.
	machines := []fencegroup.Machine{{Name: "worker-0"}, {Name: "worker-1"}, {Name: "worker-2"}, {Name: "gpu-0"}}
	plan, err := fencegroup.Rules{}.Labels("rook-ceph", snap.Status.Placement, machines)
	require.NoError(t, err)
	var changes []string
	for _, ch := range plan.Changes {
		changes = append(changes, ch.String())
	}
	assert.Equal(t, []string{
		"add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0 of Ceph cluster rook-ceph)",
		"add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1 of Ceph cluster rook-ceph)",
		"add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2 of Ceph cluster rook-ceph)",
	}, changes)

	in := map[string]string{fencegroup.Label("rook-ceph"): ""}
	nodes := []policy.Node{{Name: "worker-0", Labels: in}, {Name: "worker-1", Labels: in}, {Name: "worker-2", Labels: in}}
	ask := func(i int) policy.Decision {
		cl := policy.Cluster{Now: time.Now(), Nodes: nodes}
		return g.Admit(t.Context(), policy.Candidate{Node: nodes[i], Step: "power-management"}, cl)
	}

	// worker-1 stops answering, its OSD up: admitted.
	nodes[1].Unresponsive = true
	assert.True(t, ask(1).Admit)
	nodes[1].Fencing = true

	// The fencing takes its OSD down: the PGs degrade.
	c.Kill("osd.1")
	c.WaitFor("PGs degraded", func() bool { return !budget().Clean })
	phase("osd.1 killed: " + snap.Budget(fencegroup.Rules{}).Reason)
	osd1 := slicesIndex(snap.Status.Placement, 1)
	require.GreaterOrEqual(t, osd1, 0)

	// worker-2 stops answering meanwhile: it waits, first for worker-1,
	// then, once worker-1 is back, for the PGs.
	nodes[2].Unresponsive = true
	d := ask(2)
	assert.False(t, d.Admit)
	assert.Contains(t, d.Reason, "in Ceph cluster rook-ceph; worker-2 is in its fence group")
	assert.Contains(t, d.Reason, "PGs not active+clean (")
	nodes[1].Fencing, nodes[1].Unresponsive = false, false
	assert.False(t, ask(2).Admit)

	// Ceph marks osd.1 out and recovers without it: worker-2 may go.
	c.WaitFor("recovered without osd.1", func() bool {
		return budget().Clean && snap.Status.OSDs == fencegroup.OSDCounts{Total: 3, Up: 2, In: 2}
	})
	phase("recovered without osd.1")
	assert.Equal(t, fencegroup.OSDDown, snap.Status.Placement[slicesIndex(snap.Status.Placement, 1)].State)
	assert.True(t, ask(2).Admit)

	// With ReleaseDownMachines, worker-1 (its only OSD down) leaves the
	// group; by default it stays.
	plan, err = fencegroup.Rules{ReleaseDownMachines: true}.Labels("rook-ceph", snap.Status.Placement, []fencegroup.Machine{
		{Name: "worker-1", Labels: in}, {Name: "worker-2", Labels: in},
	})
	require.NoError(t, err)
	require.Len(t, plan.Changes, 1)
	assert.Equal(t, "remove fencegroup.rook.io/rook-ceph from worker-1 (its OSDs of Ceph cluster rook-ceph are all down (osd.1))", plan.Changes[0].String())

	// osd.1 comes back: Ceph moves data back, clean again in the end.
	c.StartOSD("worker-1")
	c.WaitFor("osd.1 back and clean", func() bool {
		return budget().Clean && snap.Status.OSDs == fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}
	})
	phase("osd.1 back, all PGs clean")

	// The real ceph command's failures: credentials refused, monitors
	// unreachable.
	bad := filepath.Join(c.Dir, "bad.keyring")
	c.Run("ceph-authtool", "--create-keyring", bad, "--gen-key", "-n", "client.admin")
	_, err = (&fencegroup.CLI{Conf: c.Conf, ID: "admin", Keyring: bad, Timeout: 10 * time.Second}).Fetch(t.Context())
	var ce *fencegroup.CommandError
	require.ErrorAs(t, err, &ce)
	t.Logf("bad key: %v", err)
	assert.Positive(t, ce.Exit)
	assert.Contains(t, err.Error(), "fencegroup: ceph status --format json: exit status ")
	assert.NotContains(t, err.Error(), bad, "the keyring path is not quoted")
	key, err := os.ReadFile(bad)
	require.NoError(t, err)
	for _, f := range strings.Fields(string(key)) {
		if strings.HasPrefix(f, "AQ") {
			assert.NotContains(t, ce.Error(), f, "the key is not quoted")
		}
	}

	dead := filepath.Join(c.Dir, "dead.conf")
	require.NoError(t, os.WriteFile(dead, []byte(fmt.Sprintf("[global]\nmon host = v2:127.0.0.1:%d\nms bind msgr1 = false\n", cephtest.FreePort(t))), 0o600))
	began := time.Now()
	_, err = (&fencegroup.CLI{Conf: dead, ID: "admin", Keyring: c.Keyring, Timeout: 10 * time.Second}).Fetch(t.Context())
	require.ErrorAs(t, err, &ce)
	t.Logf("no monitor: %v (after %v)", err, time.Since(began).Round(time.Millisecond))
	assert.Positive(t, ce.Exit, "ceph gave up by itself (--connect-timeout 5), before the kill at 10 s")
	assert.Contains(t, err.Error(), "timed out")
}

// slicesIndex returns the index of OSD id in osds, -1 when absent.
func slicesIndex(osds []fencegroup.OSD, id int) int {
	for i, o := range osds {
		if o.ID == id {
			return i
		}
	}
	return -1
}
