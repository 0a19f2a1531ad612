package fencegroup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LabelPrefix is the prefix of the fence-group labels: machines running OSDs
// of Ceph cluster <name> carry the label fencegroup.rook.io/<name>.
const LabelPrefix = "fencegroup.rook.io/"

// LabelValue is the value written with a fence-group label. Only the
// label's presence counts: a machine carrying the key with any value is in
// the group, and selectors match the key with the Exists operator.
const LabelValue = ""

// HostnameLabel is the well-known label holding a node's hostname, which the
// gate tries beside the node's name when it matches OSD hosts.
const HostnameLabel = "kubernetes.io/hostname"

// Label returns the label key of cluster's fence group:
// "fencegroup.rook.io/<cluster>". It does not check the name (see
// ValidateCluster).
func Label(cluster string) string { return LabelPrefix + cluster }

// ErrInvalidCluster marks a cluster name that cannot name a fence group.
var ErrInvalidCluster = errors.New("invalid Ceph cluster name")

// ValidateCluster checks that cluster can name a fence group: it must be
// valid as the name part of a label key (1 to 63 characters, letters,
// digits, '-', '_' and '.', beginning and ending with a letter or digit).
// The error wraps ErrInvalidCluster.
func ValidateCluster(cluster string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidCluster, clip(cluster, 80), why)
	}
	switch {
	case cluster == "":
		return fmt.Errorf("%w: empty", ErrInvalidCluster)
	case len(cluster) > 63:
		return bad("longer than 63 characters, the limit of a label name")
	case !alnum(cluster[0]) || !alnum(cluster[len(cluster)-1]):
		return bad("must begin and end with a letter or digit")
	}
	for i := 0; i < len(cluster); i++ {
		if c := cluster[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return bad("only letters, digits, '-', '_' and '.' are allowed in a label name")
		}
	}
	return nil
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Machine is one machine that may carry a fence-group label: a Kubernetes
// Node, or a cluster-api Machine.
type Machine struct {
	// Name is the name of the object that carries the label.
	Name string
	// Hosts are the other names the machine goes by in Ceph: a Machine's
	// node name, a node's hostname. Name is always tried too.
	Hosts []string
	// Labels are the object's labels.
	Labels map[string]string
}

// LabelChange is one label to add to or remove from a machine.
type LabelChange struct {
	// Machine names the machine.
	Machine string
	// Key is the label key, Label(cluster).
	Key string
	// Add is true to add the label (with LabelValue), false to remove it.
	Add bool
	// Reason says why: "runs osd.0, osd.3 of Ceph cluster rook-ceph".
	Reason string
}

// String renders the change for logs: "add fencegroup.rook.io/x to node-a
// (runs osd.0)".
func (c LabelChange) String() string {
	if c.Add {
		return fmt.Sprintf("add %s to %s (%s)", c.Key, c.Machine, c.Reason)
	}
	return fmt.Sprintf("remove %s from %s (%s)", c.Key, c.Machine, c.Reason)
}

// Member is a machine of a fence group and the OSDs that put it there.
type Member struct {
	// Machine names the machine.
	Machine string
	// OSDs are the cluster's OSDs placed on it.
	OSDs []OSD
}

// LabelPlan is what the labels of a cluster's fence group should be.
type LabelPlan struct {
	// Cluster names the Ceph cluster; Key is its label key.
	Cluster, Key string
	// Members are the machines in the group, in the order of the machines
	// given.
	Members []Member
	// Changes are the label changes that bring the machines there: for
	// each machine at most one, additions before removals.
	Changes []LabelChange
	// UnmatchedHosts are the OSD hosts that match no machine, sorted: their
	// OSDs protect no machine (a host outside the cluster, or a host name
	// that needs Machine.Hosts).
	UnmatchedHosts []string
}

// ErrPlacementUnknown is returned when the OSD placement was not read: no
// label is added or removed on a guess.
var ErrPlacementUnknown = errors.New("OSD placement unknown")

// Labels computes the fence group of cluster from the OSD placement, and the
// label changes that make every machine running OSDs of the cluster carry
// Label(cluster) and every other machine not carry it.
//
// An OSD's host matches a machine when, compared without case and with dots
// taken as dashes (as Rook names CRUSH hosts after nodes), it equals the
// machine's Name or one of its Hosts; when no machine matches that way, a
// machine matches by short name (the part before the first dot, on either
// side). A host that matches several machines puts all of them in the
// group. A machine is in the group while at least one OSD of the cluster
// that is not destroyed is placed on it, up or down; with
// ReleaseDownMachines, only while at least one of them is up or of unknown
// state.
//
// A nil placement is ErrPlacementUnknown; an invalid cluster name, a machine
// without a name or two machines with the same name are errors too.
func (r Rules) Labels(cluster string, placement []OSD, machines []Machine) (LabelPlan, error) {
	if err := ValidateCluster(cluster); err != nil {
		return LabelPlan{}, err
	}
	key := Label(cluster)
	plan := LabelPlan{Cluster: cluster, Key: key}
	if placement == nil {
		return plan, fmt.Errorf("fencegroup: Ceph cluster %s: %w: labels left as they are", cluster, ErrPlacementUnknown)
	}
	full := map[string][]int{}  // host key -> machine indexes
	short := map[string][]int{} // short host key -> machine indexes
	names := make(map[string]bool, len(machines))
	for i, m := range machines {
		if m.Name == "" {
			return plan, fmt.Errorf("fencegroup: machine %d has no name", i)
		}
		if names[m.Name] {
			return plan, fmt.Errorf("fencegroup: machine %s listed twice", m.Name)
		}
		names[m.Name] = true
		for _, n := range aliases(m.Name, m.Hosts) {
			full[hostKey(n)] = appendOnce(full[hostKey(n)], i)
			short[shortKey(n)] = appendOnce(short[shortKey(n)], i)
		}
	}
	osds := make([][]OSD, len(machines))
	unmatched := map[string]bool{}
	for _, o := range placement {
		if o.Host == "" || o.State == OSDDestroyed {
			continue
		}
		idx := full[hostKey(o.Host)]
		if len(idx) == 0 {
			idx = short[shortKey(o.Host)]
		}
		if len(idx) == 0 {
			unmatched[o.Host] = true
		}
		for _, i := range idx {
			osds[i] = append(osds[i], o)
		}
	}
	var adds, removes []LabelChange
	for i, m := range machines {
		_, has := m.Labels[key]
		member := r.member(osds[i])
		if member {
			plan.Members = append(plan.Members, Member{Machine: m.Name, OSDs: osds[i]})
		}
		switch {
		case member && !has:
			adds = append(adds, LabelChange{Machine: m.Name, Key: key, Add: true,
				Reason: fmt.Sprintf("runs %s of Ceph cluster %s", osdList(osds[i]), cluster)})
		case !member && has && len(osds[i]) > 0:
			removes = append(removes, LabelChange{Machine: m.Name, Key: key,
				Reason: fmt.Sprintf("its OSDs of Ceph cluster %s are all down (%s)", cluster, osdList(osds[i]))})
		case !member && has:
			removes = append(removes, LabelChange{Machine: m.Name, Key: key,
				Reason: "runs no OSD of Ceph cluster " + cluster})
		}
	}
	plan.Changes = append(adds, removes...)
	for h := range unmatched {
		plan.UnmatchedHosts = append(plan.UnmatchedHosts, h)
	}
	slices.Sort(plan.UnmatchedHosts)
	return plan, nil
}

// member reports whether OSDs (not destroyed, placed on one machine) keep
// the machine in its group.
func (r Rules) member(osds []OSD) bool {
	if !r.ReleaseDownMachines {
		return len(osds) > 0
	}
	return slices.ContainsFunc(osds, func(o OSD) bool { return o.State == OSDUp || o.State == OSDStateUnknown })
}

// osdList names OSDs for a reason: "osd.0, osd.3", at most 8 of them.
func osdList(osds []OSD) string {
	var b strings.Builder
	var seen []int
	for _, o := range osds {
		if slices.Contains(seen, o.ID) {
			continue
		}
		if len(seen) == 8 {
			b.WriteString(", ...")
			break
		}
		if len(seen) > 0 {
			b.WriteString(", ")
		}
		seen = append(seen, o.ID)
		b.WriteString(o.Name())
	}
	return b.String()
}

func appendOnce(s []int, i int) []int {
	if slices.Contains(s, i) {
		return s
	}
	return append(s, i)
}

// aliases returns name and hosts, without empty names.
func aliases(name string, hosts []string) []string {
	out := make([]string, 0, 1+len(hosts))
	out = append(out, name)
	for _, h := range hosts {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// hostKey normalizes a host name for matching: lower case, dots as dashes.
func hostKey(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), ".", "-")
}

// shortKey is the hostKey of a host's short name, the part before the
// first dot.
func shortKey(s string) string {
	if i := strings.IndexByte(s, '.'); i > 0 {
		s = s[:i]
	}
	return hostKey(s)
}

// groupIndex answers, for one placement, whether a host runs OSDs that keep
// it in its fence group. It matches more loosely than Labels (a full or a
// short name suffices, whatever other machines exist): the gate may only
// err towards counting a node in the group.
type groupIndex struct {
	full, short map[string]bool
}

func (r Rules) newGroupIndex(placement []OSD) *groupIndex {
	byHost := map[string][]OSD{}
	for _, o := range placement {
		if o.Host != "" && o.State != OSDDestroyed {
			byHost[o.Host] = append(byHost[o.Host], o)
		}
	}
	g := &groupIndex{full: map[string]bool{}, short: map[string]bool{}}
	for h, osds := range byHost {
		if r.member(osds) {
			g.full[hostKey(h)] = true
			g.short[shortKey(h)] = true
		}
	}
	return g
}

// has reports whether a machine going by names runs OSDs of the group.
func (g *groupIndex) has(names ...string) bool {
	for _, n := range names {
		if n == "" {
			continue
		}
		if g.full[hostKey(n)] || g.short[shortKey(n)] {
			return true
		}
	}
	return false
}
