package fencegroup

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// PGCount is the number of placement groups in one state, as Ceph counts
// them in pgmap.pgs_by_state (ceph status) or num_pg_by_state (ceph pg stat).
type PGCount struct {
	// State is the state as Ceph prints it: flags joined by "+", such as
	// "active+clean" or "active+undersized+degraded".
	State string
	// Count is the number of PGs in that state.
	Count int64
}

// OSDCounts are the OSD map's totals: how many OSDs exist, are up and are in.
type OSDCounts struct {
	// Total is num_osds.
	Total int
	// Up is num_up_osds.
	Up int
	// In is num_in_osds.
	In int
}

// OSDState is what Ceph says of one OSD.
type OSDState int8

// The OSD states. OSDStateUnknown is the state of an OSD read from a source
// that does not say (ceph osd metadata); it counts as possibly up.
const (
	OSDStateUnknown OSDState = iota
	OSDUp
	OSDDown
	// OSDDestroyed is an OSD marked destroyed, or one the tree lists with
	// exists 0: it holds no data and places no machine in a fence group.
	OSDDestroyed
)

// String returns "up", "down", "destroyed" or "unknown".
func (s OSDState) String() string {
	switch s {
	case OSDUp:
		return "up"
	case OSDDown:
		return "down"
	case OSDDestroyed:
		return "destroyed"
	default:
		return "unknown"
	}
}

// OSD is one OSD and the host it runs on.
type OSD struct {
	// ID is the OSD's number: 3 for osd.3.
	ID int
	// Host is the host the OSD runs on: its CRUSH host bucket (ceph osd
	// tree) or its hostname (ceph osd metadata). Empty for an OSD with no
	// host (a stray OSD, or one linked under no host bucket). An OSD linked
	// under two host buckets appears once for each.
	Host string
	// State is the OSD's state.
	State OSDState
}

// Name returns the OSD's name as Ceph prints it: "osd.3".
func (o OSD) Name() string { return "osd." + strconv.Itoa(o.ID) }

// Status is what is known of one Ceph cluster's health at one time: the
// part of ceph status (and ceph pg stat, ceph osd tree) that fencing needs.
type Status struct {
	// FSID is the cluster's fsid, when the source printed it.
	FSID string
	// Health is the overall health ("HEALTH_OK", "HEALTH_WARN",
	// "HEALTH_ERR"), empty when not printed. It is informative only: the
	// budget depends on the PG states, not on it.
	Health string
	// PGs counts the placement groups by state. A state appears once.
	PGs []PGCount
	// NumPGs is the total number of PGs (num_pgs). The counts in PGs must
	// add up to it for the cluster to count as clean.
	NumPGs int64
	// NumPools is the number of pools (pgmap.num_pools), -1 when the
	// source did not print it.
	NumPools int
	// PGStatsNotReady is true when the manager said it had no PG statistics
	// yet (ceph pg stat's pg_ready false): the counts are not to be trusted.
	PGStatsNotReady bool
	// OSDs are the OSD map's totals; OSDsKnown says whether the source
	// printed them.
	OSDs      OSDCounts
	OSDsKnown bool
	// Placement lists every OSD with its host; nil when it was not read
	// (labels are then left as they are). An empty non-nil slice means the
	// cluster has no OSD.
	Placement []OSD
}

// DefaultCleanFlags are the PG state flags that, beside active and clean,
// leave a PG counting as clean: background scrubbing and snapshot trimming,
// which do not reduce redundancy. They are the states Rook's default
// pgHealthyRegex accepts ("active+clean", "active+clean+scrubbing",
// "active+clean+scrubbing+deep", and with snaptrim and snaptrim_wait).
var DefaultCleanFlags = []string{"scrubbing", "deep", "snaptrim", "snaptrim_wait"}

// Rules are the choices an operator can make about the budget and the
// labels. The zero value is the design's rules.
type Rules struct {
	// CleanFlags lists the PG state flags that, beside active and clean,
	// still count as clean. Nil means DefaultCleanFlags; an empty non-nil
	// slice means exactly "active+clean".
	CleanFlags []string
	// ReleaseDownMachines takes a machine whose OSDs are all down (none up,
	// none of unknown state) out of its fence group: its label is removed,
	// and the gate lets it through to the other gates. This is the first
	// example flow of the upstream design ("machine-controller notices all
	// OSDs on the affected node are down and removes the node from the
	// MDB"): fencing such a machine takes no more data away from Ceph than
	// it has already lost. Off by default: a machine stays in its group
	// while any OSD of the cluster is placed on it, up or down, so that a
	// failed OSD node is fenced only once its PGs are clean again (Ceph
	// marks the OSDs out and recovers by itself).
	ReleaseDownMachines bool
}

// Clean reports whether a PG in state counts as clean: its flags include
// active and clean, and every other flag is one of the rules' CleanFlags.
// Flags are compared whole, in any order.
func (r Rules) Clean(state string) bool {
	allowed := r.CleanFlags
	if allowed == nil {
		allowed = DefaultCleanFlags
	}
	active, clean := false, false
	for rest := state; ; {
		flag, tail, more := strings.Cut(rest, "+")
		switch {
		case flag == "active":
			active = true
		case flag == "clean":
			clean = true
		case !slices.Contains(allowed, flag):
			return false
		}
		if !more {
			break
		}
		rest = tail
	}
	return active && clean
}

// Budget is how many machines of a fence group may be unavailable at once,
// and why.
type Budget struct {
	// MaxUnavailable is 1 when every PG is clean, else 0.
	MaxUnavailable int
	// Clean is true when every PG counts as clean.
	Clean bool
	// NotClean is the number of PGs not clean, when known.
	NotClean int64
	// Total is the number of PGs, when known.
	Total int64
	// Reason says why, in words an operator can act on: "all 256 PGs
	// active+clean", "12 of 256 PGs not active+clean (8
	// active+undersized+degraded, 4 peering)".
	Reason string
}

// maxReasonStates bounds the states a reason lists.
const maxReasonStates = 4

// Budget computes the budget of a cluster from its status: 1 when every PG
// is clean, else 0. A nil status, PG statistics not ready, counts that do
// not add up to the total, or no PG reported while pools exist (or while
// the pool count is unknown) all count as not clean. A cluster that reports
// no pool and no PG counts as clean: it holds no data.
func (r Rules) Budget(s *Status) Budget {
	if s == nil {
		return Budget{Reason: "no Ceph status"}
	}
	b := Budget{Total: s.NumPGs}
	if s.PGStatsNotReady {
		b.Reason = "the Ceph manager has no PG statistics yet"
		return b
	}
	var sum, clean int64
	valid := s.NumPGs >= 0
	for _, p := range s.PGs {
		if p.Count < 0 || sum > math.MaxInt64-p.Count {
			valid = false
			break
		}
		sum += p.Count
		if r.Clean(p.State) {
			clean += p.Count
		}
	}
	switch {
	case !valid:
		b.Reason = "PG counts are invalid"
		return b
	case s.NumPGs == 0 && len(s.PGs) == 0 && s.NumPools == 0:
		b.MaxUnavailable, b.Clean = 1, true
		b.Reason = "no PGs (no pools)"
		return b
	case s.NumPGs == 0 && s.NumPools < 0:
		b.Reason = "no PGs reported and the number of pools is unknown"
		return b
	case s.NumPGs == 0 && s.NumPools > 0:
		b.Reason = fmt.Sprintf("no PGs reported for %d pools", s.NumPools)
		return b
	case sum != s.NumPGs:
		b.Reason = fmt.Sprintf("PG states add up to %d of %d PGs", sum, s.NumPGs)
		return b
	}
	b.NotClean = s.NumPGs - clean
	if b.NotClean == 0 {
		b.MaxUnavailable, b.Clean = 1, true
		b.Reason = fmt.Sprintf("all %d PGs active+clean", s.NumPGs)
		return b
	}
	b.Reason = fmt.Sprintf("%d of %d PGs not active+clean (%s)", b.NotClean, s.NumPGs, r.dirtyStates(s.PGs))
	return b
}

// dirtyStates lists the states that are not clean, largest first, at most
// maxReasonStates of them.
func (r Rules) dirtyStates(pgs []PGCount) string {
	var dirty []PGCount
	for _, p := range pgs {
		if p.Count > 0 && !r.Clean(p.State) {
			dirty = append(dirty, p)
		}
	}
	slices.SortFunc(dirty, func(a, b PGCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.State, b.State)
	})
	var b strings.Builder
	for i, p := range dirty {
		if i == maxReasonStates {
			fmt.Fprintf(&b, ", %d more states", len(dirty)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", p.Count, clip(p.State, 80))
	}
	return b.String()
}

// clip cuts s to at most n bytes, at a rune boundary, for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
