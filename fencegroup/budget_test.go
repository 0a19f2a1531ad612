package fencegroup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		state string
		rules fencegroup.Rules
		clean bool
	}{
		{"active+clean", fencegroup.Rules{}, true},
		{"clean+active", fencegroup.Rules{}, true},
		{"active+clean+scrubbing", fencegroup.Rules{}, true},
		{"active+clean+scrubbing+deep", fencegroup.Rules{}, true},
		{"active+clean+snaptrim", fencegroup.Rules{}, true},
		{"active+clean+snaptrim_wait", fencegroup.Rules{}, true},
		{"active+clean+snaptrim_error", fencegroup.Rules{}, false},
		{"active+clean+remapped", fencegroup.Rules{}, false},
		{"active+clean+inconsistent", fencegroup.Rules{}, false},
		{"active+clean+laggy", fencegroup.Rules{}, false},
		{"stale+active+clean", fencegroup.Rules{}, false},
		{"active+undersized+degraded", fencegroup.Rules{}, false},
		{"active+recovering+degraded", fencegroup.Rules{}, false},
		{"active+remapped+backfilling", fencegroup.Rules{}, false},
		{"peering", fencegroup.Rules{}, false},
		{"unknown", fencegroup.Rules{}, false},
		{"active", fencegroup.Rules{}, false},
		{"clean", fencegroup.Rules{}, false},
		{"active+cleanish", fencegroup.Rules{}, false},
		{"active++clean", fencegroup.Rules{}, false},
		{"", fencegroup.Rules{}, false},
		// Exactly active+clean.
		{"active+clean", fencegroup.Rules{CleanFlags: []string{}}, true},
		{"active+clean+scrubbing", fencegroup.Rules{CleanFlags: []string{}}, false},
		// An operator who accepts remapped PGs.
		{"active+clean+remapped", fencegroup.Rules{CleanFlags: []string{"remapped"}}, true},
	} {
		assert.Equal(t, tc.clean, tc.rules.Clean(tc.state), "%q with %v", tc.state, tc.rules.CleanFlags)
	}
}

func TestBudget(t *testing.T) {
	pgs := func(c ...any) []fencegroup.PGCount {
		var out []fencegroup.PGCount
		for i := 0; i < len(c); i += 2 {
			out = append(out, fencegroup.PGCount{State: c[i].(string), Count: int64(c[i+1].(int))})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		status *fencegroup.Status
		budget int
		reason string
	}{
		{"nil status", nil, 0, "no Ceph status"},
		{"all clean", &fencegroup.Status{PGs: pgs("active+clean", 256), NumPGs: 256, NumPools: 4}, 1, "all 256 PGs active+clean"},
		{"scrubbing counts as clean", &fencegroup.Status{PGs: pgs("active+clean", 250, "active+clean+scrubbing+deep", 6), NumPGs: 256, NumPools: -1}, 1, "all 256 PGs active+clean"},
		{"degraded", &fencegroup.Status{PGs: pgs("active+clean", 244, "active+undersized+degraded", 8, "peering", 4), NumPGs: 256, NumPools: 4}, 0,
			"12 of 256 PGs not active+clean (8 active+undersized+degraded, 4 peering)"},
		{"many states listed by count", &fencegroup.Status{PGs: pgs("a", 1, "b", 5, "c", 3, "d", 3, "e", 2, "f", 1, "active+clean", 10), NumPGs: 25}, 0,
			"15 of 25 PGs not active+clean (5 b, 3 c, 3 d, 2 e, 2 more states)"},
		{"zero counts are not listed", &fencegroup.Status{PGs: pgs("peering", 0, "active+clean", 3, "down", 1), NumPGs: 4}, 0,
			"1 of 4 PGs not active+clean (1 down)"},
		{"counts short of the total", &fencegroup.Status{PGs: pgs("active+clean", 200), NumPGs: 256, NumPools: 4}, 0, "PG states add up to 200 of 256 PGs"},
		{"counts over the total", &fencegroup.Status{PGs: pgs("active+clean", 300), NumPGs: 256}, 0, "PG states add up to 300 of 256 PGs"},
		{"stats not ready", &fencegroup.Status{PGs: pgs("active+clean", 256), NumPGs: 256, PGStatsNotReady: true}, 0, "the Ceph manager has no PG statistics yet"},
		{"no PGs, no pools", &fencegroup.Status{NumPools: 0}, 1, "no PGs (no pools)"},
		{"no PGs, pools unknown", &fencegroup.Status{NumPools: -1}, 0, "no PGs reported and the number of pools is unknown"},
		{"no PGs, pools", &fencegroup.Status{NumPools: 3}, 0, "no PGs reported for 3 pools"},
		{"negative count", &fencegroup.Status{PGs: pgs("active+clean", -1), NumPGs: -1}, 0, "PG counts are invalid"},
		{"overflowing counts", &fencegroup.Status{PGs: []fencegroup.PGCount{{State: "active+clean", Count: 1 << 62}, {State: "active+clean+scrubbing", Count: 1 << 62}, {State: "x", Count: 1 << 62}}, NumPGs: 3}, 0, "PG counts are invalid"},
		{"long state clipped", &fencegroup.Status{PGs: pgs("active+clean", 1, "x+"+string(make([]byte, 100)), 1), NumPGs: 2}, 0,
			"1 of 2 PGs not active+clean (1 x+" + string(make([]byte, 78)) + "...)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fencegroup.Rules{}.Budget(tc.status)
			assert.Equal(t, tc.budget, b.MaxUnavailable)
			assert.Equal(t, tc.budget == 1, b.Clean)
			assert.Equal(t, tc.reason, b.Reason)
		})
	}
}

// machines of the tests: three OSD nodes and a worker without OSDs.
func machines(labelled ...string) []fencegroup.Machine {
	ms := []fencegroup.Machine{{Name: "worker-0"}, {Name: "worker-1"}, {Name: "worker-2"}, {Name: "gpu-0"}}
	for i := range ms {
		ms[i].Labels = map[string]string{"kubernetes.io/os": "linux"}
		for _, l := range labelled {
			if l == ms[i].Name {
				ms[i].Labels[fencegroup.Label("rook-ceph")] = ""
			}
		}
	}
	return ms
}

// placement: two OSDs on each of worker-0..2, with the given states per host.
func placement(states map[string]fencegroup.OSDState) []fencegroup.OSD {
	var osds []fencegroup.OSD
	for i := range 6 {
		h := []string{"worker-0", "worker-1", "worker-2"}[i%3]
		s, ok := states[h]
		if !ok {
			s = fencegroup.OSDUp
		}
		osds = append(osds, fencegroup.OSD{ID: i, Host: h, State: s})
	}
	return osds
}

func TestLabels(t *testing.T) {
	key := fencegroup.Label("rook-ceph")
	down := map[string]fencegroup.OSDState{"worker-1": fencegroup.OSDDown}
	for _, tc := range []struct {
		name      string
		rules     fencegroup.Rules
		placement []fencegroup.OSD
		machines  []fencegroup.Machine
		members   []string
		changes   []string
		unmatched []string
	}{
		{"first run labels the OSD machines", fencegroup.Rules{}, placement(nil), machines(),
			[]string{"worker-0", "worker-1", "worker-2"},
			[]string{"add " + key + " to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)",
				"add " + key + " to worker-1 (runs osd.1, osd.4 of Ceph cluster rook-ceph)",
				"add " + key + " to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)"}, nil},
		{"nothing to do", fencegroup.Rules{}, placement(nil), machines("worker-0", "worker-1", "worker-2"),
			[]string{"worker-0", "worker-1", "worker-2"}, nil, nil},
		{"a machine without OSDs loses the label", fencegroup.Rules{}, placement(nil), machines("worker-0", "worker-1", "worker-2", "gpu-0"),
			[]string{"worker-0", "worker-1", "worker-2"},
			[]string{"remove " + key + " from gpu-0 (runs no OSD of Ceph cluster rook-ceph)"}, nil},
		// The first flow of Rook's Ceph fencing design, node with its OSDs
		// down: by default it stays in the group.
		{"OSDs down keep the label", fencegroup.Rules{}, placement(down), machines("worker-0", "worker-1", "worker-2"),
			[]string{"worker-0", "worker-1", "worker-2"}, nil, nil},
		// ... and with ReleaseDownMachines it leaves the group, as the
		// upstream design's flow has it.
		{"OSDs down release the machine", fencegroup.Rules{ReleaseDownMachines: true}, placement(down), machines("worker-0", "worker-1", "worker-2"),
			[]string{"worker-0", "worker-2"},
			[]string{"remove " + key + " from worker-1 (its OSDs of Ceph cluster rook-ceph are all down (osd.1, osd.4))"}, nil},
		{"one OSD up keeps a released machine in", fencegroup.Rules{ReleaseDownMachines: true},
			append(placement(down), fencegroup.OSD{ID: 9, Host: "worker-1", State: fencegroup.OSDUp}), machines("worker-0", "worker-1", "worker-2"),
			[]string{"worker-0", "worker-1", "worker-2"}, nil, nil},
		{"unknown state counts as up", fencegroup.Rules{ReleaseDownMachines: true},
			placement(map[string]fencegroup.OSDState{"worker-1": fencegroup.OSDStateUnknown}), machines(),
			[]string{"worker-0", "worker-1", "worker-2"},
			[]string{"add " + key + " to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)",
				"add " + key + " to worker-1 (runs osd.1, osd.4 of Ceph cluster rook-ceph)",
				"add " + key + " to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)"}, nil},
		{"destroyed OSDs and strays place nothing", fencegroup.Rules{},
			[]fencegroup.OSD{{ID: 0, Host: "worker-0", State: fencegroup.OSDDestroyed}, {ID: 1, State: fencegroup.OSDUp}, {ID: 2, Host: "worker-2", State: fencegroup.OSDDown}},
			machines("worker-0"), []string{"worker-2"},
			[]string{"add " + key + " to worker-2 (runs osd.2 of Ceph cluster rook-ceph)",
				"remove " + key + " from worker-0 (runs no OSD of Ceph cluster rook-ceph)"}, nil},
		{"hosts outside the cluster are reported", fencegroup.Rules{},
			[]fencegroup.OSD{{ID: 0, Host: "worker-0", State: fencegroup.OSDUp}, {ID: 1, Host: "old-box", State: fencegroup.OSDUp}, {ID: 2, Host: "old-box"}, {ID: 3, Host: "another"}},
			machines("worker-0"), []string{"worker-0"}, nil, []string{"another", "old-box"}},
		{"an empty cluster removes every label", fencegroup.Rules{}, []fencegroup.OSD{}, machines("worker-1"), nil,
			[]string{"remove " + key + " from worker-1 (runs no OSD of Ceph cluster rook-ceph)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := tc.rules.Labels("rook-ceph", tc.placement, tc.machines)
			require.NoError(t, err)
			assert.Equal(t, key, plan.Key)
			var members, changes []string
			for _, m := range plan.Members {
				members = append(members, m.Machine)
			}
			for _, c := range plan.Changes {
				changes = append(changes, c.String())
			}
			assert.Equal(t, tc.members, members)
			assert.Equal(t, tc.changes, changes)
			assert.Equal(t, tc.unmatched, plan.UnmatchedHosts)
		})
	}
}

// CRUSH hosts are matched to machines without case, with dots as dashes
// (Rook's CRUSH names), by a machine's other names, and by short name when
// nothing matches in full.
func TestLabelsHostMatching(t *testing.T) {
	osds := []fencegroup.OSD{
		{ID: 0, Host: "stor-0-dc1-example-net", State: fencegroup.OSDUp}, // Rook's name for stor-0.dc1.example.net
		{ID: 1, Host: "STOR-1", State: fencegroup.OSDUp},                 // short name, other case
		{ID: 2, Host: "bm-7", State: fencegroup.OSDUp},                   // a Machine's node name
		{ID: 3, Host: "edge-4.dc2.example.net", State: fencegroup.OSDUp}, // FQDN in CRUSH, short node name
		{ID: 4, Host: "dup", State: fencegroup.OSDUp},                    // two machines go by it
		{ID: 5, Host: "stor-5", State: fencegroup.OSDUp},                 // the full match wins over the short one
	}
	ms := []fencegroup.Machine{
		{Name: "stor-0.dc1.example.net"},
		{Name: "stor-1.dc1.example.net"},
		{Name: "cluster-a-workers-x7k2p", Hosts: []string{"bm-7"}},
		{Name: "edge-4"},
		{Name: "m1", Hosts: []string{"dup"}},
		{Name: "m2", Hosts: []string{"dup"}},
		{Name: "stor-5"},
		{Name: "stor-5.old"},
	}
	plan, err := fencegroup.Rules{}.Labels("rook-ceph", osds, ms)
	require.NoError(t, err)
	got := map[string][]int{}
	for _, m := range plan.Members {
		for _, o := range m.OSDs {
			got[m.Machine] = append(got[m.Machine], o.ID)
		}
	}
	assert.Equal(t, map[string][]int{
		"stor-0.dc1.example.net":  {0},
		"stor-1.dc1.example.net":  {1},
		"cluster-a-workers-x7k2p": {2},
		"edge-4":                  {3},
		"m1":                      {4},
		"m2":                      {4},
		"stor-5":                  {5},
	}, got)
	assert.Empty(t, plan.UnmatchedHosts)
}

func TestLabelsErrors(t *testing.T) {
	_, err := fencegroup.Rules{}.Labels("rook-ceph", nil, machines())
	assert.ErrorIs(t, err, fencegroup.ErrPlacementUnknown)
	assert.EqualError(t, err, "fencegroup: Ceph cluster rook-ceph: OSD placement unknown: labels left as they are")

	_, err = fencegroup.Rules{}.Labels("-bad", placement(nil), machines())
	assert.ErrorIs(t, err, fencegroup.ErrInvalidCluster)

	_, err = fencegroup.Rules{}.Labels("rook-ceph", placement(nil), []fencegroup.Machine{{Name: "a"}, {}})
	assert.EqualError(t, err, "fencegroup: machine 1 has no name")

	_, err = fencegroup.Rules{}.Labels("rook-ceph", placement(nil), []fencegroup.Machine{{Name: "a"}, {Name: "a"}})
	assert.EqualError(t, err, "fencegroup: machine a listed twice")
}

func TestValidateCluster(t *testing.T) {
	for _, ok := range []string{"rook-ceph", "ceph", "a", "Ceph_1.prod", "x23456789012345678901234567890123456789012345678901234567890123"} {
		assert.NoError(t, fencegroup.ValidateCluster(ok), ok)
	}
	for _, bad := range []string{"", "-a", "a-", ".a", "a/b", "a b", "é", "x234567890123456789012345678901234567890123456789012345678901234"} {
		err := fencegroup.ValidateCluster(bad)
		assert.ErrorIs(t, err, fencegroup.ErrInvalidCluster, bad)
	}
	assert.Equal(t, "fencegroup.rook.io/rook-ceph", fencegroup.Label("rook-ceph"))
}
