package fencegroup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/policy"
)

// GateName is the name the gate gives in its refusals, followed by "/" and
// the cluster's name: "ceph-fence-group/rook-ceph".
const GateName = "ceph-fence-group"

// GateOptions configure a Gate. The zero value works.
type GateOptions struct {
	// Rules are the budget and membership rules; the labeler must use the
	// same.
	Rules Rules
	// RetryAfter is the hint given with a refusal. Zero means the health's
	// refresh interval when it has one (as *Health does), else
	// DefaultInterval.
	RetryAfter time.Duration
}

// Gate is the policy gate of one Ceph cluster's fence group, for the fence
// controller. A node in the group is fenced only when the cluster's budget
// allows one more unavailable machine, counting the other machines of the
// group that are already unavailable; a node outside the group passes
// through (it is admitted here and left to the other gates).
//
// A node is in the group when it carries the label Label(cluster), with
// any value, or when the placement in the health's status puts OSDs of the
// cluster on it (matching its name or its kubernetes.io/hostname label, by
// full or short name, under the Rules' membership rule): a label the
// labeler has not written yet does not let a node slip out of its group.
//
// The budget is the snapshot's (Snapshot.Budget), judged at the cluster
// view's time: 1 when every PG is active+clean, 0 otherwise, and 0 when the
// health is stale or not read yet. The candidate itself is the one more;
// another node of the group counts as unavailable when it is being fenced
// (policy.Node.Fencing: admitted and not recovered yet), or when it is
// unresponsive and comes before the candidate by name. Unresponsive nodes
// must count, or two nodes failing at once would both be admitted before
// either is marked as being fenced; but if each counted against the other,
// neither would ever be fenced. Ordering them by name breaks the tie the
// same way whichever the controller asks first: the first goes, the others
// wait for it (and, once it is fenced, for the PGs to be clean again).
// Unresponsive nodes whose OSDs are down need no counting of their own:
// their degraded PGs already make the budget 0.
//
// So, in the two flows of the design:
//
//   - A node to fence whose OSDs are down: Ceph has marked them down, so
//     its PGs are degraded; the node is refused ("12 of 256 PGs not
//     active+clean ...") until Ceph has recovered (marked the OSDs out and
//     backfilled) and every PG is clean again, then admitted. With
//     Rules.ReleaseDownMachines, the labeler takes the node out of the group
//     once Ceph reports all its OSDs down, and the gate then lets it pass.
//   - A node to fence whose OSDs are up (it stopped answering Kubernetes but
//     its OSDs still serve): every PG is clean, the budget is 1 and no other
//     machine of the group is unavailable, so it is admitted. Fencing it
//     takes its OSDs down: the PGs degrade, the budget drops to 0, and
//     another node of the group waits until they are clean again. While the
//     first node is being fenced it counts as unavailable, so a second node
//     is refused even before Ceph has noticed.
//
// The gate decides whether a fencing may start. A candidate already being
// fenced (the controller asks again before each step: power management
// after isolation) is admitted: it holds its place in the budget already,
// and the PGs its own isolation degraded must not stall its fencing
// halfway.
//
// Every refusal says why, with the PG states, the stale health, or the
// nodes already unavailable. Safe for concurrent use.
type Gate struct {
	cluster string
	key     string
	name    string
	health  Snapshotter
	rules   Rules
	retry   time.Duration

	mu       sync.Mutex
	idxFor   *Status
	idxPlace []OSD
	idx      *groupIndex
}

// NewGate returns the gate of cluster reading health.
func NewGate(cluster string, health Snapshotter, opts GateOptions) (*Gate, error) {
	if err := ValidateCluster(cluster); err != nil {
		return nil, err
	}
	if health == nil {
		return nil, errors.New("fencegroup: NewGate: nil health")
	}
	if opts.RetryAfter < 0 {
		return nil, errors.New("fencegroup: NewGate: negative RetryAfter")
	}
	retry := opts.RetryAfter
	if retry == 0 {
		retry = DefaultInterval
		if h, ok := health.(interface{ Interval() time.Duration }); ok && h.Interval() > 0 {
			retry = h.Interval()
		}
	}
	return &Gate{cluster: cluster, key: Label(cluster), name: GateName + "/" + cluster,
		health: health, rules: opts.Rules, retry: retry}, nil
}

// Name returns the name the gate gives in its refusals.
func (g *Gate) Name() string { return g.name }

// Admit admits or refuses fencing c.Node.
func (g *Gate) Admit(_ context.Context, c policy.Candidate, cl policy.Cluster) policy.Decision {
	if c.Node.Fencing {
		// A later step of a fencing admitted before: the node holds its
		// place in the budget already, and its own OSDs going down (as
		// its isolation takes them) must not stall its fencing halfway.
		return policy.Admitted()
	}
	snap := g.health.At(cl.Now)
	idx := g.index(snap.Status)
	if !g.inGroup(c.Node, idx) {
		return policy.Admitted()
	}
	b := snap.Budget(g.rules)
	if b.MaxUnavailable <= 0 {
		d := policy.Refuse(g.name, "%s; %s is in its fence group", b.Reason, c.Node.Name)
		d.RetryAfter = g.retry
		return d
	}
	var others []string
	for _, n := range cl.Nodes {
		// An unresponsive node not being fenced yet counts only when it
		// comes before the candidate by name: two nodes failing together
		// must not hold each other off forever.
		counts := n.Fencing || n.Unresponsive && n.Name < c.Node.Name
		if n.Name == c.Node.Name || !counts || !g.inGroup(n, idx) {
			continue
		}
		what := "unresponsive"
		if n.Fencing {
			what = "being fenced"
		}
		others = append(others, n.Name+" ("+what+")")
	}
	if len(others) >= b.MaxUnavailable {
		verb := "is"
		if len(others) > 1 {
			verb = "are"
		}
		d := policy.Refuse(g.name, "Ceph cluster %s allows %d unavailable machine in its fence group and %s %s already unavailable",
			g.cluster, b.MaxUnavailable, listNames(others, 5), verb)
		d.RetryAfter = g.retry
		return d
	}
	return policy.Admitted()
}

// inGroup reports whether n is in the fence group.
func (g *Gate) inGroup(n policy.Node, idx *groupIndex) bool {
	if _, ok := n.Labels[g.key]; ok {
		return true
	}
	return idx != nil && idx.has(n.Name, n.Labels[HostnameLabel])
}

// index returns the group index of st's placement, nil when there is none;
// it is built once per status.
func (g *Gate) index(st *Status) *groupIndex {
	if st == nil || st.Placement == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idxFor != st || !sameSlice(g.idxPlace, st.Placement) {
		g.idxFor, g.idxPlace, g.idx = st, st.Placement, g.rules.newGroupIndex(st.Placement)
	}
	return g.idx
}

// sameSlice reports whether a and b are the same slice (same array, same
// length), so that a status whose placement was replaced is indexed again.
func sameSlice(a, b []OSD) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// listNames joins names, at most n of them.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// Gates is the gate of several Ceph clusters: each gate is asked in order
// and the first refusal wins (the later gates are not asked). A node in
// no cluster's group passes through.
type Gates []*Gate

// Admit asks every gate in order and returns the first refusal, or admits.
func (gs Gates) Admit(ctx context.Context, c policy.Candidate, cl policy.Cluster) policy.Decision {
	for _, g := range gs {
		if d := g.Admit(ctx, c, cl); !d.Admit {
			return d
		}
	}
	return policy.Admitted()
}

var (
	_ policy.Gate = (*Gate)(nil)
	_ policy.Gate = Gates(nil)
)
