// Package nodeagent is the node's side of fencing without a BMC: what a
// DaemonSet on every node runs (cmd/fencekit-agent) beside its hardware
// watchdog.
//
//   - Guard fences the node itself when it has lost the API server and its
//     quorum of peers (itself and the peers it reaches, no more than half
//     of the cluster's agents) for longer than Options.Timeout: it stops
//     kicking the watchdog, which resets the machine within its own
//     timeout. A node that still reaches the API server or a majority is
//     never fenced this way: a partitioned API server, or a few peers
//     gone, is not the node's fault (as Self Node Remediation reasons).
//   - Gate shares one watchdog between the guards of a node (the SBD
//     watcher, the Guard): the watchdog is kicked only while every guard
//     kicks, and never again once one of them fenced the node.
//   - Heartbeat serves and sends the peers' heartbeats: a peer counts as
//     reached when it acknowledged this node's heartbeat.
//   - SimWatchdog stands in for the hardware in tests: it records the
//     kicks and when it would have reset the machine.
//
// The proof a controller may draw from it is time, as with SBD: a node
// that lost the API server and its quorum at T0 has stopped by T0 +
// Timeout + the watchdog's timeout.
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
}

// Guard fences the node when it has lost the API server and its quorum
// for longer than Options.Timeout.
type Guard struct {
	// Look checks the node's reach; it is bounded by its context (one
	// Interval).
	Look func(ctx context.Context) Check
	// Watchdog is kicked while the node is healthy, or not yet cut off for
	// Timeout.
	Watchdog Watchdog
	Options  Options
	// Now is the clock (time.Now when nil): its monotonic readings
	// measure the time cut off.
	Now    func() time.Time
	Logger *slog.Logger
	// Observe, when set, sees every check and whether the node is cut off
	// since (zero when healthy): metrics.
	Observe func(c Check, cutSince time.Time)
}

// Run looks and kicks every Interval until ctx ends (nil, the watchdog
// disarmed), or the node fences itself (ErrSelfFenced, the watchdog left
// armed).
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
	var cutSince time.Time
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, o.Interval)
		c := g.Look(lctx)
		cancel()
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), g.Watchdog.Close(true))
		}
		at := now()
		switch {
		case c.Healthy():
			if !cutSince.IsZero() {
				log.Info("the node reaches the API server or its quorum again", "api", c.API, "reached", c.Reached, "peers", c.Peers)
			}
			cutSince = time.Time{}
		case cutSince.IsZero():
			cutSince = at
			log.Warn("the node lost the API server and its quorum of peers: it fences itself unless it reaches one of them within the timeout",
				"reached", c.Reached, "peers", c.Peers, "timeout", o.Timeout)
		}
		if g.Observe != nil {
			g.Observe(c, cutSince)
		}
		if !cutSince.IsZero() && at.Sub(cutSince) >= o.Timeout {
			log.Error("the node fences itself: the watchdog is kicked no more", "cutFor", at.Sub(cutSince).Round(time.Millisecond))
			return errors.Join(ErrSelfFenced, g.Watchdog.Close(false))
		}
		if err := g.Watchdog.Kick(); err != nil {
			log.Warn("kicking the watchdog failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), g.Watchdog.Close(true))
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
