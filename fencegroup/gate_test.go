package fencegroup_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/policy"
)

var t0 = time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)

func newClock() *fencetest.Clock { return fencetest.NewClock(t0) }

// status returns a status with the given PG counts (clean first) and the
// placement.
func statusOf(clean, dirty int, osds []fencegroup.OSD) *fencegroup.Status {
	st := &fencegroup.Status{NumPGs: int64(clean + dirty), NumPools: 3, Placement: osds,
		PGs: []fencegroup.PGCount{{State: "active+clean", Count: int64(clean)}}}
	if dirty > 0 {
		st.PGs = append(st.PGs, fencegroup.PGCount{State: "active+undersized+degraded", Count: int64(dirty)})
	}
	return st
}

// node returns a policy node; labelled puts it in rook-ceph's group by label.
func node(name string, labelled bool, state string) policy.Node {
	n := policy.Node{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}
	if labelled {
		n.Labels[fencegroup.Label("rook-ceph")] = ""
	}
	switch state {
	case "unresponsive":
		n.Unresponsive = true
	case "fencing":
		n.Unresponsive, n.Fencing = true, true
	}
	return n
}

func TestGate(t *testing.T) {
	const name = "ceph-fence-group/rook-ceph"
	down1 := placement(map[string]fencegroup.OSDState{"worker-1": fencegroup.OSDDown})
	for _, tc := range []struct {
		name      string
		rules     fencegroup.Rules
		status    *fencegroup.Status // nil: never read
		failFirst bool               // the first read failed
		age       time.Duration      // of the status at decision time
		candidate policy.Node
		others    []policy.Node
		admit     bool
		reason    string
	}{
		{name: "outside the group passes through a degraded cluster", status: statusOf(244, 12, nil),
			candidate: node("gpu-0", false, "unresponsive"), admit: true},
		{name: "outside the group passes through a stale health", status: statusOf(256, 0, nil), age: time.Hour,
			candidate: node("gpu-0", false, "unresponsive"), admit: true},
		// The second flow of Rook's Ceph fencing design: OSDs up on the
		// node to fence, PGs clean.
		{name: "clean and no other machine unavailable", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-1", true, "unresponsive"),
			others:    []policy.Node{node("worker-0", true, ""), node("worker-2", true, ""), node("gpu-0", false, "fencing")},
			admit:     true},
		// The Ceph fencing design's first flow: the node's OSDs are down,
		// the PGs degraded.
		{name: "OSDs down, PGs degraded", status: statusOf(170, 86, down1),
			candidate: node("worker-1", true, "unresponsive"), others: []policy.Node{node("worker-0", true, "")},
			reason: "86 of 256 PGs not active+clean (86 active+undersized+degraded) in Ceph cluster rook-ceph; worker-1 is in its fence group"},
		{name: "OSDs down, Ceph recovered", status: statusOf(256, 0, down1),
			candidate: node("worker-1", true, "unresponsive"), others: []policy.Node{node("worker-0", true, "")}, admit: true},
		{name: "OSDs down, released, label still there", rules: fencegroup.Rules{ReleaseDownMachines: true}, status: statusOf(170, 86, down1),
			candidate: node("worker-1", true, "unresponsive"),
			reason:    "86 of 256 PGs not active+clean (86 active+undersized+degraded) in Ceph cluster rook-ceph; worker-1 is in its fence group"},
		{name: "OSDs down, released, label removed", rules: fencegroup.Rules{ReleaseDownMachines: true}, status: statusOf(170, 86, down1),
			candidate: node("worker-1", false, "unresponsive"), admit: true},
		{name: "another machine of the group being fenced", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-1", true, "unresponsive"), others: []policy.Node{node("worker-0", true, "fencing")},
			reason: "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (being fenced) is already unavailable"},
		{name: "two other machines unavailable", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-2", true, "unresponsive"), others: []policy.Node{node("worker-0", true, "fencing"), node("worker-1", true, "unresponsive")},
			reason: "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (being fenced), worker-1 (unresponsive) are already unavailable"},
		// Two nodes unresponsive together: the first by name goes first,
		// whichever is asked first.
		{name: "an unresponsive machine after the candidate does not count", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-0", true, "unresponsive"), others: []policy.Node{node("worker-1", true, "unresponsive")}, admit: true},
		{name: "an unresponsive machine before the candidate counts", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-1", true, "unresponsive"), others: []policy.Node{node("worker-0", true, "unresponsive")},
			reason: "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (unresponsive) is already unavailable"},
		{name: "a machine being fenced counts whatever its name", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-0", true, "unresponsive"), others: []policy.Node{node("worker-2", true, "fencing")},
			reason: "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-2 (being fenced) is already unavailable"},
		{name: "an unavailable machine outside the group does not count", status: statusOf(256, 0, nil),
			candidate: node("worker-1", true, "unresponsive"), others: []policy.Node{node("gpu-0", false, "fencing"), node("worker-0", true, "")}, admit: true},
		{name: "label not written yet: the placement puts the node in", status: statusOf(250, 6, placement(nil)),
			candidate: node("worker-2", false, "unresponsive"),
			reason:    "6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph; worker-2 is in its fence group"},
		{name: "label not written yet on the other machine", status: statusOf(256, 0, placement(nil)),
			candidate: node("worker-2", true, "unresponsive"), others: []policy.Node{node("worker-0", false, "unresponsive")},
			reason: "Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (unresponsive) is already unavailable"},
		{name: "matched by hostname label", status: statusOf(250, 6, placement(nil)),
			candidate: policy.Node{Name: "cluster-a-x7k2p", Labels: map[string]string{"kubernetes.io/hostname": "worker-0"}, Unresponsive: true},
			reason:    "6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph; cluster-a-x7k2p is in its fence group"},
		// The controller asks again before power management: the node's
		// own isolation degraded the PGs, its fencing goes on.
		{name: "a later step of an admitted fencing", status: statusOf(170, 86, down1),
			candidate: node("worker-1", true, "fencing"), others: []policy.Node{node("worker-0", true, "fencing")}, admit: true},
		{name: "stale health", status: statusOf(256, 0, nil), age: 2*time.Minute + time.Second,
			candidate: node("worker-1", true, "unresponsive"),
			reason:    "Ceph health of cluster rook-ceph is stale since 2025-03-04T12:02:00Z (last read 2025-03-04T12:00:00Z), not refreshed since; worker-1 is in its fence group"},
		{name: "just fresh", status: statusOf(256, 0, nil), age: 2 * time.Minute,
			candidate: node("worker-1", true, "unresponsive"), admit: true},
		{name: "never read", candidate: node("worker-1", true, "unresponsive"),
			reason: "Ceph health of cluster rook-ceph not read yet; worker-1 is in its fence group"},
		{name: "first read failed", failFirst: true, candidate: node("worker-1", true, "unresponsive"),
			reason: "Ceph health of cluster rook-ceph is stale since 2025-03-04T12:00:00Z: never read, last error at 2025-03-04T12:00:00Z: fencegroup: ceph status --format json: exit status 110: [errno 110] RADOS timed out (error connecting to the cluster); worker-1 is in its fence group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			src := fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
				return nil, &fencegroup.CommandError{Command: "ceph status --format json", Exit: 110, Err: errors.New("exit status 110"),
					Stderr: "[errno 110] RADOS timed out (error connecting to the cluster)"}
			})
			h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{Now: clk.Now})
			require.NoError(t, err)
			if tc.failFirst {
				_, err := h.Refresh(t.Context())
				require.Error(t, err)
			}
			if tc.status != nil {
				h.Set(tc.status)
			}
			g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{Rules: tc.rules})
			require.NoError(t, err)
			cl := policy.Cluster{Now: t0.Add(tc.age), Nodes: append([]policy.Node{tc.candidate}, tc.others...)}
			d := g.Admit(t.Context(), policy.Candidate{Node: tc.candidate, Step: "power-management"}, cl)
			assert.Equal(t, tc.admit, d.Admit, d.String())
			assert.Equal(t, tc.reason, d.Reason)
			if !tc.admit {
				assert.Equal(t, name, d.Gate)
				assert.Equal(t, time.Minute, d.RetryAfter)
			}
		})
	}
}

// One gate per cluster: a node in both groups needs both budgets; the first
// refusal is the answer.
func TestGates(t *testing.T) {
	clk := newClock()
	gate := func(cluster string, st *fencegroup.Status) *fencegroup.Gate {
		h, err := fencegroup.NewHealth(cluster, fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) { return st, nil }),
			fencegroup.HealthOptions{Now: clk.Now, Interval: 30 * time.Second})
		require.NoError(t, err)
		_, err = h.Refresh(t.Context())
		require.NoError(t, err)
		g, err := fencegroup.NewGate(cluster, h, fencegroup.GateOptions{})
		require.NoError(t, err)
		return g
	}
	gs := fencegroup.Gates{gate("ceph-a", statusOf(100, 0, nil)), gate("ceph-b", statusOf(90, 10, nil))}
	var _ policy.Gate = gs

	n := policy.Node{Name: "worker-0", Unresponsive: true, Labels: map[string]string{fencegroup.Label("ceph-a"): ""}}
	cl := policy.Cluster{Now: t0, Nodes: []policy.Node{n}}
	assert.True(t, gs.Admit(t.Context(), policy.Candidate{Node: n}, cl).Admit, "in ceph-a's group only, which is clean")

	n.Labels[fencegroup.Label("ceph-b")] = ""
	d := gs.Admit(t.Context(), policy.Candidate{Node: n}, cl)
	assert.Equal(t, "refused by ceph-fence-group/ceph-b: 10 of 100 PGs not active+clean (10 active+undersized+degraded) in Ceph cluster ceph-b; worker-0 is in its fence group", d.String())
	assert.Equal(t, 30*time.Second, d.RetryAfter, "the health's interval")
}

func TestNewGateErrors(t *testing.T) {
	h, err := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) { return nil, nil }), fencegroup.HealthOptions{})
	require.NoError(t, err)
	_, err = fencegroup.NewGate("", h, fencegroup.GateOptions{})
	assert.ErrorIs(t, err, fencegroup.ErrInvalidCluster)
	_, err = fencegroup.NewGate("rook-ceph", nil, fencegroup.GateOptions{})
	assert.Error(t, err)
	_, err = fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{RetryAfter: -1})
	assert.Error(t, err)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{RetryAfter: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "ceph-fence-group/rook-ceph", g.Name())
}

// The gate is asked concurrently while the health changes.
func TestGateConcurrent(t *testing.T) {
	clk := newClock()
	h, err := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		return statusOf(256, 0, placement(nil)), nil
	}), fencegroup.HealthOptions{Now: clk.Now})
	require.NoError(t, err)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{})
	require.NoError(t, err)
	cand := node("worker-1", true, "unresponsive")
	cl := policy.Cluster{Now: t0, Nodes: []policy.Node{cand, node("worker-0", false, "")}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				if i == 0 {
					_, _ = h.Refresh(context.Background())
					continue
				}
				d := g.Admit(context.Background(), policy.Candidate{Node: cand}, cl)
				if !d.Admit && d.Reason != "Ceph health of cluster rook-ceph not read yet; worker-1 is in its fence group" {
					t.Errorf("unexpected refusal: %s", d)
				}
			}
		})
	}
	wg.Wait()
}
