package fencekube

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NodeLeaseNamespace is where the kubelets renew their node leases.
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// RBAC, with --lease-grace: the kubelets' node leases (in
// kube-node-lease), listed and watched.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=list;watch

// Leases tells when each node's kubelet last renewed its Lease (in
// kube-node-lease, every 10 s by default), so that a dead node is known
// before the controller manager marks it not ready
// (controller.Options.LeaseGrace). Give it to Health (UseLeases):
// NodeHealth.LeaseRenewed is then set.
//
// The time it gives is when this process saw the renewal (its own
// monotonic clock), not the renewTime the kubelet wrote: a node whose
// clock runs behind the controller's is not taken for dead, nor one whose
// clock runs ahead for alive. The node lifecycle controller judges leases
// the same way. A lease seen at the start counts as renewed then: every
// node has a whole grace after the controller starts.
//
// It keeps of each Lease its name and two times and nothing else: a
// reflector lists and watches the Leases into a map (about 60 bytes a
// node), where an informer would keep a Lease object and its key (about
// 700 bytes a node of the controller's heap at 5,000 nodes,
// BENCHMARKS.md).
type Leases struct {
	client kubernetes.Interface

	mu      sync.Mutex
	base    time.Time             // the times of renewed count from it (monotonic)
	renewed map[string]leaseTimes // lease (node) name -> its renewal
	synced  bool
	syncCh  chan struct{} // closed once synced
	stopCh  chan struct{} // closed by Stop
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// NewLeases returns the Leases of client's nodes.
func NewLeases(client kubernetes.Interface) *Leases {
	return &Leases{client: client, base: time.Now(), renewed: map[string]leaseTimes{},
		syncCh: make(chan struct{}), stopCh: make(chan struct{})}
}

// Start starts the reflector; it runs until ctx ends or Stop is called.
// Calling it again does nothing.
func (l *Leases) Start(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil || l.stopped {
		return
	}
	leases := l.client.CoordinationV1().Leases(NodeLeaseNamespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return leases.Watch(ctx, o)
		},
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, l.client), &coordinationv1.Lease{}, leaseStore{l},
		cache.ReflectorOptions{Name: "node leases"})
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	done := l.done
	go func() {
		defer close(done)
		r.RunWithContext(ctx)
	}()
}

// leaseTimes is what Leases keeps of a Lease: its renewTime (Unix
// nanoseconds, 0 when it has none), and when this process saw it take
// that value (nanoseconds since Leases.base).
type leaseTimes struct{ renew, seen int64 }

// leaseStore is the reflector's store: it notes each Lease's renewal in
// its Leases.
type leaseStore struct{ l *Leases }

func renewTime(obj any) (string, int64, bool) {
	le, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return "", 0, false
	}
	var t int64
	if le.Spec.RenewTime != nil {
		t = le.Spec.RenewTime.UnixNano()
	}
	return le.Name, t, true
}

// note keeps name's renewTime t in m, seen at now unless it is the one
// seen before; with l.mu held.
func (l *Leases) note(m map[string]leaseTimes, name string, t, now int64) {
	prev, ok := l.renewed[name]
	if ok && prev.renew == t {
		m[name] = prev
		return
	}
	m[name] = leaseTimes{renew: t, seen: now}
}

func (l *Leases) since() int64 { return int64(time.Since(l.base)) }

func (s leaseStore) Add(obj any) error {
	if name, t, ok := renewTime(obj); ok {
		s.l.mu.Lock()
		s.l.note(s.l.renewed, name, t, s.l.since())
		s.l.mu.Unlock()
	}
	return nil
}

func (s leaseStore) Update(obj any) error { return s.Add(obj) }

func (s leaseStore) Delete(obj any) error {
	if name, _, ok := renewTime(obj); ok {
		s.l.mu.Lock()
		delete(s.l.renewed, name)
		s.l.mu.Unlock()
	}
	return nil
}

func (s leaseStore) Replace(items []any, _ string) error {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	m := make(map[string]leaseTimes, len(items))
	now := s.l.since()
	for _, it := range items {
		if name, t, ok := renewTime(it); ok {
			s.l.note(m, name, t, now)
		}
	}
	s.l.renewed = m
	if !s.l.synced {
		s.l.synced = true
		close(s.l.syncCh)
	}
	return nil
}

func (leaseStore) Resync() error { return nil }

// HasSynced reports whether the Leases were listed.
func (l *Leases) HasSynced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced && !l.stopped
}

// WaitForSync waits until the Leases were listed, ctx ends or Stop is
// called.
func (l *Leases) WaitForSync(ctx context.Context) error {
	select {
	case <-l.syncCh:
		return nil
	case <-l.stopCh:
		return context.Canceled
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops the reflector and waits for it. It may be called more than
// once; stopped Leases do not start again.
func (l *Leases) Stop() {
	l.mu.Lock()
	if !l.stopped {
		l.stopped = true
		close(l.stopCh)
	}
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Renewed returns when this process saw node's lease renewed (its own
// clock, with its monotonic reading); zero when the lease has no
// renewTime, there is none (yet), or before the Leases were listed: such
// a node is judged by its Ready condition alone.
func (l *Leases) Renewed(node string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.synced || l.stopped {
		return time.Time{}
	}
	lt, ok := l.renewed[node]
	if !ok || lt.renew == 0 {
		return time.Time{}
	}
	return l.base.Add(time.Duration(lt.seen))
}

// Watch calls onChange(node) when a node's lease turns stale (not renewed
// for grace) and when it is renewed again, checking every tick (a second
// when 0), until ctx ends: the controller looks at the node then, not at
// its next pass.
func (l *Leases) Watch(ctx context.Context, grace, tick time.Duration, onChange func(node string)) {
	if tick <= 0 {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	stale := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var changed []string
		l.mu.Lock()
		if !l.synced || l.stopped {
			l.mu.Unlock()
			continue
		}
		for name, lt := range l.renewed {
			if lt.renew == 0 {
				continue
			}
			s := now.Sub(l.base.Add(time.Duration(lt.seen))) > grace
			if stale[name] != s {
				stale[name] = s
				changed = append(changed, name)
			}
		}
		for n := range stale {
			if l.renewed[n].renew == 0 {
				delete(stale, n)
			}
		}
		l.mu.Unlock()
		for _, name := range changed {
			onChange(name)
		}
	}
}
