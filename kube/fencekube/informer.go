package fencekube

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// source is the informer an adapter (Health, ConfigSource) reads, which
// its owner runs: a controller-runtime manager's cache, or an informer a
// host runs itself (NewNodeInformer). The adapters run no informer of
// their own. It is given once, with use; until then, and until it has
// synced, the adapter has nothing to read from it.
type source struct {
	mu     sync.Mutex
	items  Lister
	synced syncer
	given  chan struct{} // closed by use
	once   sync.Once
}

// Informer is what an adapter needs of an informer that someone else runs:
// client-go's SharedIndexInformer has it, and so has controller-runtime's
// cache.Informer.
type Informer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	HasSynced() bool
}

// Lister gives the objects an informer holds: client-go's cache.Store
// (SharedIndexInformer.GetStore) has it; over a controller-runtime cache,
// a client.Reader does it.
type Lister interface {
	// List returns every object, as pointers (*corev1.Node, ...).
	List() []any
	// GetByKey returns the object of key (namespace/name, or name).
	GetByKey(key string) (item any, exists bool, err error)
}

func (s *source) init() { s.once.Do(func() { s.given = make(chan struct{}) }) }

// use makes the adapter read items, synced once synced says so. A second
// call does nothing.
func (s *source) use(items Lister, synced syncer) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items != nil {
		return
	}
	s.items, s.synced = items, synced
	close(s.given)
}

// informer returns the objects of the informer once it has synced, else
// nil.
func (s *source) informer() Lister {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil || !s.synced.HasSynced() {
		return nil
	}
	return s.items
}

func (s *source) hasSynced() bool { return s.informer() != nil }

// hasGiven reports whether use was called.
func (s *source) hasGiven() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items != nil
}

// syncer tells whether an informer, or one of its handlers, has synced:
// a SharedIndexInformer, a handler's registration (whose sync also waits
// for the handler to have seen the initial list), or another owner's
// informer.
type syncer interface{ HasSynced() bool }

// neverSynced is the syncer of a handler that could not be added.
type neverSynced struct{}

func (neverSynced) HasSynced() bool { return false }

// waitForSync waits until an informer was given and has synced, or ctx
// ends.
func (s *source) waitForSync(ctx context.Context) error {
	s.init()
	select {
	case <-s.given:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	synced := s.synced
	s.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), synced.HasSynced) {
		return ctx.Err()
	}
	return nil
}
