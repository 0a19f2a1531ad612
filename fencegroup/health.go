package fencegroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Source reads the status of one Ceph cluster. CLI is the Source that runs
// the ceph command; SourceFunc adapts a function. Fetch must honour ctx.
type Source interface {
	Fetch(ctx context.Context) (*Status, error)
}

// SourceFunc adapts a function to the Source interface.
type SourceFunc func(ctx context.Context) (*Status, error)

// Fetch calls f.
func (f SourceFunc) Fetch(ctx context.Context) (*Status, error) { return f(ctx) }

// Defaults of HealthOptions.
const (
	// DefaultInterval is how often Health refreshes: every 60 s, as the
	// design has the budget reconciled.
	DefaultInterval = 60 * time.Second
	// DefaultStaleIntervals is how many intervals a status stays fresh
	// without a successful refresh.
	DefaultStaleIntervals = 2
)

// HealthOptions configure a Health. The zero value works.
type HealthOptions struct {
	// Interval is how often Run refreshes. Zero means DefaultInterval.
	Interval time.Duration
	// StaleAfter is how long a status stays fresh after it was read: when
	// no refresh has succeeded for longer, the health is stale and the
	// budget is 0. Zero means DefaultStaleIntervals × Interval.
	StaleAfter time.Duration
	// Timeout bounds one fetch. Zero means half the interval.
	Timeout time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives failed refreshes (warn) and recoveries (info). Nil
	// means no logging.
	Logger *slog.Logger
}

// Snapshot is what a Health knew of its cluster at one time.
type Snapshot struct {
	// Cluster names the Ceph cluster.
	Cluster string
	// At is the time the snapshot was taken at: staleness is judged then.
	At time.Time
	// Status is the last status read, nil before the first successful
	// read. Callers must not modify it.
	Status *Status
	// ReadAt is when Status was read.
	ReadAt time.Time
	// LastError is the error of the last refresh when it failed, nil when
	// it succeeded or none was tried.
	LastError error
	// FailedAt is when the last refresh failed.
	FailedAt time.Time
	// Failures counts the refreshes that failed since the last success.
	Failures int
	// Stale is true when the status cannot be relied on: no refresh has
	// succeeded for longer than the stale bound, or the first read failed.
	Stale bool
	// StaleSince is when the snapshot became stale.
	StaleSince time.Time
}

// Budget is the budget of the snapshot's cluster: Rules.Budget of its
// status, or 0 when it is stale or not read yet, with a reason that says
// so ("Ceph health of cluster rook-ceph is stale since 12:03:00 (read
// 12:01:00), last error: ...").
func (s Snapshot) Budget(r Rules) Budget {
	switch {
	case s.Stale:
		return Budget{Reason: s.staleReason()}
	case s.Status == nil:
		return Budget{Reason: fmt.Sprintf("Ceph health of cluster %s not read yet", s.Cluster)}
	}
	b := r.Budget(s.Status)
	if !b.Clean {
		b.Reason += " in Ceph cluster " + s.Cluster
	}
	return b
}

// staleReason says why a stale snapshot is stale.
func (s Snapshot) staleReason() string {
	var msg string
	if s.Status == nil {
		msg = fmt.Sprintf("Ceph health of cluster %s is stale since %s: never read", s.Cluster, clock(s.StaleSince))
	} else {
		msg = fmt.Sprintf("Ceph health of cluster %s is stale since %s (last read %s)", s.Cluster, clock(s.StaleSince), clock(s.ReadAt))
	}
	if s.LastError != nil {
		msg += fmt.Sprintf(", last error at %s: %s", clock(s.FailedAt), clip(s.LastError.Error(), 300))
	} else {
		msg += ", not refreshed since"
	}
	return msg
}

// clock renders a time for a reason: UTC, to the second.
func clock(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// Snapshotter gives snapshots of one cluster's health. *Health implements it.
type Snapshotter interface {
	// At returns the snapshot with staleness judged at now.
	At(now time.Time) Snapshot
}

// Health is a cache of one Ceph cluster's status, shared by the gate and
// the labeler: Run refreshes it every Interval, Refresh on demand, and At
// or Snapshot read it. A refresh that fails keeps the last status; when no
// refresh has succeeded for StaleAfter the health is stale (as it is after
// a failed first read), which makes the budget 0. Safe for concurrent use.
type Health struct {
	cluster string
	src     Source
	opts    HealthOptions

	mu     sync.Mutex
	status *Status
	readAt time.Time
	err    error
	errAt  time.Time
	fails  int
	flight *flight // the refresh under way, nil when none
}

// flight is one refresh under way, that concurrent Refresh calls share.
type flight struct {
	done chan struct{}
	snap Snapshot
	err  error
}

// NewHealth returns the health cache of cluster (a name for messages; see
// ValidateCluster) reading src.
func NewHealth(cluster string, src Source, opts HealthOptions) (*Health, error) {
	if err := ValidateCluster(cluster); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("fencegroup: NewHealth: nil Source")
	}
	if opts.Interval < 0 || opts.StaleAfter < 0 || opts.Timeout < 0 {
		return nil, errors.New("fencegroup: NewHealth: negative Interval, StaleAfter or Timeout")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = DefaultStaleIntervals * opts.Interval
	}
	if opts.Timeout == 0 {
		opts.Timeout = opts.Interval / 2
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Health{cluster: cluster, src: src, opts: opts}, nil
}

// Cluster returns the cluster's name.
func (h *Health) Cluster() string { return h.cluster }

// Interval returns the refresh interval.
func (h *Health) Interval() time.Duration { return h.opts.Interval }

// Snapshot returns the current snapshot, judged at the clock's time.
func (h *Health) Snapshot() Snapshot { return h.At(h.opts.Now()) }

// At returns the snapshot with staleness judged at now (the gate passes
// the time of the cluster view it decides on).
func (h *Health) At(now time.Time) Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snapshotLocked(now)
}

func (h *Health) snapshotLocked(now time.Time) Snapshot {
	s := Snapshot{Cluster: h.cluster, At: now, Status: h.status, ReadAt: h.readAt,
		LastError: h.err, FailedAt: h.errAt, Failures: h.fails}
	switch {
	case h.status == nil && h.fails > 0:
		s.Stale, s.StaleSince = true, h.errAt
	case h.status != nil && now.Sub(h.readAt) > h.opts.StaleAfter:
		s.Stale, s.StaleSince = true, h.readAt.Add(h.opts.StaleAfter)
	}
	return s
}

// Refresh reads the status now and returns the snapshot after it, with the
// fetch's error. A refresh already under way is joined rather than
// repeated. The fetch is bounded by Timeout and does not end when ctx
// does (other callers may share it); Refresh returns early with ctx's
// error when ctx ends first.
func (h *Health) Refresh(ctx context.Context) (Snapshot, error) {
	h.mu.Lock()
	f := h.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		h.flight = f
		go h.fetch(context.WithoutCancel(ctx), f)
	}
	h.mu.Unlock()
	select {
	case <-f.done:
		return f.snap, f.err
	case <-ctx.Done():
		return h.Snapshot(), ctx.Err()
	}
}

// fetch runs one refresh and records its outcome.
func (h *Health) fetch(ctx context.Context, f *flight) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	st, err := h.safeFetch(ctx)
	if err == nil && st == nil {
		err = errors.New("the source returned no status")
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (the fetch timeout is %v)", err, h.opts.Timeout)
	}
	now := h.opts.Now()
	h.mu.Lock()
	if err != nil {
		h.err, h.errAt = err, now
		h.fails++
		if h.fails == 1 || h.fails%10 == 0 {
			h.opts.Logger.Warn("fencegroup: Ceph status refresh failed", "cluster", h.cluster, "failures", h.fails, "error", err)
		}
	} else {
		if h.fails > 0 {
			h.opts.Logger.Info("fencegroup: Ceph status read again", "cluster", h.cluster, "after_failures", h.fails)
		}
		h.status, h.readAt = st, now
		h.err, h.errAt, h.fails = nil, time.Time{}, 0
	}
	f.snap, f.err = h.snapshotLocked(now), err
	h.flight = nil
	h.mu.Unlock()
	close(f.done)
}

// safeFetch calls the source, turning a panic into an error.
func (h *Health) safeFetch(ctx context.Context) (st *Status, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = nil, fmt.Errorf("the source panicked: %v", p)
		}
	}()
	return h.src.Fetch(ctx)
}

// Run refreshes at once, then every Interval, until ctx ends; it returns
// ctx's error. Failed refreshes are recorded (and logged), not returned.
func (h *Health) Run(ctx context.Context) error {
	t := time.NewTicker(h.opts.Interval)
	defer t.Stop()
	for {
		_, _ = h.Refresh(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Set records st as read at the clock's time, as a successful refresh
// would: for sources that push statuses rather than answer Fetch, and for
// tests.
func (h *Health) Set(st *Status) {
	if st == nil {
		return
	}
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status, h.readAt = st, now
	h.err, h.errAt, h.fails = nil, time.Time{}, 0
}
