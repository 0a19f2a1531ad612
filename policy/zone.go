package policy

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// GateZoneStormGuard names the refusals of a ZoneStormGuard.
const GateZoneStormGuard = "zone-storm-guard"

// DefaultZoneLabel is the label that names a node's failure domain, as
// the Kubernetes scheduler and kube-controller-manager read it.
const DefaultZoneLabel = "topology.kubernetes.io/zone"

// Defaults of the zone storm guard of DefaultConfig: those with which
// kube-controller-manager stops evicting pods from a zone (its
// --unhealthy-zone-threshold of 55 %, and a zone counts as partly
// disrupted only with more than two not-ready nodes).
const (
	DefaultZoneMaxUnresponsivePercent = 55
	DefaultZoneMinUnresponsive        = 3
)

// ZoneStormGuard refuses fencing during a storm in the candidate's failure
// domain: the nodes that carry the candidate's value of Label (a zone, a
// rack, a power feed). A rack that loses its switch takes 40 nodes of a
// 400-node cluster away, 10 %, far below a cluster-wide bound, yet every
// one of them is healthy behind a dead switch.
//
// It counts as StormGuard does (the candidate always unresponsive), over
// the nodes of the candidate's domain only: a storm is there when more
// than MaxUnresponsivePercent of them are unresponsive (strictly over)
// and at least MinUnresponsive are, so that one node of a two-node rack is
// no storm. Each domain has its own cooldown, measured from the last pass
// that saw its storm. A candidate without the label, or with an empty
// value, belongs to no domain and is admitted (the cluster-wide guard
// still counts it). Its memory lives in the value only: it is not a
// StormMemory, whose single time would hold the whole cluster after a
// restart.
//
// Use it through a pointer and do not copy it after first use. It is safe
// for concurrent use.
type ZoneStormGuard struct {
	// Label is the node label whose value names the domain; ""
	// means DefaultZoneLabel.
	Label string
	// MaxUnresponsivePercent is the highest share of the domain's nodes
	// that may be unresponsive with fencing still admitted; 0 (or less)
	// turns the guard off.
	MaxUnresponsivePercent float64
	// MinUnresponsive is the fewest unresponsive nodes of a domain that
	// make a storm; below 1 means 1.
	MinUnresponsive int
	// Cooldown is how long fencing in a domain stays refused after the
	// last pass that saw its storm.
	Cooldown time.Duration

	mu   sync.Mutex
	last map[string]zoneStorm // domain -> the last storm seen in it
}

type zoneStorm struct {
	at   time.Time
	u, n int
}

func (g *ZoneStormGuard) label() string {
	if g.Label == "" {
		return DefaultZoneLabel
	}
	return g.Label
}

// Admit refuses while a storm is going on, or cooling down, in the
// candidate's domain. Its reasons read
//
//	3 of 4 nodes of topology.kubernetes.io/zone=rack-7 unresponsive (75%), over the limit of 55%; fencing in it resumes 5m0s after the storm ends
//	storm in topology.kubernetes.io/zone=rack-7 last seen at 12:03:00 (3 of 4 nodes unresponsive), cooling down until 12:08:00; now 1 of 4 unresponsive
func (g *ZoneStormGuard) Admit(_ context.Context, c Candidate, cl Cluster) Decision {
	if g.MaxUnresponsivePercent <= 0 {
		return Admitted()
	}
	key := g.label()
	zone := c.labels(cl)[key]
	if zone == "" {
		return Admitted()
	}
	if cl.Now.IsZero() && g.Cooldown > 0 {
		return Refuse(GateZoneStormGuard, "the cluster view has no time (Cluster.Now is zero), so the cooldown cannot be measured")
	}
	n, u, found := 0, 0, false
	for i := range cl.Nodes {
		nd := &cl.Nodes[i]
		if nd.Name == c.Node.Name {
			found = true
			n++
			u++
			continue
		}
		if nd.Labels[key] != zone {
			continue
		}
		n++
		if nd.Unresponsive {
			u++
		}
	}
	if !found {
		n++
		u++
	}
	domain := key + "=" + zone
	if float64(u)*100 > g.MaxUnresponsivePercent*float64(n) && u >= max(g.MinUnresponsive, 1) {
		g.mu.Lock()
		if g.last == nil {
			g.last = map[string]zoneStorm{}
		}
		if prev, ok := g.last[zone]; !ok || cl.Now.After(prev.at) {
			g.last[zone] = zoneStorm{at: cl.Now, u: u, n: n}
		}
		g.mu.Unlock()
		reason := fmt.Sprintf("%d of %d nodes of %s unresponsive (%s%%), over the limit of %s%%", u, n, domain,
			percent(u, n, g.MaxUnresponsivePercent), formatFloat(g.MaxUnresponsivePercent))
		if g.Cooldown > 0 {
			reason += fmt.Sprintf("; fencing in it resumes %s after the storm ends", g.Cooldown)
		}
		return Decision{Gate: GateZoneStormGuard, Reason: reason, RetryAfter: max(g.Cooldown, 0)}
	}
	g.mu.Lock()
	last, ok := g.last[zone]
	g.mu.Unlock()
	if !ok || g.Cooldown <= 0 {
		return Admitted()
	}
	until := last.at.Add(g.Cooldown)
	if !cl.Now.Before(until) {
		return Admitted()
	}
	layout := time.TimeOnly
	if !sameDay(last.at, cl.Now) || !sameDay(until, cl.Now) {
		layout = time.DateTime
	}
	loc := cl.Now.Location()
	d := Refuse(GateZoneStormGuard, "storm in %s last seen at %s (%d of %d nodes unresponsive), cooling down until %s; now %d of %d unresponsive",
		domain, last.at.In(loc).Format(layout), last.u, last.n, until.In(loc).Format(layout), u, n)
	d.RetryAfter = until.Sub(cl.Now)
	return d
}
