package fencekube

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Each adapter makes its own informer (a ListWatch of its resource, not a
// SharedInformerFactory's) because each keeps its own cut of the objects:
// Health keeps of a Node a NodeSummary (SummarizeNode; a cut Node took
// the controller's memory at 1,000 nodes from 45.5 to 36.1 MiB, and the
// summary takes a third of a cut Node, BENCHMARKS.md), where a factory's
// shared informer of Nodes must keep what every user of it reads. Where a factory or a
// controller-runtime manager already runs the informers, give them to the
// adapters (UseInformer, UseCache) and none is started twice.
//
// runner runs one informer for Health, Store, ConfigSource or Secrets:
// Start starts it once, Stop stops it and waits for its goroutine. An
// informer someone else runs (a controller-runtime manager's cache) is
// given with use: start then adds the adapter's handlers to it and runs
// nothing, and stop leaves it running.
type runner struct {
	mu      sync.Mutex
	inf     Informer
	items   Lister   // inf's objects
	ext     Informer // given by use; run by its owner
	extList Lister
	synced  syncer // the informer, or its handler's registration
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// Informer is what an adapter needs of an informer that someone else runs
// (UseCache): client-go's SharedIndexInformer has it, and so has
// controller-runtime's cache.Informer.
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

// use makes the runner work on inf, an informer its owner runs, whose
// objects items lists. Call it before start.
func (r *runner) use(inf Informer, items Lister) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ext, r.extList = inf, items
}

// start runs the informer that build returns, unless one was started
// before or the runner was stopped. build gets the informer given by use
// (nil when none: it makes one) and returns the informer and the function
// that tells it synced; an informer given by use is not run here.
func (r *runner) start(ctx context.Context, build func(ext Informer) (Informer, syncer)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inf != nil || r.stopped {
		return
	}
	r.inf, r.synced = build(r.ext)
	if r.ext != nil {
		r.items = r.extList
		return
	}
	own, ok := r.inf.(cache.SharedIndexInformer)
	if !ok {
		return
	}
	r.items = own.GetStore()
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	done := r.done
	go func() {
		defer close(done)
		own.RunWithContext(ctx)
	}()
}

// informer returns the objects of the running informer when it has
// synced, else nil.
func (r *runner) informer() Lister {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inf == nil || r.stopped || !r.synced.HasSynced() {
		return nil
	}
	return r.items
}

func (r *runner) hasSynced() bool { return r.informer() != nil }

// syncer tells whether an informer, or one of its handlers, has synced:
// a SharedIndexInformer, a handler's registration (whose sync also waits
// for the handler to have seen the initial list), or another owner's
// informer.
type syncer interface{ HasSynced() bool }

// neverSynced is the syncer of a handler that could not be added.
type neverSynced struct{}

func (neverSynced) HasSynced() bool { return false }

// waitForSync waits until the informer has synced, ctx ends or the runner
// is stopped. An informer or registration of client-go's tells it without
// polling (cache.WaitFor on its HasSyncedChecker); another owner's informer
// is polled.
func (r *runner) waitForSync(ctx context.Context) error {
	r.mu.Lock()
	s, stop := r.synced, r.done
	r.mu.Unlock()
	if dc, ok := s.(interface{ HasSyncedChecker() cache.DoneChecker }); ok && stop != nil {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stop: // the runner stopped: nothing more to wait for
				cancel()
			case <-wctx.Done():
			}
		}()
		if cache.WaitFor(wctx, "", dc.HasSyncedChecker()) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if r.hasSynced() {
			return nil
		}
		r.mu.Lock()
		stopped := r.stopped
		r.mu.Unlock()
		if stopped {
			return context.Canceled
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// stop stops the informer and waits until its goroutine has returned. It
// may be called more than once; a stopped runner does not start again.
func (r *runner) stop() {
	r.mu.Lock()
	r.stopped = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// stripManagedFields is an informer transform that drops managedFields,
// which the library never reads, to save memory in large clusters.
func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
