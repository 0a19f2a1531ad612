// Package nodeagent is the node's side of fencing without a BMC: what a
// DaemonSet on every node runs (cmd/fencekit-agent) beside its hardware
// watchdog.
//
//   - Guard fences the node itself when it has not been healthy (reached
//     the API server, or its quorum of peers: itself and the peers it
//     reaches, more than half of the cluster's agents) for
//     Options.Timeout, counted from its last healthy look (Options.Since
//     for an agent that restarted): it stops kicking the watchdog, which
//     resets the machine within its own timeout. A node that still
//     reaches the API server or a majority is not fenced this way (unless
//     its looks take more than two intervals, see below): a partitioned
//     API server, or a few peers gone, is not the node's fault (as Self
//     Node Remediation reasons).
//   - Gate shares one watchdog between the guards of a node (the SBD
//     watcher, the Guard): the watchdog is kicked only while every guard
//     kicks, and never again once one of them fenced the node.
//   - Heartbeats serves and sends the peers' heartbeats, signed and
//     acknowledged under the agents' shared secret: a peer counts as
//     reached when it acknowledged this node's heartbeat.
//   - Published and Report are what an agent says in its Lease (what it
//     runs with; how long since it saw a fence request for another node
//     and since it last heard that node), on which a controller counts a
//     node off (kube/agentfence).
//   - SimWatchdog stands in for the hardware in tests: it records the
//     kicks and when it would have reset the machine.
//
// The proof a controller may draw from it is time, as with SBD: the Guard
// of a node whose last healthy look began at T0 checks its clock before
// each look and each kick and never kicks at T0 + Timeout or later, so
// the watchdog resets the node by T0 + Timeout + three of its timeouts:
// one for the watchdog, one for a stall between the last clock check and
// its kick, one for the kick the kernel itself gives when the device is
// closed armed (as it is when the node fences itself, or the agent dies).
// A look that returns more than two intervals after it began counts as
// cut off: a node whose agent is starved of CPU for its whole timeout
// fences itself though it reaches the API server.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Watchdog is a hardware watchdog (sbd.Watchdog: sbd.LinuxWatchdog for
// /dev/watchdog): Kick tells it the node is alive; Close stops kicking it,
// disarmed for a clean stop, left armed (it resets the machine after its
// timeout) when the node fences itself.
type Watchdog interface {
	Kick() error
	Close(disarm bool) error
}

// ErrSelfFenced is Guard.Run's end when it fenced the node: the watchdog
// is left armed and kicked no more.
var ErrSelfFenced = errors.New("nodeagent: the node lost the API server and its quorum of peers: it fenced itself")

// Check is one look at the node's reach: whether it reached the API server,
// and which of its peers acknowledged its heartbeat.
type Check struct {
	API     bool
	Reached int // peers that acknowledged
	Peers   int // peers known (the cluster's agents, this one excluded)
	// Unknown is set while the peers are not known yet (an agent that
	// has not reached the API server since it started, or that knows no
	// peer): the node has no quorum then, whatever it reaches.
	Unknown bool
}

// Quorate reports whether the node reaches a majority of the cluster's
// agents, itself included.
func (c Check) Quorate() bool { return !c.Unknown && 2*(1+c.Reached) > 1+c.Peers }

// Healthy reports whether the node may run on: it reaches the API server,
// or a majority.
func (c Check) Healthy() bool { return c.API || c.Quorate() }

// Options configures a Guard.
type Options struct {
	// Timeout is how long the node may be cut from the API server and its
	// quorum before it fences itself. Required.
	Timeout time.Duration
	// Interval is how often it looks (and kicks); zero means a second.
	// It must be shorter than Timeout and than the watchdog's timeout.
	Interval time.Duration
	// Since is when the node was last known healthy before Run, by the
	// Guard's clock: a restarted agent's, kept on the node, so that a
	// restart does not start the countdown again. Zero means Run's start.
	Since time.Time
}

// Guard fences the node when it has not been healthy (reached the API
// server or its quorum) for Options.Timeout, counted from the start of
// its last healthy look.
type Guard struct {
	// Look checks the node's reach; it is bounded by its context (one
	// Interval).
	Look func(ctx context.Context) Check
	// Watchdog is kicked while the node is healthy, or not yet cut off for
	// Timeout.
	Watchdog Watchdog
	Options  Options
	// Now is the clock (time.Now when nil). A node agent gives the
	// kernel's boot clock, which counts a suspended machine's time.
	Now    func() time.Time
	Logger *slog.Logger
	// Observe, when set, sees every check and when the node was last
	// healthy (that check's time when it is): metrics, and the state a
	// restarted agent goes on from.
	Observe func(c Check, lastHealthy time.Time)
	// Disarm, when set, is asked at a clean stop whether the watchdog may
	// be disarmed: a node agent first says in its Lease that the node is
	// no longer guarded. False leaves it armed: the machine is reset
	// unless another agent kicks it in time. A stop past the timeout
	// fences the node instead, whatever Disarm would say.
	Disarm func() bool
	// Armed, when set, says whether the countdown runs: until it does
	// (a node agent that has not yet said in its Lease what it runs with
	// in this boot, which no controller counts on), every look counts as
	// healthy and the watchdog is kicked.
	Armed func() bool
	// Fencing, when set, is called once the node fences itself, before
	// the watchdog is closed armed: a node agent keeps it on the node.
	Fencing func()
}

// Run looks and kicks every Interval until ctx ends (nil, the watchdog
// disarmed if Disarm allows), or the node fences itself (ErrSelfFenced,
// the watchdog left armed).
func (g *Guard) Run(ctx context.Context) error {
	o := g.Options
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if g.Look == nil || g.Watchdog == nil || o.Timeout <= 0 || o.Interval <= 0 || o.Interval >= o.Timeout {
		return fmt.Errorf("nodeagent: a Guard needs Look, a Watchdog, a Timeout and an Interval shorter than it (got %v, %v)", o.Timeout, o.Interval)
	}
	now := g.Now
	if now == nil {
		now = time.Now
	}
	log := g.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	last := o.Since
	if last.IsZero() {
		last = now()
	}
	fence := func(b time.Time) error {
		log.Error("the node fences itself: the watchdog is kicked no more", "cutFor", b.Sub(last).Round(time.Millisecond))
		if g.Fencing != nil {
			g.Fencing()
		}
		return errors.Join(ErrSelfFenced, g.Watchdog.Close(false))
	}
	stop := func() error {
		if b := now(); b.Sub(last) >= o.Timeout && (g.Armed == nil || g.Armed()) {
			// Stopped past its timeout (a machine resumed with a stop
			// pending): it may have been counted off meanwhile.
			return errors.Join(fence(b), ctx.Err())
		}
		disarm := g.Disarm == nil || g.Disarm()
		if !disarm {
			log.Warn("stopping with the watchdog armed: the node could not say it is no longer guarded")
		}
		return errors.Join(ctx.Err(), g.Watchdog.Close(disarm))
	}
	cut := false
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		// A look counts from when it began: whatever reached the node
		// during it (a renewal committed, a peer's acknowledgement) came
		// after that moment. A node past its timeout fences itself
		// before it looks: a machine that stood still (suspended, or the
		// agent stalled) never comes back to life on a look that
		// happens to succeed after the controller counted it off.
		b := now()
		armed := g.Armed == nil || g.Armed()
		if !armed {
			last = b
		}
		if b.Sub(last) >= o.Timeout {
			return fence(b)
		}
		lctx, cancel := context.WithTimeout(ctx, o.Interval)
		c := g.Look(lctx)
		cancel()
		if ctx.Err() != nil {
			return stop()
		}
		// A look that returned more than two intervals after it began
		// (the agent stalled) counts for nothing: a peer's
		// acknowledgement may have come long after the look began, and
		// the countdown must never go back to a moment before it.
		healthy := !armed || c.Healthy() && now().Sub(b) <= 2*o.Interval
		switch {
		case healthy:
			if cut {
				log.Info("the node reaches the API server or its quorum again", "api", c.API, "reached", c.Reached, "peers", c.Peers)
			}
			last, cut = b, false
		case !cut:
			cut = true
			log.Warn("the node lost the API server and its quorum of peers: it fences itself unless it reaches one of them within the timeout",
				"reached", c.Reached, "peers", c.Peers, "timeout", o.Timeout, "lastHealthy", b.Sub(last).Round(time.Millisecond))
		}
		if c.Healthy() && !healthy {
			log.Warn("a look took more than two intervals: it counts as cut off", "took", now().Sub(b).Round(time.Millisecond))
			c.API, c.Reached, c.Unknown = false, 0, true
		}
		if g.Observe != nil {
			g.Observe(c, last)
		}
		// The clock read again just before the kick: never a kick past
		// the timeout.
		if at := now(); at.Sub(last) >= o.Timeout {
			return fence(at)
		}
		if err := g.Watchdog.Kick(); err != nil {
			log.Warn("kicking the watchdog failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return stop()
		case <-t.C:
		}
	}
}

// Gate shares one watchdog between several guards: Handle gives each its
// own Watchdog. The watchdog is kicked when every handle has kicked since
// the last kick, and is closed (left armed) as soon as one handle is
// closed armed: one guard that fences the node fences it, whatever the
// others say. Closed disarmed by all, it is closed disarmed.
type Gate struct {
	mu      sync.Mutex
	hw      Watchdog
	kicked  []bool
	open    []bool
	fenced  bool
	stopped bool
}

// NewGate returns a Gate over hw with n handles.
func NewGate(hw Watchdog, n int) *Gate {
	g := &Gate{hw: hw, kicked: make([]bool, n), open: make([]bool, n)}
	for i := range g.open {
		g.open[i] = true
	}
	return g
}

// Handle returns handle i's Watchdog.
func (g *Gate) Handle(i int) Watchdog { return handle{g, i} }

type handle struct {
	g *Gate
	i int
}

func (h handle) Kick() error {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fenced || g.stopped {
		return nil
	}
	g.kicked[h.i] = true
	for i, k := range g.kicked {
		if g.open[i] && !k {
			return nil
		}
	}
	clear(g.kicked)
	return g.hw.Kick()
}

func (h handle) Close(disarm bool) error {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fenced || g.stopped {
		return nil
	}
	g.open[h.i] = false
	if !disarm {
		g.fenced = true
		return g.hw.Close(false)
	}
	for _, o := range g.open {
		if o {
			return nil
		}
	}
	g.stopped = true
	return g.hw.Close(true)
}
