// Package controllertest has what tests of a fence controller share: a
// store that kills the controller at a chosen write.
package controllertest

import (
	"context"
	"errors"
	"sync"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
)

// ErrKilled is what every call of a KillStore returns once it has died.
var ErrKilled = errors.New("controller killed")

// KillStore wraps a store and kills the controller that uses it at its
// KillAt-th write (never when KillAt is 0 or less): the write is carried
// out, or not when Before is set, then it and every later call fail with
// ErrKilled, as if the controller's process had died there. A new
// controller on the wrapped store then resumes from the records.
type KillStore struct {
	controller.Store
	KillAt int
	Before bool

	mu     sync.Mutex
	writes int
	dead   bool
}

// Writes returns how many writes were tried.
func (s *KillStore) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Dead reports whether the kill happened.
func (s *KillStore) Dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

func (s *KillStore) write(fn func() error) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return ErrKilled
	}
	s.writes++
	kill := s.writes == s.KillAt
	s.dead = kill
	s.mu.Unlock()
	if kill && s.Before {
		return ErrKilled
	}
	err := fn()
	if kill {
		return ErrKilled
	}
	return err
}

// Get reads through, until the kill.
func (s *KillStore) Get(ctx context.Context, node string) (*flow.NodeFence, error) {
	if s.Dead() {
		return nil, ErrKilled
	}
	return s.Store.Get(ctx, node)
}

// List reads through, until the kill.
func (s *KillStore) List(ctx context.Context) ([]*flow.NodeFence, error) {
	if s.Dead() {
		return nil, ErrKilled
	}
	return s.Store.List(ctx)
}

// Create is a write.
func (s *KillStore) Create(ctx context.Context, nf *flow.NodeFence) (out *flow.NodeFence, err error) {
	err = s.write(func() error { out, err = s.Store.Create(ctx, nf); return err })
	return out, err
}

// Update is a write.
func (s *KillStore) Update(ctx context.Context, nf *flow.NodeFence) (out *flow.NodeFence, err error) {
	err = s.write(func() error { out, err = s.Store.Update(ctx, nf); return err })
	return out, err
}

// Forget is a write.
func (s *KillStore) Forget(ctx context.Context, nf *flow.NodeFence) error {
	return s.write(func() error { return s.Store.Forget(ctx, nf) })
}
