package reinstall

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// MemStore is an in-memory MachineStore, safe for concurrent use. Records
// are copied in and out, so callers never share them.
type MemStore struct {
	mu       sync.Mutex
	machines map[string]Machine
}

// NewMemStore returns a store holding copies of ms (their Version set to 1).
func NewMemStore(ms ...Machine) *MemStore {
	s := &MemStore{machines: map[string]Machine{}}
	for _, m := range ms {
		s.Put(m)
	}
	return s
}

// Put stores a copy of m unconditionally, as version 1 or the stored
// version plus one, and returns the stored copy. It is for setting a store
// up.
func (s *MemStore) Put(m Machine) Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	m = m.Clone()
	m.Version = s.machines[m.ID].Version + 1
	s.machines[m.ID] = m
	return m.Clone()
}

// Get implements MachineStore.
func (s *MemStore) Get(ctx context.Context, id string) (Machine, error) {
	if err := ctx.Err(); err != nil {
		return Machine{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[id]
	if !ok {
		return Machine{}, errorf(id, "id", ErrMachineNotFound)
	}
	return m.Clone(), nil
}

// Update implements MachineStore.
func (s *MemStore) Update(ctx context.Context, m Machine) (Machine, error) {
	if err := ctx.Err(); err != nil {
		return Machine{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.machines[m.ID]
	if !ok {
		return Machine{}, errorf(m.ID, "id", ErrMachineNotFound)
	}
	if old.Version != m.Version {
		return Machine{}, errorf(m.ID, "version", fmt.Errorf("%w: version %d, stored %d", ErrConflict, m.Version, old.Version))
	}
	m = m.Clone()
	m.Version++
	s.machines[m.ID] = m
	return m.Clone(), nil
}

// List implements MachineStore; the records come sorted by ID.
func (s *MemStore) List(ctx context.Context) ([]Machine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Machine, 0, len(s.machines))
	for _, m := range s.machines {
		out = append(out, m.Clone())
	}
	slices.SortFunc(out, func(a, b Machine) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// MemImages is an in-memory image catalog, safe for concurrent use.
type MemImages struct {
	mu     sync.Mutex
	images map[string]Image
}

// NewMemImages returns a catalog of the given images.
func NewMemImages(images ...Image) *MemImages {
	c := &MemImages{images: map[string]Image{}}
	for _, i := range images {
		c.images[i.ID] = i
	}
	return c
}

// Put adds or replaces an image.
func (c *MemImages) Put(i Image) {
	c.mu.Lock()
	c.images[i.ID] = i
	c.mu.Unlock()
}

// Image implements Images.
func (c *MemImages) Image(ctx context.Context, id string) (Image, error) {
	if err := ctx.Err(); err != nil {
		return Image{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.images[id]
	if !ok {
		return Image{}, fmt.Errorf("%w: %s", ErrUnknownImage, id)
	}
	return i, nil
}
