package policy

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Names of the gates of this package, as they appear in Decision.Gate.
const (
	// GateStormGuard names the refusals of a StormGuard.
	GateStormGuard = "storm-guard"
	// GateMaxInFlight names the refusals of MaxInFlight.
	GateMaxInFlight = "max-in-flight"
	// GateControlPlane names the refusals of OneControlPlane.
	GateControlPlane = "control-plane"
)

// StormGuard refuses fencing during a fencing storm: while more nodes are
// unresponsive than a bound allows, and for Cooldown after the last pass
// that saw it. Many nodes going silent at once is more likely a failure of
// the network or of the observer than of the nodes; fencing them would take
// down healthy machines.
//
// How it counts: a node is unresponsive when its Node.Unresponsive is true,
// whether or not it is being fenced (a node being fenced, or fenced and not
// yet back, is still missing from the cluster). The candidate always counts
// as unresponsive, whatever its entry says: it is a candidate because it
// stopped answering. A candidate missing from Cluster.Nodes counts as one
// more node, unresponsive. Nodes are matched to the candidate by name.
//
// A storm is there when the unresponsive count is over MaxUnresponsive, or
// its share of all nodes is over MaxUnresponsivePercent (strictly over: 10
// of 20 nodes is not over 50 %). A bound of 0 is off; with both off the
// guard never sees a storm. An empty cluster view (no nodes at all) is
// refused: no share can be computed, and a controller that sees no node has
// lost its view of the cluster. So is a view without a time (Cluster.Now
// zero) when there is a cooldown to measure.
//
// The cooldown is measured from the last Cluster.Now at which the guard saw
// the storm, so the guard only learns of storms it is asked about; put it
// first in All so that every pass reaches it. A Now earlier than the last
// storm seen (views out of order) is still in the cooldown. The memory
// lives in the value and is lost when the process restarts; LastStorm and
// RecordStorm let a controller keep it elsewhere.
//
// Use a StormGuard through a pointer and do not copy it after first use. It
// is safe for concurrent use.
type StormGuard struct {
	// MaxUnresponsivePercent is the highest share of unresponsive nodes,
	// in percent of all nodes (the candidate included), at which fencing
	// is still admitted; 0 (or less) turns the bound off.
	MaxUnresponsivePercent float64
	// MaxUnresponsive is the highest number of unresponsive nodes at which
	// fencing is still admitted; 0 (or less) turns the bound off.
	MaxUnresponsive int
	// Cooldown is how long fencing stays refused after the last pass that
	// saw a storm. Zero admits again at the first pass without a storm.
	Cooldown time.Duration

	mu        sync.Mutex
	lastStorm time.Time // zero: no storm seen
	lastU     int       // unresponsive nodes at lastStorm
	lastN     int       // nodes at lastStorm (0 when restored by RecordStorm)
}

// Admit refuses while a storm is going on or cooling down and admits
// otherwise. A refusal during a storm gives RetryAfter = Cooldown, the
// earliest time fencing can be admitted again; one during the cooldown
// gives the time left. Its reasons read
//
//	7 of 20 nodes unresponsive (35%), over the limit of 30%; fencing resumes 5m0s after the storm ends
//	storm last seen at 12:03:00 (7 of 20 nodes unresponsive), cooling down until 12:08:00; now 1 of 20 nodes unresponsive
//
// with times in the location of Cluster.Now, and dates when they are not
// on its day.
func (g *StormGuard) Admit(_ context.Context, c Candidate, cl Cluster) Decision {
	if len(cl.Nodes) == 0 {
		return Refuse(GateStormGuard, "the cluster view has no nodes, so the share of unresponsive nodes is unknown")
	}
	if cl.Now.IsZero() && g.Cooldown > 0 {
		return Refuse(GateStormGuard, "the cluster view has no time (Cluster.Now is zero), so the cooldown cannot be measured")
	}
	n, u := len(cl.Nodes), 0
	found := false
	for i := range cl.Nodes {
		nd := &cl.Nodes[i]
		if nd.Name == c.Node.Name {
			found = true
			u++
			continue
		}
		if nd.Unresponsive {
			u++
		}
	}
	if !found {
		n++
		u++
	}
	overPct := g.MaxUnresponsivePercent > 0 && float64(u)*100 > g.MaxUnresponsivePercent*float64(n)
	overN := g.MaxUnresponsive > 0 && u > g.MaxUnresponsive

	g.mu.Lock()
	if overPct || overN {
		if cl.Now.After(g.lastStorm) || g.lastStorm.IsZero() {
			g.lastStorm, g.lastU, g.lastN = cl.Now, u, n
		}
		g.mu.Unlock()
		return g.stormRefusal(u, n, overPct, overN)
	}
	last, lastU, lastN := g.lastStorm, g.lastU, g.lastN
	g.mu.Unlock()

	if last.IsZero() || g.Cooldown <= 0 {
		return Admitted()
	}
	until := last.Add(g.Cooldown)
	if !cl.Now.Before(until) {
		return Admitted()
	}
	seen := ""
	if lastN > 0 {
		seen = fmt.Sprintf(" (%d of %d nodes unresponsive)", lastU, lastN)
	}
	layout := time.TimeOnly
	if !sameDay(last, cl.Now) || !sameDay(until, cl.Now) {
		layout = time.DateTime
	}
	loc := cl.Now.Location()
	d := Refuse(GateStormGuard, "storm last seen at %s%s, cooling down until %s; now %d of %d nodes unresponsive",
		last.In(loc).Format(layout), seen, until.In(loc).Format(layout), u, n)
	d.RetryAfter = until.Sub(cl.Now)
	return d
}

func (g *StormGuard) stormRefusal(u, n int, overPct, overN bool) Decision {
	pctLimit := 0.0
	if overPct {
		pctLimit = g.MaxUnresponsivePercent
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d nodes unresponsive (%s%%), over the limit", u, n, percent(u, n, pctLimit))
	switch {
	case overPct && overN:
		fmt.Fprintf(&b, "s of %s%% and %d nodes", formatFloat(g.MaxUnresponsivePercent), g.MaxUnresponsive)
	case overPct:
		fmt.Fprintf(&b, " of %s%%", formatFloat(g.MaxUnresponsivePercent))
	default:
		fmt.Fprintf(&b, " of %d nodes", g.MaxUnresponsive)
	}
	if g.Cooldown > 0 {
		fmt.Fprintf(&b, "; fencing resumes %s after the storm ends", g.Cooldown)
	}
	return Decision{Gate: GateStormGuard, Reason: b.String(), RetryAfter: max(g.Cooldown, 0)}
}

// LastStorm returns the Cluster.Now of the last pass that saw a storm, or
// the time given to RecordStorm if later; zero when no storm was seen.
func (g *StormGuard) LastStorm() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastStorm
}

// RecordStorm tells the guard that a storm was seen at t, as if a pass at t
// had seen one, so that a controller restarting during a cooldown can
// restore it (from LastStorm saved before). A t earlier than the storm the
// guard remembers changes nothing.
func (g *StormGuard) RecordStorm(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(g.lastStorm) {
		g.lastStorm, g.lastU, g.lastN = t, 0, 0
	}
}

// MaxInFlight refuses a fencing when N fencings are already in flight: N
// nodes other than the candidate have Node.Fencing set. A fenced node stays
// in flight until it has recovered or its fencing is cleared, so the limit
// also bounds how many nodes fencing may keep down at once. The candidate
// itself is not counted, so a fencing already admitted may go on to its
// next step. An N below 1 refuses every fencing.
type MaxInFlight struct {
	// N is the number of fencings in flight at which a new one is refused.
	N int
}

// Admit refuses when N or more other nodes are being fenced.
func (g MaxInFlight) Admit(_ context.Context, c Candidate, cl Cluster) Decision {
	k := 0
	for i := range cl.Nodes {
		if cl.Nodes[i].Fencing && cl.Nodes[i].Name != c.Node.Name {
			k++
		}
	}
	if k < g.N {
		return Admitted()
	}
	if g.N < 1 {
		return Refuse(GateMaxInFlight, "the limit of fencings in flight is %d, so no fencing may start", g.N)
	}
	at := "at"
	if k > g.N {
		at = "over"
	}
	inFlight, _ := names(cl.Nodes, c.Node.Name, func(n *Node) bool { return n.Fencing })
	return Refuse(GateMaxInFlight, "%s in flight (%s), %s the limit of %d", plural(k, "fencing", "fencings"), inFlight, at, g.N)
}

// OneControlPlane lets at most one control-plane node be fenced at a time:
// it refuses a control-plane candidate while another control-plane node is
// being fenced (Node.Fencing), so that fencing never takes two members of
// the control plane (and of its etcd quorum) down together. The candidate
// is a control-plane node when Candidate.Node or its entry in Cluster.Nodes
// says so. Other candidates are always admitted.
type OneControlPlane struct{}

// Admit refuses a control-plane candidate while another control-plane node
// is being fenced.
func (OneControlPlane) Admit(_ context.Context, c Candidate, cl Cluster) Decision {
	cp := c.Node.ControlPlane
	other := -1
	for i := range cl.Nodes {
		nd := &cl.Nodes[i]
		if nd.Name == c.Node.Name {
			cp = cp || nd.ControlPlane
			continue
		}
		if nd.ControlPlane && nd.Fencing && other < 0 {
			other = i
		}
	}
	if !cp || other < 0 {
		return Admitted()
	}
	fencing, k := names(cl.Nodes, c.Node.Name, func(n *Node) bool { return n.ControlPlane && n.Fencing })
	if k == 1 {
		return Refuse(GateControlPlane, "control-plane node %s is being fenced; one control-plane node at a time", fencing)
	}
	return Refuse(GateControlPlane, "control-plane nodes %s are being fenced; one control-plane node at a time", fencing)
}

// All returns a gate that asks gates in order and returns the first
// refusal; the gates after it are not asked, so a gate that learns from
// what it is asked (StormGuard) belongs first. With every gate admitting,
// or no gates at all, it admits. A refusal that does not name its gate is
// named "gate N" (N counted from 1). All panics when a gate is nil.
func All(gates ...Gate) Gate {
	gs := make(all, len(gates))
	for i, g := range gates {
		if g == nil {
			panic(fmt.Sprintf("policy.All: gate %d of %d is nil", i+1, len(gates)))
		}
		gs[i] = g
	}
	return gs
}

type all []Gate

// StormMemory is a gate that remembers the last storm it saw: StormGuard,
// and All, which speaks for the StormMemory gates among its own. A
// controller keeps that memory where every instance finds it (the
// fence/controller admission ledger), so that a new leader honours a
// cooldown its predecessor started.
type StormMemory interface {
	// LastStorm returns when a storm was last seen; zero for none.
	LastStorm() time.Time
	// RecordStorm tells the gate that a storm was seen at t; an earlier t
	// than the one it remembers changes nothing.
	RecordStorm(t time.Time)
}

// LastStorm returns the latest LastStorm of the gates that remember storms.
func (gs all) LastStorm() time.Time {
	var last time.Time
	for _, g := range gs {
		if m, ok := g.(StormMemory); ok {
			if t := m.LastStorm(); t.After(last) {
				last = t
			}
		}
	}
	return last
}

// RecordStorm records t in every gate that remembers storms.
func (gs all) RecordStorm(t time.Time) {
	for _, g := range gs {
		if m, ok := g.(StormMemory); ok {
			m.RecordStorm(t)
		}
	}
}

func (gs all) Admit(ctx context.Context, c Candidate, cl Cluster) Decision {
	for i, g := range gs {
		d := g.Admit(ctx, c, cl)
		if d.Admit {
			continue
		}
		if d.Gate == "" {
			d.Gate = "gate " + strconv.Itoa(i+1)
		}
		if d.Reason == "" {
			d.Reason = "no reason given"
		}
		return d
	}
	return Admitted()
}

// maxNames is how many node names a reason lists before "and N more".
const maxNames = 3

// names lists the nodes other than skip for which pick is true, "a, b, c
// and 4 more", and counts them.
func names(nodes []Node, skip string, pick func(*Node) bool) (string, int) {
	var b strings.Builder
	k := 0
	for i := range nodes {
		nd := &nodes[i]
		if nd.Name == skip || !pick(nd) {
			continue
		}
		if k < maxNames {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(nd.Name)
		}
		k++
	}
	if k > maxNames {
		fmt.Fprintf(&b, " and %d more", k-maxNames)
	}
	return b.String(), k
}

func plural(k int, one, many string) string {
	if k == 1 {
		return "1 " + one
	}
	return strconv.Itoa(k) + " " + many
}

// percent formats u of n in percent with one decimal, or with more when
// one would not show the share over limit (a positive limit it is over).
func percent(u, n int, limit float64) string {
	p := float64(u) * 100 / float64(n)
	for prec := 1; ; prec++ {
		scale := math.Pow(10, float64(prec))
		r := math.Round(p*scale) / scale
		if limit <= 0 || r > limit || prec >= 6 {
			return formatFloat(r)
		}
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// sameDay reports whether t falls on now's date, in now's location.
func sameDay(t, now time.Time) bool {
	y, m, d := t.In(now.Location()).Date()
	return y == now.Year() && m == now.Month() && d == now.Day()
}
