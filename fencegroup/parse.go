package fencegroup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// ErrParse marks every error of the parsers (see ParseError). Check it with
// errors.Is.
var ErrParse = errors.New("unreadable Ceph output")

// The inputs a ParseError names.
const (
	InputStatus      = "ceph status"
	InputPGStat      = "ceph pg stat"
	InputOSDTree     = "ceph osd tree"
	InputOSDMetadata = "ceph osd metadata"
	InputPoolList    = "ceph osd pool ls"
)

// ParseError is an error of the parsers: it names the input (one of the
// Input constants), the field at fault as a path into the JSON
// ("pgmap.pgs_by_state[2].count"), and the cause. It matches ErrParse. It
// never quotes more than a short field value.
type ParseError struct {
	// Input names the command whose output it was.
	Input string
	// Field is the field at fault, empty when the output is not JSON at all.
	Field string
	// Err is the cause.
	Err error
}

// Error returns "fencegroup: ceph status: pgmap.num_pgs: cause".
func (e *ParseError) Error() string {
	return new(errfmt.Labels).Start("fencegroup: " + e.Input).Part(e.Field).End(e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrParse.
func (e *ParseError) Is(target error) bool { return target == ErrParse }

// decodeObject decodes data, which must be one JSON object, into v.
func decodeObject(input string, data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return &ParseError{Input: input, Err: errors.New("empty output")}
	}
	if trimmed[0] != '{' {
		return &ParseError{Input: input, Err: errors.New("not a JSON object")}
	}
	return decode(input, trimmed, v)
}

// decode decodes data into v, naming the field at fault on error.
func decode(input string, data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ParseError{Input: input, Field: te.Field,
			Err: fmt.Errorf("a JSON %s where a %s was expected", te.Value, kindName(te.Type.String()))}
	}
	return &ParseError{Input: input, Err: errors.New(strings.TrimPrefix(err.Error(), "json: "))}
}

// kindName names a Go type in JSON words.
func kindName(t string) string {
	switch {
	case strings.Contains(t, "int"):
		return "whole number"
	case strings.Contains(t, "string"):
		return "string"
	case strings.Contains(t, "bool"):
		return "boolean"
	case strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "*[]"):
		return "list"
	default:
		return "object"
	}
}

// countField checks one count: present (when required) and not negative.
func countField(input, field string, v *int64, required bool) (int64, error) {
	if v == nil {
		if required {
			return 0, &ParseError{Input: input, Field: field, Err: errors.New("missing")}
		}
		return 0, nil
	}
	if *v < 0 {
		return 0, &ParseError{Input: input, Field: field, Err: fmt.Errorf("negative count %d", *v)}
	}
	return *v, nil
}

// stateCount is one entry of a PG state list, in either release's spelling.
type stateCount struct {
	name  *string
	count *int64
}

// pgCounts checks a PG state list and merges repeated states. The counts
// must not overflow when added.
func pgCounts(input, field string, entries []stateCount, nameKey, countKey string) ([]PGCount, error) {
	pgs := make([]PGCount, 0, len(entries))
	var sum int64
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", field, i)
		if e.name == nil {
			return nil, &ParseError{Input: input, Field: at + "." + nameKey, Err: errors.New("missing")}
		}
		if *e.name == "" {
			return nil, &ParseError{Input: input, Field: at + "." + nameKey, Err: errors.New("empty state")}
		}
		n, err := countField(input, at+"."+countKey, e.count, true)
		if err != nil {
			return nil, err
		}
		if sum > math.MaxInt64-n {
			return nil, &ParseError{Input: input, Field: at + "." + countKey, Err: errors.New("counts overflow")}
		}
		sum += n
		if j := slices.IndexFunc(pgs, func(p PGCount) bool { return p.State == *e.name }); j >= 0 {
			pgs[j].Count += n
			continue
		}
		pgs = append(pgs, PGCount{State: *e.name, Count: n})
	}
	return pgs, nil
}

// statusWire is the part of ceph status that is read.
type statusWire struct {
	FSID   string `json:"fsid"`
	Health *struct {
		Status        string `json:"status"`
		OverallStatus string `json:"overall_status"`
	} `json:"health"`
	OSDMap *osdMapWire `json:"osdmap"`
	PGMap  *struct {
		PGsByState []struct {
			StateName *string `json:"state_name"`
			Count     *int64  `json:"count"`
		} `json:"pgs_by_state"`
		NumPGs   *int64 `json:"num_pgs"`
		NumPools *int64 `json:"num_pools"`
	} `json:"pgmap"`
}

// osdMapWire is the osdmap member: flat since Pacific, nested one level
// deeper ("osdmap":{"osdmap":{...}}) in the releases before.
type osdMapWire struct {
	osdCountsWire
	Nested *osdCountsWire `json:"osdmap"`
}

type osdCountsWire struct {
	NumOSDs   *int64 `json:"num_osds"`
	NumUpOSDs *int64 `json:"num_up_osds"`
	NumInOSDs *int64 `json:"num_in_osds"`
}

// ParseStatus reads the output of ceph status --format json (also ceph -s
// -f json): the PG counts by state (pgmap.pgs_by_state, pgmap.num_pgs,
// pgmap.num_pools), the OSD totals (osdmap, flat as Pacific and later print
// it or nested as earlier releases do), the fsid and the overall health.
// Other members are ignored. The pgmap is required; repeated states are
// added up. The returned Status has no Placement.
func ParseStatus(data []byte) (*Status, error) {
	var w statusWire
	if err := decodeObject(InputStatus, data, &w); err != nil {
		return nil, err
	}
	s := &Status{FSID: w.FSID, NumPools: -1}
	if w.Health != nil {
		s.Health = firstNonEmpty(w.Health.Status, w.Health.OverallStatus)
	}
	if w.PGMap == nil {
		return nil, &ParseError{Input: InputStatus, Field: "pgmap", Err: errors.New("missing")}
	}
	entries := make([]stateCount, len(w.PGMap.PGsByState))
	for i, e := range w.PGMap.PGsByState {
		entries[i] = stateCount{e.StateName, e.Count}
	}
	pgs, err := pgCounts(InputStatus, "pgmap.pgs_by_state", entries, "state_name", "count")
	if err != nil {
		return nil, err
	}
	s.PGs = pgs
	if s.NumPGs, err = countField(InputStatus, "pgmap.num_pgs", w.PGMap.NumPGs, true); err != nil {
		return nil, err
	}
	if w.PGMap.NumPools != nil {
		n, err := countField(InputStatus, "pgmap.num_pools", w.PGMap.NumPools, true)
		if err != nil {
			return nil, err
		}
		s.NumPools = int(min(n, math.MaxInt32))
	}
	if w.OSDMap != nil {
		c, field := &w.OSDMap.osdCountsWire, "osdmap."
		if c.NumOSDs == nil && w.OSDMap.Nested != nil {
			c, field = w.OSDMap.Nested, "osdmap.osdmap."
		}
		if c.NumOSDs != nil {
			var counts [3]int64
			for i, f := range []struct {
				name string
				v    *int64
			}{{"num_osds", c.NumOSDs}, {"num_up_osds", c.NumUpOSDs}, {"num_in_osds", c.NumInOSDs}} {
				if counts[i], err = countField(InputStatus, field+f.name, f.v, true); err != nil {
					return nil, err
				}
			}
			s.OSDs = OSDCounts{Total: clampInt(counts[0]), Up: clampInt(counts[1]), In: clampInt(counts[2])}
			s.OSDsKnown = true
		}
	}
	return s, nil
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func clampInt(v int64) int { return int(min(v, math.MaxInt32)) }

// pgSummaryWire is ceph pg stat's summary.
type pgSummaryWire struct {
	NumPGByState []struct {
		Name *string `json:"name"`
		Num  *int64  `json:"num"`
	} `json:"num_pg_by_state"`
	NumPGs *int64 `json:"num_pgs"`
}

// pgStatWire is ceph pg stat: the summary nested in pg_summary beside
// pg_ready (Nautilus and later, from the manager), or at the top level
// (earlier releases, from the monitor).
type pgStatWire struct {
	pgSummaryWire
	PGReady   *bool          `json:"pg_ready"`
	PGSummary *pgSummaryWire `json:"pg_summary"`
}

// ParsePGStat reads the output of ceph pg stat --format json, in either of
// the shapes releases print: {"pg_ready":true,"pg_summary":{"num_pg_by_state":
// [{"name":"active+clean","num":129}],"num_pgs":129,...}} (Nautilus and
// later) or the summary at the top level (earlier). pg_ready false sets
// Status.PGStatsNotReady. The returned Status has the PG counts only:
// NumPools is -1, no OSD totals, no Placement.
func ParsePGStat(data []byte) (*Status, error) {
	var w pgStatWire
	if err := decodeObject(InputPGStat, data, &w); err != nil {
		return nil, err
	}
	sum, field := &w.pgSummaryWire, ""
	if w.PGSummary != nil {
		sum, field = w.PGSummary, "pg_summary."
	}
	if sum.NumPGs == nil && sum.NumPGByState == nil {
		return nil, &ParseError{Input: InputPGStat, Field: "pg_summary", Err: errors.New("missing")}
	}
	entries := make([]stateCount, len(sum.NumPGByState))
	for i, e := range sum.NumPGByState {
		entries[i] = stateCount{e.Name, e.Num}
	}
	pgs, err := pgCounts(InputPGStat, field+"num_pg_by_state", entries, "name", "num")
	if err != nil {
		return nil, err
	}
	s := &Status{PGs: pgs, NumPools: -1, PGStatsNotReady: w.PGReady != nil && !*w.PGReady}
	if s.NumPGs, err = countField(InputPGStat, field+"num_pgs", sum.NumPGs, true); err != nil {
		return nil, err
	}
	return s, nil
}

// treeNode is one node of ceph osd tree: a bucket (negative id) or an OSD.
type treeNode struct {
	ID       *int64  `json:"id"`
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Children []int64 `json:"children"`
	Status   string  `json:"status"`
	Exists   *int64  `json:"exists"`
}

// maxTreeDepth bounds the walk from an OSD up to its host.
const maxTreeDepth = 64

// ParseOSDTree reads the output of ceph osd tree --format json (or ceph osd
// crush tree --format json, which has no states) into the OSD placement:
// each OSD with the host bucket it is linked under (the nearest bucket of
// type "host" above it) and its state ("up", "down", "destroyed"; exists 0
// counts as destroyed; no status is OSDStateUnknown). Stray OSDs (in the
// OSD map, not in CRUSH) have no host. The result is sorted by ID, then
// host, and is never nil.
func ParseOSDTree(data []byte) ([]OSD, error) {
	var w struct {
		Nodes *[]treeNode `json:"nodes"`
		Stray []treeNode  `json:"stray"`
	}
	if err := decodeObject(InputOSDTree, data, &w); err != nil {
		return nil, err
	}
	if w.Nodes == nil {
		return nil, &ParseError{Input: InputOSDTree, Field: "nodes", Err: errors.New("missing")}
	}
	nodes := *w.Nodes
	index := make(map[int64]int, len(nodes))
	parents := make(map[int64][]int64, len(nodes))
	for i, n := range nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		if err := checkTreeNode(field, n); err != nil {
			return nil, err
		}
		if _, dup := index[*n.ID]; dup {
			return nil, &ParseError{Input: InputOSDTree, Field: field + ".id", Err: fmt.Errorf("id %d listed twice", *n.ID)}
		}
		index[*n.ID] = i
		for _, c := range n.Children {
			parents[c] = append(parents[c], *n.ID)
		}
	}
	osds := []OSD{}
	for _, n := range nodes {
		if *n.ID < 0 {
			continue
		}
		state := treeState(n)
		hosts := hostsAbove(*n.ID, nodes, index, parents)
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		for _, h := range hosts {
			osds = append(osds, OSD{ID: int(*n.ID), Host: h, State: state})
		}
	}
	for i, n := range w.Stray {
		field := fmt.Sprintf("stray[%d]", i)
		if err := checkTreeNode(field, n); err != nil {
			return nil, err
		}
		if *n.ID < 0 {
			return nil, &ParseError{Input: InputOSDTree, Field: field + ".id", Err: fmt.Errorf("stray bucket %d", *n.ID)}
		}
		osds = append(osds, OSD{ID: int(*n.ID), State: treeState(n)})
	}
	sortOSDs(osds)
	return osds, nil
}

// checkTreeNode checks the fields of a tree node that are relied on.
func checkTreeNode(field string, n treeNode) error {
	switch {
	case n.ID == nil:
		return &ParseError{Input: InputOSDTree, Field: field + ".id", Err: errors.New("missing")}
	case *n.ID > math.MaxInt32 || *n.ID < math.MinInt32:
		return &ParseError{Input: InputOSDTree, Field: field + ".id", Err: fmt.Errorf("id %d out of range", *n.ID)}
	case *n.ID >= 0 && n.Type != "osd":
		return &ParseError{Input: InputOSDTree, Field: field + ".type", Err: fmt.Errorf("id %d is an OSD's, but the type is %q", *n.ID, clip(n.Type, 32))}
	case *n.ID < 0 && n.Type == "osd":
		return &ParseError{Input: InputOSDTree, Field: field + ".id", Err: fmt.Errorf("OSD with a bucket's id %d", *n.ID)}
	}
	return nil
}

// treeState reads an OSD's state from its tree node.
func treeState(n treeNode) OSDState {
	if n.Exists != nil && *n.Exists == 0 {
		return OSDDestroyed
	}
	switch n.Status {
	case "up":
		return OSDUp
	case "down":
		return OSDDown
	case "destroyed":
		return OSDDestroyed
	}
	return OSDStateUnknown
}

// hostsAbove returns the names of the nearest host buckets above id, one
// for each path up the tree, without repeats.
func hostsAbove(id int64, nodes []treeNode, index map[int64]int, parents map[int64][]int64) []string {
	var hosts []string
	seen := map[int64]bool{id: true}
	frontier := []int64{id}
	for depth := 0; len(frontier) > 0 && depth < maxTreeDepth; depth++ {
		var next []int64
		for _, c := range frontier {
			for _, p := range parents[c] {
				if seen[p] {
					continue
				}
				seen[p] = true
				i, ok := index[p]
				if !ok {
					continue
				}
				if nodes[i].Type == "host" {
					if !slices.Contains(hosts, nodes[i].Name) {
						hosts = append(hosts, nodes[i].Name)
					}
					continue
				}
				next = append(next, p)
			}
		}
		frontier = next
	}
	return hosts
}

func sortOSDs(osds []OSD) {
	slices.SortFunc(osds, func(a, b OSD) int {
		if a.ID != b.ID {
			return a.ID - b.ID
		}
		return strings.Compare(a.Host, b.Host)
	})
}

// ParsePoolList returns the number of pools in the output of ceph osd
// pool ls --format json (a JSON list of the pools' names).
func ParsePoolList(data []byte) (int, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0, &ParseError{Input: InputPoolList, Err: errors.New("not a JSON list")}
	}
	var pools []string
	if err := decode(InputPoolList, trimmed, &pools); err != nil {
		return 0, err
	}
	return len(pools), nil
}

// ParseOSDMetadata reads the output of ceph osd metadata --format json (a
// list with one object per OSD; or one object, as ceph osd metadata <id>
// prints it) into the OSD placement: each OSD with its hostname. The
// metadata says nothing of the OSDs' states: they are OSDStateUnknown. The
// result is sorted by ID and is never nil.
func ParseOSDMetadata(data []byte) ([]OSD, error) {
	type entry struct {
		ID       *int64  `json:"id"`
		Hostname *string `json:"hostname"`
	}
	trimmed := bytes.TrimSpace(data)
	var entries []entry
	switch {
	case len(trimmed) == 0:
		return nil, &ParseError{Input: InputOSDMetadata, Err: errors.New("empty output")}
	case trimmed[0] == '[':
		if err := decode(InputOSDMetadata, trimmed, &entries); err != nil {
			return nil, err
		}
	case trimmed[0] == '{':
		var e entry
		if err := decode(InputOSDMetadata, trimmed, &e); err != nil {
			return nil, err
		}
		entries = []entry{e}
	default:
		return nil, &ParseError{Input: InputOSDMetadata, Err: errors.New("not a JSON list")}
	}
	osds := make([]OSD, 0, len(entries))
	for i, e := range entries {
		field := fmt.Sprintf("[%d]", i)
		switch {
		case e.ID == nil:
			return nil, &ParseError{Input: InputOSDMetadata, Field: field + ".id", Err: errors.New("missing")}
		case *e.ID < 0 || *e.ID > math.MaxInt32:
			return nil, &ParseError{Input: InputOSDMetadata, Field: field + ".id", Err: fmt.Errorf("id %d out of range", *e.ID)}
		}
		o := OSD{ID: int(*e.ID)}
		if e.Hostname != nil {
			o.Host = *e.Hostname
		}
		osds = append(osds, o)
	}
	sortOSDs(osds)
	return osds, nil
}
