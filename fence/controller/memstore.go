package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence/flow"
)

// MemoryStore is a Store in memory, safe for concurrent use, with the same
// optimistic concurrency as the custom resource: every write needs the
// Version it read. It also keeps the admission ledger (Admissions), so that
// controllers sharing one MemoryStore share their admissions.
type MemoryStore struct {
	mu     sync.Mutex
	recs   map[string]*flow.NodeFence
	n      int64
	ledger Ledger
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]*flow.NodeFence{}} }

func (s *MemoryStore) bump(nf *flow.NodeFence) *flow.NodeFence {
	s.n++
	c := nf.Clone()
	c.Version = strconv.FormatInt(s.n, 10)
	s.recs[nf.Node] = c
	return c.Clone()
}

// List returns copies of every record, sorted by node.
func (s *MemoryStore) List(ctx context.Context) ([]*flow.NodeFence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*flow.NodeFence, 0, len(s.recs))
	for _, r := range s.recs {
		out = append(out, r.Clone())
	}
	slices.SortFunc(out, func(a, b *flow.NodeFence) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// Get returns a copy of the node's record.
func (s *MemoryStore) Get(ctx context.Context, node string) (*flow.NodeFence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[node]
	if !ok {
		return nil, fmt.Errorf("node %s: %w", node, ErrNotFound)
	}
	return r.Clone(), nil
}

// Create stores a new record.
func (s *MemoryStore) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs[nf.Node]; ok {
		return nil, fmt.Errorf("node %s: %w (exists)", nf.Node, ErrConflict)
	}
	return s.bump(nf), nil
}

// Update replaces the record with the same Version.
func (s *MemoryStore) Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[nf.Node]
	if !ok {
		return nil, fmt.Errorf("node %s: %w", nf.Node, ErrNotFound)
	}
	if r.Version != nf.Version {
		return nil, fmt.Errorf("node %s: %w (version %s, stored %s)", nf.Node, ErrConflict, nf.Version, r.Version)
	}
	c := nf.Clone()
	c.Deleting = r.Deleting // the user's delete request is the store's, not the writer's
	c.Confirm = r.Confirm   // and so is a person's confirmation
	c.MarkedHealthy = r.MarkedHealthy
	return s.bump(c), nil
}

// Forget deletes a record being deleted.
func (s *MemoryStore) Forget(ctx context.Context, nf *flow.NodeFence) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[nf.Node]
	if !ok {
		return nil
	}
	if r.Version != nf.Version {
		return fmt.Errorf("node %s: %w (version %s, stored %s)", nf.Node, ErrConflict, nf.Version, r.Version)
	}
	delete(s.recs, nf.Node)
	return nil
}

// Delete asks for the node's record to be deleted, as a user deleting the
// custom resource does: the record is marked Deleting and the controller
// restores the pods before forgetting it. It reports whether there was a
// record.
func (s *MemoryStore) Delete(node string) bool {
	return s.request(node, func(r *flow.NodeFence) { r.Deleting = true })
}

// Clear asks for a Failed record to be retried, as a user does. It reports
// whether there was a record.
func (s *MemoryStore) Clear(node string) bool {
	return s.request(node, func(r *flow.NodeFence) { r.Clear = true })
}

// Confirm records a person's confirmation that the node is off, for the
// record's current incident, as kubectl fence confirm does with a
// NodeFence: by is the confirmer's name, which the caller vouches for
// (the API server checks it for a NodeFence). The controller acts on it at
// its next look at the node, and refuses it (the record says why) while
// the node is ready. It reports whether there was a record.
func (s *MemoryStore) Confirm(node, by, reason string) bool {
	return s.request(node, func(r *flow.NodeFence) {
		r.Confirm = &flow.Confirmation{By: by, Reason: reason, Incident: r.IncidentStart()}
	})
}

// MarkHealthy records a person's mark that the node is healthy, as kubectl
// fence healthy does with a NodeFence: with a negative
// flow.Options.HealthyDelay, a recovered node takes pods again only once
// marked. It reports whether there was a record.
func (s *MemoryStore) MarkHealthy(node string, at time.Time) bool {
	return s.request(node, func(r *flow.NodeFence) { r.MarkedHealthy = at })
}

// request changes the node's record as a user's request does (a new
// Version); it reports whether there was a record.
func (s *MemoryStore) request(node string, change func(*flow.NodeFence)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[node]
	if !ok {
		return false
	}
	change(r)
	s.n++
	r.Version = strconv.FormatInt(s.n, 10)
	return true
}

// Ledger returns a copy of the admission ledger (Admissions).
func (s *MemoryStore) Ledger(ctx context.Context) (Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Ledger{Admitted: maps.Clone(s.ledger.Admitted), LastStorm: s.ledger.LastStorm, Version: s.ledger.Version}, nil
}

// SetLedger replaces the admission ledger if its version is l.Version.
func (s *MemoryStore) SetLedger(ctx context.Context, l Ledger) (Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Version != s.ledger.Version {
		return Ledger{}, fmt.Errorf("admission ledger: version %q, stored %q: %w", l.Version, s.ledger.Version, ErrConflict)
	}
	s.n++
	s.ledger = Ledger{Admitted: maps.Clone(l.Admitted), LastStorm: l.LastStorm, Version: strconv.FormatInt(s.n, 10)}
	return Ledger{Admitted: maps.Clone(s.ledger.Admitted), LastStorm: s.ledger.LastStorm, Version: s.ledger.Version}, nil
}

var _ Admissions = (*MemoryStore)(nil)
