package fencekube

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// runner runs one informer for Health, Store or ConfigSource: Start
// starts it once, Stop stops it and waits for its goroutine.
type runner struct {
	mu      sync.Mutex
	inf     cache.SharedIndexInformer
	synced  func() bool // the informer's, or its handler registration's
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// start runs the informer that build returns, unless one was started
// before or the runner was stopped. build returns the informer and the
// function that tells it synced.
func (r *runner) start(ctx context.Context, build func() (cache.SharedIndexInformer, func() bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inf != nil || r.stopped {
		return
	}
	r.inf, r.synced = build()
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	inf, done := r.inf, r.done
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
}

// informer returns the running informer when it has synced, else nil.
func (r *runner) informer() cache.SharedIndexInformer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inf == nil || r.stopped || !r.synced() {
		return nil
	}
	return r.inf
}

func (r *runner) hasSynced() bool { return r.informer() != nil }

// waitForSync waits until the informer has synced, ctx ends or the runner
// is stopped.
func (r *runner) waitForSync(ctx context.Context) error {
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
