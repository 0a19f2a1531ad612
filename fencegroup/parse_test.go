package fencegroup_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// The fixtures are ceph status --format json as the releases print it:
// Squid, Reef and Quincy with the osdmap flat, Nautilus and Luminous 12.2
// with it nested one level deeper.
func TestParseStatusFixtures(t *testing.T) {
	for _, tc := range []struct {
		file     string
		health   string
		pgs      []fencegroup.PGCount
		numPGs   int64
		numPools int
		osds     fencegroup.OSDCounts
		budget   int
		reason   string
	}{
		// Printed by Ceph 16.2.15 while one OSD was killed and restarted
		// (see testdata/README.md).
		{"status-pacific-clean.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+clean", Count: 33}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}, 1, "all 33 PGs active+clean"},
		{"status-pacific-osd-down-peering.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "peering", Count: 16}, {State: "active+clean", Count: 14}, {State: "stale+active+clean", Count: 3}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 2, In: 3}, 0, "19 of 33 PGs not active+clean (16 peering, 3 stale+active+clean)"},
		{"status-pacific-osd-down-degraded.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+undersized+degraded", Count: 18}, {State: "active+clean", Count: 11}, {State: "active+undersized", Count: 4}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 2, In: 3}, 0, "22 of 33 PGs not active+clean (18 active+undersized+degraded, 4 active+undersized)"},
		{"status-pacific-recovering.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "peering", Count: 16}, {State: "active+clean", Count: 13}, {State: "active+recovery_wait+degraded", Count: 3}, {State: "active+recovering+degraded", Count: 1}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 2, In: 2}, 0, "20 of 33 PGs not active+clean (16 peering, 3 active+recovery_wait+degraded, 1 active+recovering+degraded)"},
		{"status-pacific-osd-out-clean.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+clean", Count: 33}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 2, In: 2}, 1, "all 33 PGs active+clean"},
		{"status-pacific-osd-back-recovering.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+clean", Count: 29}, {State: "active+recovering", Count: 2}, {State: "active+recovery_wait+degraded", Count: 2}},
			33, 2, fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}, 0, "4 of 33 PGs not active+clean (2 active+recovering, 2 active+recovery_wait+degraded)"},
		{"status-reef-clean.json", "HEALTH_OK",
			[]fencegroup.PGCount{{State: "active+clean", Count: 127}, {State: "active+clean+scrubbing+deep", Count: 2}},
			129, 3, fencegroup.OSDCounts{Total: 6, Up: 6, In: 6}, 1, "all 129 PGs active+clean"},
		{"status-squid-degraded.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+undersized+degraded", Count: 80}, {State: "active+clean", Count: 43}, {State: "active+undersized", Count: 6}},
			129, 3, fencegroup.OSDCounts{Total: 6, Up: 4, In: 6}, 0,
			"86 of 129 PGs not active+clean (80 active+undersized+degraded, 6 active+undersized)"},
		{"status-quincy-peering.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "active+clean", Count: 100}, {State: "peering", Count: 12}, {State: "activating", Count: 9}, {State: "activating+undersized", Count: 8}},
			129, 3, fencegroup.OSDCounts{Total: 6, Up: 6, In: 6}, 0,
			"29 of 129 PGs not active+clean (12 peering, 9 activating, 8 activating+undersized)"},
		{"status-nautilus-nested.json", "HEALTH_OK",
			[]fencegroup.PGCount{{State: "active+clean", Count: 96}},
			96, 3, fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}, 1, "all 96 PGs active+clean"},
		{"status-luminous-stale.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "stale+active+clean", Count: 101}, {State: "active+clean", Count: 99}},
			200, 2, fencegroup.OSDCounts{Total: 2, Up: 1, In: 2}, 0, "101 of 200 PGs not active+clean (101 stale+active+clean)"},
		{"status-no-pools.json", "HEALTH_WARN", []fencegroup.PGCount{}, 0, 0, fencegroup.OSDCounts{}, 1, "no PGs (no pools)"},
		{"status-mgr-failover.json", "HEALTH_WARN",
			[]fencegroup.PGCount{{State: "unknown", Count: 129}},
			129, 3, fencegroup.OSDCounts{Total: 6, Up: 6, In: 6}, 0, "129 of 129 PGs not active+clean (129 unknown)"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			st, err := fencegroup.ParseStatus(fixture(t, tc.file))
			require.NoError(t, err)
			assert.Equal(t, tc.health, st.Health)
			assert.Equal(t, tc.pgs, st.PGs)
			assert.Equal(t, tc.numPGs, st.NumPGs)
			assert.Equal(t, tc.numPools, st.NumPools)
			assert.True(t, st.OSDsKnown)
			assert.Equal(t, tc.osds, st.OSDs)
			assert.Nil(t, st.Placement, "ceph status has no placement")
			b := fencegroup.Rules{}.Budget(st)
			assert.Equal(t, tc.budget, b.MaxUnavailable)
			assert.Equal(t, tc.reason, b.Reason)
		})
	}
}

func TestParsePGStatFixtures(t *testing.T) {
	for _, tc := range []struct {
		file     string
		numPGs   int64
		notReady bool
		budget   int
		reason   string
	}{
		{"pgstat-pacific-clean.json", 33, false, 1, "all 33 PGs active+clean"},
		{"pgstat-pacific-degraded.json", 33, false, 0, "22 of 33 PGs not active+clean (18 active+undersized+degraded, 4 active+undersized)"},
		{"pgstat-squid-clean.json", 129, false, 1, "all 129 PGs active+clean"},
		{"pgstat-reef-degraded.json", 129, false, 0, "86 of 129 PGs not active+clean (80 active+undersized+degraded, 6 active+undersized)"},
		{"pgstat-not-ready.json", 129, true, 0, "the Ceph manager has no PG statistics yet"},
		{"pgstat-jewel.json", 64, false, 1, "all 64 PGs active+clean"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			st, err := fencegroup.ParsePGStat(fixture(t, tc.file))
			require.NoError(t, err)
			assert.Equal(t, tc.numPGs, st.NumPGs)
			assert.Equal(t, tc.notReady, st.PGStatsNotReady)
			assert.Equal(t, -1, st.NumPools)
			b := fencegroup.Rules{}.Budget(st)
			assert.Equal(t, tc.budget, b.MaxUnavailable)
			assert.Equal(t, tc.reason, b.Reason)
		})
	}
}

func TestParseOSDTreeFixtures(t *testing.T) {
	up, down := fencegroup.OSDUp, fencegroup.OSDDown
	osds, err := fencegroup.ParseOSDTree(fixture(t, "osdtree-reef.json"))
	require.NoError(t, err)
	assert.Equal(t, []fencegroup.OSD{
		{ID: 0, Host: "worker-0", State: up}, {ID: 1, Host: "worker-1", State: up}, {ID: 2, Host: "worker-2", State: up},
		{ID: 3, Host: "worker-0", State: up}, {ID: 4, Host: "worker-1", State: up}, {ID: 5, Host: "worker-2", State: up},
	}, osds)

	for _, tc := range []struct {
		file  string
		state fencegroup.OSDState
	}{{"osdtree-pacific.json", up}, {"osdtree-pacific-osd-down.json", down}, {"osdtree-pacific-osd-out.json", down}} {
		osds, err := fencegroup.ParseOSDTree(fixture(t, tc.file))
		require.NoError(t, err, tc.file)
		assert.Equal(t, []fencegroup.OSD{
			{ID: 0, Host: "worker-0", State: up}, {ID: 1, Host: "worker-1", State: tc.state}, {ID: 2, Host: "worker-2", State: up},
		}, osds, tc.file)
	}

	// Hosts under racks, one host's OSDs down, a destroyed OSD, a stray one.
	osds, err = fencegroup.ParseOSDTree(fixture(t, "osdtree-squid-host-down.json"))
	require.NoError(t, err)
	assert.Equal(t, []fencegroup.OSD{
		{ID: 0, Host: "stor-0-dc1-example-net", State: up},
		{ID: 1, Host: "stor-1-dc1-example-net", State: down},
		{ID: 2, Host: "stor-2-dc1-example-net", State: up},
		{ID: 3, Host: "stor-0-dc1-example-net", State: up},
		{ID: 4, Host: "stor-1-dc1-example-net", State: down},
		{ID: 5, Host: "stor-2-dc1-example-net", State: up},
		{ID: 6, Host: "stor-2-dc1-example-net", State: fencegroup.OSDDestroyed},
		{ID: 7, Host: "", State: down},
	}, osds)
}

func TestParseOSDTreeShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want []fencegroup.OSD
	}{
		{"crush tree has no states", `{"nodes":[{"id":-1,"name":"default","type":"root","children":[-2]},{"id":-2,"name":"h","type":"host","children":[0]},{"id":0,"name":"osd.0","type":"osd"}],"stray":[]}`,
			[]fencegroup.OSD{{ID: 0, Host: "h"}}},
		{"one OSD linked under two roots", `{"nodes":[{"id":-1,"name":"default","type":"root","children":[-2]},{"id":-10,"name":"fast","type":"root","children":[-11]},` +
			`{"id":-2,"name":"h1","type":"host","children":[0]},{"id":-11,"name":"h1-fast","type":"host","children":[0]},{"id":0,"name":"osd.0","type":"osd","status":"up","exists":1}]}`,
			[]fencegroup.OSD{{ID: 0, Host: "h1", State: fencegroup.OSDUp}, {ID: 0, Host: "h1-fast", State: fencegroup.OSDUp}}},
		{"OSD under a chassis under a host", `{"nodes":[{"id":-2,"name":"h","type":"host","children":[-3]},{"id":-3,"name":"c","type":"chassis","children":[1]},{"id":1,"name":"osd.1","type":"osd","status":"down","exists":1}]}`,
			[]fencegroup.OSD{{ID: 1, Host: "h", State: fencegroup.OSDDown}}},
		{"OSD directly under a root", `{"nodes":[{"id":-1,"name":"default","type":"root","children":[2]},{"id":2,"name":"osd.2","type":"osd","status":"up","exists":0}]}`,
			[]fencegroup.OSD{{ID: 2, State: fencegroup.OSDDestroyed}}},
		{"a cycle does not loop", `{"nodes":[{"id":-1,"name":"a","type":"rack","children":[-2,0]},{"id":-2,"name":"b","type":"rack","children":[-1]},{"id":0,"name":"osd.0","type":"osd","status":"up"}]}`,
			[]fencegroup.OSD{{ID: 0, State: fencegroup.OSDUp}}},
		{"empty cluster", `{"nodes":[],"stray":[]}`, []fencegroup.OSD{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			osds, err := fencegroup.ParseOSDTree([]byte(tc.data))
			require.NoError(t, err)
			assert.Equal(t, tc.want, osds)
		})
	}
}

func TestParseOSDMetadataFixture(t *testing.T) {
	osds, err := fencegroup.ParseOSDMetadata(fixture(t, "osdmetadata-reef.json"))
	require.NoError(t, err)
	require.Len(t, osds, 6)
	for i, o := range osds {
		assert.Equal(t, i, o.ID)
		assert.Equal(t, []string{"worker-0", "worker-1", "worker-2"}[i%3], o.Host)
		assert.Equal(t, fencegroup.OSDStateUnknown, o.State)
	}
	osds, err = fencegroup.ParseOSDMetadata(fixture(t, "osdmetadata-pacific.json"))
	require.NoError(t, err)
	assert.Equal(t, []fencegroup.OSD{{ID: 0, Host: "worker-0"}, {ID: 1, Host: "worker-1"}, {ID: 2, Host: "worker-2"}}, osds)
	one, err := fencegroup.ParseOSDMetadata([]byte(`{"id":4,"hostname":"worker-1","osd_objectstore":"bluestore"}`))
	require.NoError(t, err)
	assert.Equal(t, []fencegroup.OSD{{ID: 4, Host: "worker-1"}}, one)
}

// Every bad input is a *ParseError matching ErrParse that names the input
// and the field.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func([]byte) error
		data  string
		input string
		field string
		msg   string
	}{
		{"status empty", status, "  \n", fencegroup.InputStatus, "", "fencegroup: ceph status: empty output"},
		{"status not JSON", status, "Error initializing cluster client: ObjectNotFound('RADOS object not found (error calling conf_read_file)')", fencegroup.InputStatus, "", "fencegroup: ceph status: not a JSON object"},
		{"status null", status, "null", fencegroup.InputStatus, "", "fencegroup: ceph status: not a JSON object"},
		{"status truncated", status, `{"pgmap":{"num_pgs":1,`, fencegroup.InputStatus, "", "fencegroup: ceph status: unexpected end of JSON input"},
		{"status no pgmap", status, `{"fsid":"x","osdmap":{}}`, fencegroup.InputStatus, "pgmap", "fencegroup: ceph status: pgmap: missing"},
		{"status no num_pgs", status, `{"pgmap":{"pgs_by_state":[]}}`, fencegroup.InputStatus, "pgmap.num_pgs", "fencegroup: ceph status: pgmap.num_pgs: missing"},
		{"status negative count", status, `{"pgmap":{"pgs_by_state":[{"state_name":"active+clean","count":3},{"state_name":"peering","count":-1}],"num_pgs":2}}`,
			fencegroup.InputStatus, "pgmap.pgs_by_state[1].count", "fencegroup: ceph status: pgmap.pgs_by_state[1].count: negative count -1"},
		{"status count as string", status, `{"pgmap":{"pgs_by_state":[{"state_name":"active+clean","count":"3"}],"num_pgs":3}}`,
			fencegroup.InputStatus, "pgmap.pgs_by_state.count", "fencegroup: ceph status: pgmap.pgs_by_state.count: a JSON string where a whole number was expected"},
		{"status fractional count", status, `{"pgmap":{"pgs_by_state":[],"num_pgs":1.5}}`,
			fencegroup.InputStatus, "pgmap.num_pgs", "fencegroup: ceph status: pgmap.num_pgs: a JSON number 1.5 where a whole number was expected"},
		{"status empty state", status, `{"pgmap":{"pgs_by_state":[{"state_name":"","count":3}],"num_pgs":3}}`,
			fencegroup.InputStatus, "pgmap.pgs_by_state[0].state_name", "fencegroup: ceph status: pgmap.pgs_by_state[0].state_name: empty state"},
		{"status overflow", status, `{"pgmap":{"pgs_by_state":[{"state_name":"a","count":9223372036854775807},{"state_name":"b","count":1}],"num_pgs":3}}`,
			fencegroup.InputStatus, "pgmap.pgs_by_state[1].count", "fencegroup: ceph status: pgmap.pgs_by_state[1].count: counts overflow"},
		{"status osdmap partial", status, `{"pgmap":{"pgs_by_state":[],"num_pgs":0},"osdmap":{"num_osds":3}}`,
			fencegroup.InputStatus, "osdmap.num_up_osds", "fencegroup: ceph status: osdmap.num_up_osds: missing"},
		{"status nested osdmap negative", status, `{"pgmap":{"pgs_by_state":[],"num_pgs":0},"osdmap":{"osdmap":{"num_osds":3,"num_up_osds":-3,"num_in_osds":3}}}`,
			fencegroup.InputStatus, "osdmap.osdmap.num_up_osds", "fencegroup: ceph status: osdmap.osdmap.num_up_osds: negative count -3"},
		{"pg stat list", pgstat, `[]`, fencegroup.InputPGStat, "", "fencegroup: ceph pg stat: not a JSON object"},
		{"pg stat no summary", pgstat, `{"pg_ready":true}`, fencegroup.InputPGStat, "pg_summary", "fencegroup: ceph pg stat: pg_summary: missing"},
		{"pg stat no num", pgstat, `{"pg_ready":true,"pg_summary":{"num_pg_by_state":[{"name":"active+clean"}],"num_pgs":1}}`,
			fencegroup.InputPGStat, "pg_summary.num_pg_by_state[0].num", "fencegroup: ceph pg stat: pg_summary.num_pg_by_state[0].num: missing"},
		{"pg stat no name", pgstat, `{"num_pg_by_state":[{"num":1}],"num_pgs":1}`,
			fencegroup.InputPGStat, "num_pg_by_state[0].name", "fencegroup: ceph pg stat: num_pg_by_state[0].name: missing"},
		{"tree no nodes", tree, `{"stray":[]}`, fencegroup.InputOSDTree, "nodes", "fencegroup: ceph osd tree: nodes: missing"},
		{"tree no id", tree, `{"nodes":[{"name":"default","type":"root"}]}`, fencegroup.InputOSDTree, "nodes[0].id", "fencegroup: ceph osd tree: nodes[0].id: missing"},
		{"tree duplicate id", tree, `{"nodes":[{"id":-1,"type":"root"},{"id":-1,"type":"host"}]}`, fencegroup.InputOSDTree, "nodes[1].id", "fencegroup: ceph osd tree: nodes[1].id: id -1 listed twice"},
		{"tree OSD id on a bucket", tree, `{"nodes":[{"id":3,"name":"h","type":"host"}]}`, fencegroup.InputOSDTree, "nodes[0].type", `fencegroup: ceph osd tree: nodes[0].type: id 3 is an OSD's, but the type is "host"`},
		{"tree bucket id on an OSD", tree, `{"nodes":[{"id":-3,"name":"osd.3","type":"osd"}]}`, fencegroup.InputOSDTree, "nodes[0].id", "fencegroup: ceph osd tree: nodes[0].id: OSD with a bucket's id -3"},
		{"tree stray bucket", tree, `{"nodes":[],"stray":[{"id":-3,"type":"host"}]}`, fencegroup.InputOSDTree, "stray[0].id", "fencegroup: ceph osd tree: stray[0].id: stray bucket -3"},
		{"tree children not numbers", tree, `{"nodes":[{"id":-1,"type":"root","children":["a"]}]}`, fencegroup.InputOSDTree, "nodes.children", "fencegroup: ceph osd tree: nodes.children: a JSON string where a whole number was expected"},
		{"metadata object list", metadata, `"worker-0"`, fencegroup.InputOSDMetadata, "", "fencegroup: ceph osd metadata: not a JSON list"},
		{"metadata no id", metadata, `[{"hostname":"worker-0"}]`, fencegroup.InputOSDMetadata, "[0].id", "fencegroup: ceph osd metadata: [0].id: missing"},
		{"metadata negative id", metadata, `[{"id":0,"hostname":"a"},{"id":-1,"hostname":"b"}]`, fencegroup.InputOSDMetadata, "[1].id", "fencegroup: ceph osd metadata: [1].id: id -1 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.data))
			require.Error(t, err)
			assert.ErrorIs(t, err, fencegroup.ErrParse)
			var pe *fencegroup.ParseError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.input, pe.Input)
			assert.Equal(t, tc.field, pe.Field)
			assert.Equal(t, tc.msg, err.Error())
		})
	}
}

func status(data []byte) error {
	_, err := fencegroup.ParseStatus(data)
	return err
}

func pgstat(data []byte) error {
	_, err := fencegroup.ParsePGStat(data)
	return err
}

func tree(data []byte) error {
	_, err := fencegroup.ParseOSDTree(data)
	return err
}

func metadata(data []byte) error {
	_, err := fencegroup.ParseOSDMetadata(data)
	return err
}

// Repeated states are added up; unknown members are ignored.
func TestParseStatusLenient(t *testing.T) {
	st, err := fencegroup.ParseStatus([]byte(`{"pgmap":{"pgs_by_state":[{"state_name":"active+clean","count":3},{"state_name":"active+clean","count":2},{"state_name":"new_state","count":1,"extra":true}],"num_pgs":6},"future":{"x":[1,2]}}`))
	require.NoError(t, err)
	assert.Equal(t, []fencegroup.PGCount{{State: "active+clean", Count: 5}, {State: "new_state", Count: 1}}, st.PGs)
	assert.Equal(t, -1, st.NumPools)
	assert.False(t, st.OSDsKnown)
	assert.Equal(t, "1 of 6 PGs not active+clean (1 new_state)", fencegroup.Rules{}.Budget(st).Reason)
}
