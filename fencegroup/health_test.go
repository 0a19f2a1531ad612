package fencegroup_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
)

// scripted is a Source whose answers the test sets; it counts fetches.
type scripted struct {
	mu      sync.Mutex
	status  *fencegroup.Status
	err     error
	block   chan struct{} // when set, fetches wait for it (or their context)
	fetches atomic.Int32
}

func (s *scripted) set(st *fencegroup.Status, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.err = st, err
}

func (s *scripted) Fetch(ctx context.Context) (*fencegroup.Status, error) {
	s.fetches.Add(1)
	s.mu.Lock()
	st, err, block := s.status, s.err, s.block
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return st, err
}

// Run reads at once and then every interval; a failing source keeps the
// last status until it is older than the stale bound (two intervals), and
// the health is fresh again after the next success.
func TestHealthRunAndStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &scripted{}
		src.set(statusOf(256, 0, nil), nil)
		h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{})
		require.NoError(t, err)
		assert.Equal(t, time.Minute, h.Interval())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- h.Run(ctx) }()

		synctest.Wait()
		assert.Equal(t, int32(1), src.fetches.Load(), "read at once")
		s := h.Snapshot()
		assert.False(t, s.Stale)
		assert.Equal(t, start, s.ReadAt)
		assert.Equal(t, 1, s.Budget(fencegroup.Rules{}).MaxUnavailable)

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, int32(2), src.fetches.Load(), "every interval")

		// Ceph stops answering: the last status stays, for two intervals.
		src.set(nil, errors.New("ceph status --format json: exit status 110"))
		time.Sleep(time.Minute)
		synctest.Wait()
		s = h.Snapshot()
		assert.False(t, s.Stale)
		assert.Equal(t, 1, s.Failures)
		assert.EqualError(t, s.LastError, "ceph status --format json: exit status 110")
		assert.Equal(t, 1, s.Budget(fencegroup.Rules{}).MaxUnavailable, "fresh enough")

		time.Sleep(time.Minute)
		synctest.Wait()
		s = h.Snapshot()
		assert.False(t, s.Stale, "exactly two intervals old")
		time.Sleep(time.Second)
		s = h.Snapshot()
		assert.True(t, s.Stale)
		assert.Equal(t, start.Add(3*time.Minute), s.StaleSince)
		b := s.Budget(fencegroup.Rules{})
		assert.Equal(t, 0, b.MaxUnavailable)
		assert.Equal(t, "Ceph health of cluster rook-ceph is stale since 2000-01-01T00:03:00Z (last read 2000-01-01T00:01:00Z), "+
			"last error at 2000-01-01T00:03:00Z: ceph status --format json: exit status 110", b.Reason)

		// Back: fresh at the next refresh.
		src.set(statusOf(250, 6, nil), nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		s = h.Snapshot()
		assert.False(t, s.Stale)
		assert.Nil(t, s.LastError)
		assert.Zero(t, s.Failures)
		assert.Equal(t, "6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph", s.Budget(fencegroup.Rules{}).Reason)

		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		assert.Equal(t, int32(5), src.fetches.Load())
	})
}

// A failed first read is stale at once.
func TestHealthFailedFirstRead(t *testing.T) {
	clk := newClock()
	src := &scripted{}
	src.set(nil, errors.New("no route to the monitors"))
	h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{Now: clk.Now})
	require.NoError(t, err)
	s := h.Snapshot()
	assert.False(t, s.Stale, "not read yet is not stale")
	assert.Equal(t, "Ceph health of cluster rook-ceph not read yet", s.Budget(fencegroup.Rules{}).Reason)

	s, err = h.Refresh(t.Context())
	assert.EqualError(t, err, "no route to the monitors")
	assert.True(t, s.Stale)
	assert.Nil(t, s.Status)
	assert.Equal(t, t0, s.StaleSince)
	assert.Equal(t, "Ceph health of cluster rook-ceph is stale since 2025-03-04T12:00:00Z: never read, last error at 2025-03-04T12:00:00Z: no route to the monitors",
		s.Budget(fencegroup.Rules{}).Reason)
}

// Concurrent refreshes share one fetch.
func TestHealthRefreshShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &scripted{block: make(chan struct{})}
		src.set(statusOf(10, 0, nil), nil)
		h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				s, err := h.Refresh(t.Context())
				assert.NoError(t, err)
				assert.NotNil(t, s.Status)
			})
		}
		synctest.Wait()
		close(src.block)
		wg.Wait()
		assert.Equal(t, int32(1), src.fetches.Load())
	})
}

// A fetch that does not answer is cut at Timeout; a caller whose context
// ends returns at once, the fetch going on for the others.
func TestHealthTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &scripted{block: make(chan struct{})}
		h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{Interval: 10 * time.Second})
		require.NoError(t, err)
		start := time.Now()

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = h.Refresh(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "the caller's deadline")

		s, err := h.Refresh(t.Context()) // joins the fetch under way
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, "context deadline exceeded (the fetch timeout is 5s)")
		assert.Equal(t, 5*time.Second, time.Since(start), "Timeout defaults to half the interval")
		assert.True(t, s.Stale)
		assert.Equal(t, int32(1), src.fetches.Load())
	})
}

func TestHealthSourceFaults(t *testing.T) {
	h, err := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		panic("bad source")
	}), fencegroup.HealthOptions{})
	require.NoError(t, err)
	_, err = h.Refresh(t.Context())
	assert.EqualError(t, err, "the source panicked: bad source")

	h, err = fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		return nil, nil
	}), fencegroup.HealthOptions{})
	require.NoError(t, err)
	_, err = h.Refresh(t.Context())
	assert.EqualError(t, err, "the source returned no status")
}

func TestNewHealthErrors(t *testing.T) {
	src := &scripted{}
	_, err := fencegroup.NewHealth("", src, fencegroup.HealthOptions{})
	assert.ErrorIs(t, err, fencegroup.ErrInvalidCluster)
	_, err = fencegroup.NewHealth("rook-ceph", nil, fencegroup.HealthOptions{})
	assert.Error(t, err)
	_, err = fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{Interval: -time.Second})
	assert.Error(t, err)
	h, err := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rook-ceph", h.Cluster())
}
