package fencekube

import (
	"context"
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

// Leases tells when each node's kubelet last renewed its Lease (in
// kube-node-lease, every 10 s by default), from an informer that keeps the
// name and renewTime of each, so that a dead node is known before the
// controller manager marks it not ready (controller.Options.LeaseGrace).
// Give it to Health (UseLeases): NodeHealth.LeaseRenewed is then set.
type Leases struct {
	client kubernetes.Interface
	runner runner
}

// NewLeases returns the Leases of client's nodes.
func NewLeases(client kubernetes.Interface) *Leases { return &Leases{client: client} }

// Start starts the informer; it runs until ctx ends or Stop is called.
// Calling it again does nothing.
func (l *Leases) Start(ctx context.Context) {
	l.runner.start(ctx, func(Informer) (Informer, syncer) {
		leases := l.client.CoordinationV1().Leases(NodeLeaseNamespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return leases.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return leases.Watch(ctx, o)
			},
		}
		inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, l.client), &coordinationv1.Lease{}, 0, cache.Indexers{})
		_ = inf.SetTransform(stripLease)
		return inf, inf
	})
}

// stripLease keeps a Lease's name and renewTime.
func stripLease(obj any) (any, error) {
	le, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return obj, nil
	}
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: le.Name, Namespace: le.Namespace, ResourceVersion: le.ResourceVersion},
		Spec: coordinationv1.LeaseSpec{RenewTime: le.Spec.RenewTime, LeaseDurationSeconds: le.Spec.LeaseDurationSeconds}}, nil
}

// HasSynced reports whether the informer has synced.
func (l *Leases) HasSynced() bool { return l.runner.hasSynced() }

// WaitForSync waits until the informer has synced or ctx ends.
func (l *Leases) WaitForSync(ctx context.Context) error { return l.runner.waitForSync(ctx) }

// Stop stops the informer and waits for it.
func (l *Leases) Stop() { l.runner.stop() }

// Renewed returns when node's lease was last renewed; zero when there is
// none (yet), or before the informer has synced: such a node is judged by
// its Ready condition alone.
func (l *Leases) Renewed(node string) time.Time {
	inf := l.runner.informer()
	if inf == nil || !l.runner.hasSynced() {
		return time.Time{}
	}
	obj, ok, err := inf.GetByKey(NodeLeaseNamespace + "/" + node)
	if err != nil || !ok {
		return time.Time{}
	}
	le, ok := obj.(*coordinationv1.Lease)
	if !ok || le.Spec.RenewTime == nil {
		return time.Time{}
	}
	return le.Spec.RenewTime.Time
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
		inf := l.runner.informer()
		if inf == nil || !l.runner.hasSynced() {
			continue
		}
		now := time.Now()
		seen := map[string]bool{}
		for _, obj := range inf.List() {
			le, ok := obj.(*coordinationv1.Lease)
			if !ok || le.Spec.RenewTime == nil {
				continue
			}
			seen[le.Name] = true
			s := now.Sub(le.Spec.RenewTime.Time) > grace
			if stale[le.Name] != s {
				stale[le.Name] = s
				onChange(le.Name)
			}
		}
		for n := range stale {
			if !seen[n] {
				delete(stale, n)
			}
		}
	}
}
