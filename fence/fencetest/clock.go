package fencetest

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake clock that a test moves by hand. Give its Now where a
// package of fencekit takes a clock (fence/controller's, flow's and the
// Kubernetes adapters' Now options), and its Sleep where one takes a sleep
// (teardown's Executor), so that waits of minutes take no time. It is safe
// for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d (back when d is negative, as a stepped wall
// clock) and returns its new time.
func (c *Clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Sleep moves the clock by d at once, or returns ctx's error if it has
// ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.Add(d)
	}
	return nil
}
