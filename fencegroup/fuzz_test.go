package fencegroup_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fencegroup"
)

// addFixtures seeds f with every fixture whose name begins with prefix,
// and with extra inputs.
func addFixtures(f *testing.F, prefix string, extra ...string) {
	names, err := filepath.Glob(filepath.Join("testdata", prefix+"*.json"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no fixtures %s*: %v", prefix, err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// checkParseError checks that err is a *ParseError matching ErrParse, with
// an input name and a message that starts with it.
func checkParseError(t *testing.T, input string, err error) {
	var pe *fencegroup.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, fencegroup.ErrParse) || pe.Input != input {
		t.Fatalf("error %T %v is not a ParseError of %s", err, err, input)
	}
	if !strings.HasPrefix(err.Error(), "fencegroup: "+input) {
		t.Fatalf("message %q", err.Error())
	}
}

// checkStatus checks the invariants of a parsed status, and that its budget
// is consistent with it.
func checkStatus(t *testing.T, st *fencegroup.Status) {
	if st == nil || st.NumPGs < 0 || st.NumPools < -1 {
		t.Fatalf("bad status %+v", st)
	}
	var seen []string
	var sum int64
	for _, p := range st.PGs {
		if p.State == "" || p.Count < 0 || slices.Contains(seen, p.State) {
			t.Fatalf("bad PG count %+v in %+v", p, st.PGs)
		}
		seen = append(seen, p.State)
		sum += p.Count
		if sum < 0 {
			t.Fatalf("counts overflow: %+v", st.PGs)
		}
	}
	for _, r := range []fencegroup.Rules{{}, {CleanFlags: []string{}}} {
		b := r.Budget(st)
		if b.MaxUnavailable != 0 && b.MaxUnavailable != 1 || b.Clean != (b.MaxUnavailable == 1) || b.Reason == "" {
			t.Fatalf("bad budget %+v", b)
		}
		if b.Clean && (sum != st.NumPGs || st.PGStatsNotReady) {
			t.Fatalf("clean with counts %d of %d (ready %v)", sum, st.NumPGs, !st.PGStatsNotReady)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	addFixtures(f, "status-",
		`{"pgmap":{"pgs_by_state":[],"num_pgs":0}}`,
		`{"pgmap":{"pgs_by_state":[{"state_name":"active+clean","count":1}],"num_pgs":1,"num_pools":1},"osdmap":{"osdmap":{"num_osds":1,"num_up_osds":1,"num_in_osds":1}}}`,
		`{"pgmap":{"pgs_by_state":[{"state_name":"active+clean","count":1e2}],"num_pgs":100}}`,
		`{"pgmap":{"pgs_by_state":[{"state_name":"a","count":9223372036854775807},{"state_name":"a","count":1}],"num_pgs":1}}`,
		`{"PGMAP":{"Pgs_By_State":null,"NUM_PGS":0},"osdmap":null}`,
		`{"pgmap":null}`, `[]`, `{}`, `{"pgmap":{"num_pgs":-0}}`, "\xef\xbb\xbf{}",
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := fencegroup.ParseStatus(data)
		if err != nil {
			if st != nil {
				t.Fatal("a status with an error")
			}
			checkParseError(t, fencegroup.InputStatus, err)
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON accepted: %q", data)
		}
		checkStatus(t, st)
		// The total is what encoding/json reads (the last of duplicate
		// members, names matched without case, as the parser does).
		var generic struct {
			PGMap struct {
				NumPGs json.Number `json:"num_pgs"`
			} `json:"pgmap"`
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&generic); err != nil || generic.PGMap.NumPGs.String() == "" {
			t.Fatalf("accepted, but encoding/json reads no num_pgs: %v", err)
		}
		if n, err := generic.PGMap.NumPGs.Int64(); err != nil || n != st.NumPGs {
			t.Fatalf("num_pgs %s read as %d", generic.PGMap.NumPGs, st.NumPGs)
		}
		if st.Placement != nil {
			t.Fatal("ceph status gave a placement")
		}
	})
}

func FuzzParsePGStat(f *testing.F) {
	addFixtures(f, "pgstat-",
		`{"pg_ready":false}`,
		`{"pg_summary":{"num_pg_by_state":[],"num_pgs":0},"num_pg_by_state":[{"name":"x","num":1}],"num_pgs":1}`,
		`{"num_pg_by_state":[{"name":"active+clean","num":3},{"name":"active+clean","num":4}],"num_pgs":7}`,
		`{"pg_summary":null,"num_pgs":0}`, `{"pg_ready":"yes","pg_summary":{}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := fencegroup.ParsePGStat(data)
		if err != nil {
			checkParseError(t, fencegroup.InputPGStat, err)
			return
		}
		if st.NumPools != -1 || st.OSDsKnown || st.Placement != nil {
			t.Fatalf("pg stat read more than PGs: %+v", st)
		}
		checkStatus(t, st)
	})
}

func FuzzParseOSDTree(f *testing.F) {
	addFixtures(f, "osdtree-",
		`{"nodes":[]}`,
		`{"nodes":[{"id":-1,"name":"h","type":"host","children":[0,0,-1]},{"id":0,"name":"osd.0","type":"osd","status":"up"}]}`,
		`{"nodes":[{"id":-1,"type":"host","name":"a","children":[-2]},{"id":-2,"type":"host","name":"b","children":[-1,1]},{"id":1,"type":"osd"}]}`,
		`{"nodes":[{"id":2147483648,"type":"osd"}]}`,
		`{"nodes":[{"id":0,"type":"osd","exists":0,"status":"up"}],"stray":[{"id":0,"type":"osd","status":"down"}]}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		osds, err := fencegroup.ParseOSDTree(data)
		if err != nil {
			checkParseError(t, fencegroup.InputOSDTree, err)
			return
		}
		if osds == nil {
			t.Fatal("nil placement without an error")
		}
		if !slices.IsSortedFunc(osds, func(a, b fencegroup.OSD) int {
			if a.ID != b.ID {
				return a.ID - b.ID
			}
			return strings.Compare(a.Host, b.Host)
		}) {
			t.Fatalf("not sorted: %+v", osds)
		}
		hosts := map[string]bool{}
		var machines []fencegroup.Machine
		for _, o := range osds {
			if o.ID < 0 {
				t.Fatalf("negative OSD id: %+v", o)
			}
			if o.Host != "" && !hosts[o.Host] {
				hosts[o.Host] = true
				machines = append(machines, fencegroup.Machine{Name: o.Host})
			}
		}
		// Every host is a machine: each one that runs an OSD not destroyed
		// must be labelled, and no host is left unmatched.
		plan, err := fencegroup.Rules{}.Labels("ceph", osds, machines)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.UnmatchedHosts) != 0 {
			t.Fatalf("unmatched hosts %v", plan.UnmatchedHosts)
		}
		for _, c := range plan.Changes {
			if !c.Add {
				t.Fatalf("removal from a machine never labelled: %v", c)
			}
		}
	})
}

func FuzzParseOSDMetadata(f *testing.F) {
	addFixtures(f, "osdmetadata-", `[]`, `{"id":1}`, `[{"id":0,"hostname":null},{"id":0,"hostname":"a"}]`, `[null]`, `[{"id":-1}]`)
	f.Fuzz(func(t *testing.T, data []byte) {
		osds, err := fencegroup.ParseOSDMetadata(data)
		if err != nil {
			checkParseError(t, fencegroup.InputOSDMetadata, err)
			return
		}
		for i, o := range osds {
			if o.ID < 0 || o.State != fencegroup.OSDStateUnknown || i > 0 && osds[i-1].ID > o.ID {
				t.Fatalf("bad placement %+v", osds)
			}
		}
	})
}
