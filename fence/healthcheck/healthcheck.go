// Package healthcheck checks every configured fence method of every node
// on a schedule, before any incident: a broken credential, an unreachable
// PDU or a BMC that is another machine's is found then, not at the first
// real failure. A check reads (fence.Check: the machine's identity where
// the driver can read one, then the plug's status); it never switches
// anything.
//
// The checks are spread over Options.Interval (each target's first check
// at a random point of the first interval, then one per interval, jittered
// by a tenth), started at most Options.Rate per second and run at most
// Options.Concurrency at a time, so that a large cluster's devices (and the
// fencer's network) see a steady trickle, never a burst: at 5,000 nodes
// with two methods each and the defaults (10 minutes, 20 per second, 16 at
// once), about 17 checks a second.
//
// The results go to a Reporter: kube/fencekube writes a condition on each
// Node and an event at each change, promfence counts them as
// fencekit_device_up.
package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
)

// Target is one method of one node.
type Target struct {
	Node, Method string
}

// Result is the outcome of one check.
type Result struct {
	Target
	// Driver is the method's driver ("" when the method did not open).
	Driver string
	// Up is true when the device answered: its machine is the node's
	// (where that can be read) and it reported the plug's state.
	Up bool
	// Reason says why not (the check's error: fence errors never hold a
	// credential); empty when Up.
	Reason string
	// WrongMachine is set when the device's machine is not the node's.
	WrongMachine bool
	// State is the plug's state, when read.
	State fence.State
	// At is when the check started; Duration how long it took.
	At       time.Time
	Duration time.Duration
}

// Reporter receives the results. Checked is called after every check,
// with the target's previous result (nil for its first); Forget when a
// target is no longer configured. Calls for one target never overlap.
type Reporter interface {
	Checked(r Result, prev *Result)
	Forget(t Target)
}

// Reporters reports to each of rs in turn.
func Reporters(rs ...Reporter) Reporter { return reporters(rs) }

type reporters []Reporter

func (rs reporters) Checked(r Result, prev *Result) {
	for _, x := range rs {
		x.Checked(r, prev)
	}
}

func (rs reporters) Forget(t Target) {
	for _, x := range rs {
		x.Forget(t)
	}
}

// Options tune a Checker. The zero value means the defaults.
type Options struct {
	// Interval is the time between two checks of a target (default 10
	// minutes; 1 s to 24 h).
	Interval time.Duration
	// Concurrency bounds the checks running at once (default 16; 1 to
	// 1,000).
	Concurrency int
	// Rate bounds the checks started per second (default 20; up to
	// 1,000).
	Rate float64
	// Timeout bounds one check (default 30 s; at most the interval).
	Timeout time.Duration
}

// Defaults returns o with every zero field set to its default.
func (o Options) Defaults() Options {
	if o.Interval == 0 {
		o.Interval = 10 * time.Minute
	}
	if o.Concurrency == 0 {
		o.Concurrency = 16
	}
	if o.Rate == 0 {
		o.Rate = 20
	}
	if o.Timeout == 0 {
		o.Timeout = min(30*time.Second, o.Interval)
	}
	return o
}

// Validate reports the first option out of range, naming its field.
func (o Options) Validate() error {
	o = o.Defaults()
	switch {
	case o.Interval < time.Second || o.Interval > 24*time.Hour:
		return fmt.Errorf("healthcheck: Interval %v is out of range (1s to 24h)", o.Interval)
	case o.Concurrency < 1 || o.Concurrency > 1000:
		return fmt.Errorf("healthcheck: Concurrency %d is out of range (1 to 1000)", o.Concurrency)
	case !(o.Rate > 0 && o.Rate <= 1000): // NaN too
		return fmt.Errorf("healthcheck: Rate %v is out of range (above 0, at most 1000 per second)", o.Rate)
	case o.Timeout <= 0 || o.Timeout > o.Interval:
		return fmt.Errorf("healthcheck: Timeout %v is out of range (above 0, at most the interval %v)", o.Timeout, o.Interval)
	}
	return nil
}

// Checker runs the checks. Set its fields before Run, and do not change
// them after.
type Checker struct {
	// Config gives the fence configuration: every method of every
	// configured node is a target.
	Config controller.ConfigSource
	// Health gives the nodes (for their system UUIDs); nil checks no
	// identity. A configured node that is not among them is still checked.
	Health controller.Health
	// Registry opens the methods; nil means fence.DefaultRegistry.
	Registry *fence.Registry
	// Reporter receives the results; nil keeps them only (Results).
	Reporter Reporter
	// Logger receives the checker's own logs; nil discards them.
	Logger *slog.Logger
	// Observer, when set, sees every attempt of every check.
	Observer fence.Observer
	Options  Options

	once    sync.Once
	opts    Options
	limiter *rate.Limiter
	sem     chan struct{}
	rnd     *rand.Rand

	mu      sync.Mutex
	due     map[Target]time.Time
	last    map[Target]Result
	running map[Target]bool
	wg      sync.WaitGroup
}

func (c *Checker) init() {
	c.once.Do(func() {
		c.opts = c.Options.Defaults()
		c.limiter = rate.NewLimiter(rate.Limit(c.opts.Rate), 1)
		c.sem = make(chan struct{}, c.opts.Concurrency)
		c.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		c.due = map[Target]time.Time{}
		c.last = map[Target]Result{}
		c.running = map[Target]bool{}
		if c.Logger == nil {
			c.Logger = slog.New(slog.DiscardHandler)
		}
	})
}

// Run checks the targets until ctx ends, and returns once the checks
// under way have ended. It refuses options out of range.
func (c *Checker) Run(ctx context.Context) error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	c.init()
	defer c.wg.Wait()
	tick := time.NewTicker(min(time.Second, c.opts.Interval/10))
	defer tick.Stop()
	for {
		c.schedule(ctx, time.Now())
		for _, t := range c.dueTargets(time.Now()) {
			if err := c.limiter.Wait(ctx); err != nil {
				return nil
			}
			select {
			case c.sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			c.start(ctx, t)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Targets returns the targets of cfg: every method of every step of every
// configured node, once each.
func Targets(cfg *config.Config) []Target {
	var out []Target
	for _, node := range cfg.Nodes() {
		nc, ok := cfg.Node(node)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, s := range []fence.Step{fence.StepIsolation, fence.StepPowerManagement, fence.StepRecovery} {
			for _, level := range nc.Methods(s) {
				for _, m := range level {
					if !seen[m] {
						seen[m] = true
						out = append(out, Target{Node: node, Method: m})
					}
				}
			}
		}
	}
	return out
}

// schedule adds the targets configured now (their first check spread over
// one interval) and forgets those no longer configured. A configuration
// that does not read changes nothing: the targets it had are kept.
func (c *Checker) schedule(ctx context.Context, now time.Time) {
	cfg, err := c.Config.Config(ctx)
	if err != nil || cfg == nil {
		return
	}
	targets := Targets(cfg)
	var gone []Target
	c.mu.Lock()
	want := make(map[Target]bool, len(targets))
	for _, t := range targets {
		want[t] = true
		if _, ok := c.due[t]; !ok {
			c.due[t] = now.Add(time.Duration(c.rnd.Int64N(int64(c.opts.Interval))))
		}
	}
	for t := range c.due {
		if !want[t] {
			delete(c.due, t)
			if _, ok := c.last[t]; ok {
				delete(c.last, t)
				gone = append(gone, t)
			}
		}
	}
	c.mu.Unlock()
	if c.Reporter != nil {
		for _, t := range gone {
			c.Reporter.Forget(t)
		}
	}
}

// dueTargets returns the targets due at now and not running, earliest
// first.
func (c *Checker) dueTargets(now time.Time) []Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Target
	for t, at := range c.due {
		if !at.After(now) && !c.running[t] {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Target) int { return c.due[a].Compare(c.due[b]) })
	return out
}

// start runs t's check in a goroutine of its own, holding a slot of the
// semaphore, and schedules its next one.
func (c *Checker) start(ctx context.Context, t Target) {
	c.mu.Lock()
	c.running[t] = true
	jitter := time.Duration(c.rnd.Int64N(int64(c.opts.Interval/5)+1)) - c.opts.Interval/10
	c.due[t] = time.Now().Add(c.opts.Interval + jitter)
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.sem }()
		c.check(ctx, t)
		c.mu.Lock()
		delete(c.running, t)
		c.mu.Unlock()
	}()
}

// CheckNow checks every target of node at once (neither rate nor
// concurrency bounds apply), reports the results and returns them.
func (c *Checker) CheckNow(ctx context.Context, node string) ([]Result, error) {
	c.init()
	cfg, err := c.Config.Config(ctx)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, t := range Targets(cfg) {
		if t.Node != node {
			continue
		}
		c.mu.Lock()
		if _, ok := c.due[t]; !ok {
			c.due[t] = time.Now().Add(c.opts.Interval) // configured: its result is kept
		}
		c.mu.Unlock()
		out = append(out, c.check(ctx, t))
	}
	return out, nil
}

// check runs one check of t and reports it.
func (c *Checker) check(ctx context.Context, t Target) Result {
	r := Result{Target: t, At: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err := func() error {
		cfg, err := c.Config.Config(cctx)
		if err != nil {
			return err
		}
		m, err := cfg.OpenMethod(cctx, c.Registry, t.Node, t.Method, c.Logger)
		if err != nil {
			return err
		}
		defer m.Close()
		r.Driver = m.Driver
		m.SystemUUID = c.systemUUID(t.Node)
		if c.Observer != nil {
			m.Options.Observer = c.Observer
		}
		res, err := fence.Check(cctx, m)
		if res != nil {
			r.State = res.State
		}
		return err
	}()
	r.Duration = time.Since(r.At)
	if ctx.Err() != nil {
		return r // stopping: not a result
	}
	r.Up = err == nil
	if err != nil {
		r.Reason = err.Error()
		r.WrongMachine = errors.Is(err, fence.ErrWrongMachine)
	}
	c.mu.Lock()
	var prev *Result
	if p, ok := c.last[t]; ok {
		prev = &p
	}
	_, configured := c.due[t]
	if configured || prev != nil {
		c.last[t] = r
	}
	c.mu.Unlock()
	if c.Reporter != nil {
		c.Reporter.Checked(r, prev)
	}
	return r
}

// systemUUID returns node's system UUID, "" when unknown.
func (c *Checker) systemUUID(node string) string {
	if c.Health == nil {
		return ""
	}
	if nr, ok := c.Health.(controller.NodeHealthReader); ok {
		h, _ := nr.Node(node)
		return h.SystemUUID
	}
	for _, h := range c.Health.Nodes() {
		if h.Name == node {
			return h.SystemUUID
		}
	}
	return ""
}

// Results returns the last result of every target, by node and method.
func (c *Checker) Results() []Result {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Result, 0, len(c.last))
	for _, r := range c.last {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Result) int {
		if a.Node != b.Node {
			if a.Node < b.Node {
				return -1
			}
			return 1
		}
		switch {
		case a.Method < b.Method:
			return -1
		case a.Method > b.Method:
			return 1
		}
		return 0
	})
	return out
}
