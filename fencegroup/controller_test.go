package fencegroup_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/policy"
)

// simCeph is a Ceph cluster of OSD hosts (two OSDs each) as the budget
// sees it: when a host's OSDs go down, 86 of its 256 PGs degrade
// until the OSDs are back and recovered (5 min), or until Ceph has marked
// them out and backfilled elsewhere (15 min).
type simCeph struct {
	clk   *fencetest.Clock
	names []string
	hosts map[string]*simHost
}

type simHost struct {
	up      bool
	changed time.Time // when up last changed; zero: never
}

const (
	simRecovery = 5 * time.Minute  // back up -> clean
	simOutClean = 15 * time.Minute // down -> marked out and backfilled
)

func newSimCeph(clk *fencetest.Clock, hosts ...string) *simCeph {
	c := &simCeph{clk: clk, names: hosts, hosts: map[string]*simHost{}}
	for _, h := range hosts {
		c.hosts[h] = &simHost{up: true}
	}
	return c
}

func (c *simCeph) setUp(host string, up bool) {
	if h := c.hosts[host]; h != nil && h.up != up {
		h.up, h.changed = up, c.clk.Now()
	}
}

func (c *simCeph) clean() bool {
	now := c.clk.Now()
	for _, h := range c.hosts {
		switch {
		case h.changed.IsZero():
		case h.up && now.Sub(h.changed) < simRecovery:
			return false
		case !h.up && now.Sub(h.changed) < simOutClean:
			return false
		}
	}
	return true
}

// Fetch answers as ceph status plus ceph osd tree would.
func (c *simCeph) Fetch(context.Context) (*fencegroup.Status, error) {
	var osds []fencegroup.OSD
	for i := range 2 * len(c.names) {
		h := c.names[i%len(c.names)]
		s := fencegroup.OSDDown
		if c.hosts[h].up {
			s = fencegroup.OSDUp
		}
		osds = append(osds, fencegroup.OSD{ID: i, Host: h, State: s})
	}
	if c.clean() {
		return statusOf(256, 0, osds), nil
	}
	return statusOf(170, 86, osds), nil
}

// simNode is a node as the simulated fence controller tracks it.
type simNode struct {
	policy.Node
	osdsUpWhenDown bool      // its OSDs keep running while it is unresponsive
	offAt, backAt  time.Time // fencing: power off, then back and ready
}

// simController plays the fence controller around the gate: every pass it
// asks the gate for each unresponsive node not being fenced, fences the
// admitted ones (the power off takes 30 s and takes the node's OSDs down;
// the node is back and ready 3 min later, its OSDs up), refreshes the
// health every minute and keeps the labels as the labeler would.
type simController struct {
	t      *testing.T
	clk    *fencetest.Clock
	ceph   *simCeph
	health *fencegroup.Health
	gate   policy.Gate
	rules  fencegroup.Rules
	nodes  []*simNode
	log    []string
	last   map[string]string // last decision logged per node
}

func newSimController(t *testing.T, rules fencegroup.Rules) *simController {
	clk := newClock()
	ceph := newSimCeph(clk, "worker-0", "worker-1", "worker-2")
	h, err := fencegroup.NewHealth("rook-ceph", ceph, fencegroup.HealthOptions{Now: clk.Now})
	require.NoError(t, err)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{Rules: rules})
	require.NoError(t, err)
	s := &simController{t: t, clk: clk, ceph: ceph, health: h, gate: g, rules: rules, last: map[string]string{}}
	for _, n := range []string{"worker-0", "worker-1", "worker-2", "gpu-0"} {
		s.nodes = append(s.nodes, &simNode{Node: policy.Node{Name: n, Labels: map[string]string{}}})
	}
	s.refresh()
	return s
}

func (s *simController) node(name string) *simNode {
	i := slices.IndexFunc(s.nodes, func(n *simNode) bool { return n.Name == name })
	return s.nodes[i]
}

// fail makes a node unresponsive; its OSDs stay up or go down with it.
func (s *simController) fail(name string, osdsUp bool) {
	n := s.node(name)
	n.Unresponsive, n.osdsUpWhenDown = true, osdsUp
	if !osdsUp {
		s.ceph.setUp(name, false)
	}
}

// refresh reads the health and applies the label plan to the nodes.
func (s *simController) refresh() {
	snap, err := s.health.Refresh(context.Background())
	require.NoError(s.t, err)
	machines := make([]fencegroup.Machine, len(s.nodes))
	for i, n := range s.nodes {
		machines[i] = fencegroup.Machine{Name: n.Name, Labels: n.Labels}
	}
	plan, err := s.rules.Labels("rook-ceph", snap.Status.Placement, machines)
	require.NoError(s.t, err)
	for _, c := range plan.Changes {
		if c.Add {
			s.node(c.Machine).Labels[c.Key] = fencegroup.LabelValue
		} else {
			delete(s.node(c.Machine).Labels, c.Key)
		}
		s.logf("label: %s", c)
	}
}

func (s *simController) logf(format string, args ...any) {
	s.log = append(s.log, s.clk.Now().Format("15:04:05")+" "+fmt.Sprintf(format, args...))
}

func (s *simController) view() policy.Cluster {
	cl := policy.Cluster{Now: s.clk.Now()}
	for _, n := range s.nodes {
		cl.Nodes = append(cl.Nodes, n.Node)
	}
	return cl
}

// pass is one pass of the controller.
func (s *simController) pass() {
	now := s.clk.Now()
	for _, n := range s.nodes {
		switch {
		case n.Fencing && !n.offAt.IsZero() && !now.Before(n.offAt):
			n.offAt = time.Time{}
			s.ceph.setUp(n.Name, false)
			s.logf("%s powered off", n.Name)
		case n.Fencing && n.offAt.IsZero() && !now.Before(n.backAt):
			n.Fencing, n.Unresponsive = false, false
			s.ceph.setUp(n.Name, true)
			s.logf("%s back and ready", n.Name)
		}
	}
	for _, n := range s.nodes {
		if !n.Unresponsive || n.Fencing {
			continue
		}
		d := s.gate.Admit(context.Background(), policy.Candidate{Node: n.Node, Step: "power-management"}, s.view())
		if d.Admit {
			n.Fencing, n.offAt, n.backAt = true, now.Add(30*time.Second), now.Add(3*time.Minute+30*time.Second)
			s.logf("admit %s", n.Name)
			s.last[n.Name] = ""
			continue
		}
		if s.last[n.Name] != d.Reason {
			s.last[n.Name] = d.Reason
			s.logf("refuse %s: %s", n.Name, d.Reason)
		}
	}
	s.checkOneAtATime()
}

// checkOneAtATime checks the budget's promise: never two machines of the
// group fenced at once while their OSDs held the only good copies.
func (s *simController) checkOneAtATime() {
	var fencing []string
	for _, n := range s.nodes {
		if n.Fencing && n.Name != "gpu-0" {
			fencing = append(fencing, n.Name)
		}
	}
	if len(fencing) > 1 && !s.rules.ReleaseDownMachines {
		s.t.Errorf("%s: %v fenced at once", s.clk.Now().Format("15:04:05"), fencing)
	}
}

// run passes every 10 s, refreshing every minute, until done or for at
// most max.
func (s *simController) run(max time.Duration, done func() bool) {
	end := s.clk.Now().Add(max)
	for i := 0; s.clk.Now().Before(end); i++ {
		if i%6 == 0 {
			s.refresh()
		}
		s.pass()
		if done() {
			return
		}
		s.clk.Add(10 * time.Second)
	}
	s.t.Fatalf("not done within %v:\n%s", max, s.dump())
}

func (s *simController) dump() string {
	var b []byte
	for _, l := range s.log {
		b = append(b, l+"\n"...)
	}
	return string(b)
}

func (s *simController) allBack() bool {
	for _, n := range s.nodes {
		if n.Unresponsive || n.Fencing {
			return false
		}
	}
	return true
}

// Two OSD nodes stop answering at once, their OSDs still up (the second
// flow of Rook's Ceph fencing design, twice): one is fenced; the other
// waits while the first is being fenced, then while its PGs recover, and is
// fenced once every PG is clean again. A worker without OSDs is fenced at
// once meanwhile.
func TestControllerTwoOSDNodesFailTogether(t *testing.T) {
	s := newSimController(t, fencegroup.Rules{})
	s.fail("worker-0", true)
	s.fail("worker-1", true)
	s.fail("gpu-0", false)
	s.run(time.Hour, s.allBack)

	assert.Equal(t, []string{
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1, osd.4 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)",
		"12:00:00 admit worker-0",
		"12:00:00 refuse worker-1: Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (being fenced) is already unavailable",
		"12:00:00 admit gpu-0",
		"12:00:30 worker-0 powered off",
		"12:00:30 gpu-0 powered off",
		// The health reads the degraded PGs at its next refresh.
		"12:01:00 refuse worker-1: 86 of 256 PGs not active+clean (86 active+undersized+degraded) in Ceph cluster rook-ceph; worker-1 is in its fence group",
		"12:03:30 worker-0 back and ready",
		"12:03:30 gpu-0 back and ready",
		// worker-0's OSDs are back at 12:03:30 and recovered 5 min later;
		// the health reads that at 12:09:00.
		"12:09:00 admit worker-1",
		"12:09:30 worker-1 powered off",
		"12:12:30 worker-1 back and ready",
	}, s.log)
}

// The first flow of Rook's Ceph fencing design: a node crashes with its
// OSDs. By default it stays in its group and is fenced only once Ceph has
// marked its OSDs out and recovered the PGs elsewhere.
func TestControllerOSDNodeCrashes(t *testing.T) {
	s := newSimController(t, fencegroup.Rules{})
	s.fail("worker-2", false)
	s.run(time.Hour, s.allBack)
	assert.Equal(t, []string{
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1, osd.4 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)",
		"12:00:00 refuse worker-2: 86 of 256 PGs not active+clean (86 active+undersized+degraded) in Ceph cluster rook-ceph; worker-2 is in its fence group",
		// Ceph marks the OSDs out and backfills: clean 15 min after the
		// crash.
		"12:15:00 admit worker-2",
		"12:15:30 worker-2 powered off",
		"12:18:30 worker-2 back and ready",
	}, s.log)

	// With ReleaseDownMachines, as the upstream design's flow: the labeler
	// takes worker-2 out of the group once Ceph reports its OSDs down, and
	// the gate lets it through without waiting for the recovery.
	s = newSimController(t, fencegroup.Rules{ReleaseDownMachines: true})
	s.fail("worker-2", false)
	s.run(time.Hour, s.allBack)
	assert.Equal(t, []string{
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1, osd.4 of Ceph cluster rook-ceph)",
		"12:00:00 label: add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)",
		"12:00:00 label: remove fencegroup.rook.io/rook-ceph from worker-2 (its OSDs of Ceph cluster rook-ceph are all down (osd.2, osd.5))",
		"12:00:00 admit worker-2",
		"12:00:30 worker-2 powered off",
		"12:03:30 worker-2 back and ready",
	}, s.log)
}
