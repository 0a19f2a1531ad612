package nodelease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/nodelease"
	"github.com/fencekit/fencekit/policy"
)

// TestMain stops the shared API server of the tests.
func TestMain(m *testing.M) { kubetest.Main(m) }

// clock is a settable clock.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock() *clock {
	c := &clock{}
	now := time.Now().Truncate(time.Second)
	c.t.Store(&now)
	return c
}
func (c *clock) now() time.Time           { return *c.t.Load() }
func (c *clock) step(d time.Duration)     { t := c.now().Add(d); c.t.Store(&t) }
func (c *clock) micro() *metav1.MicroTime { m := metav1.NewMicroTime(c.now()); return &m }

type env struct {
	t     *testing.T
	c     client.WithWatch
	ns    string
	clock *clock
}

func newEnv(t *testing.T) *env {
	c := kubetest.Shared(t)
	return &env{t: t, c: c.Objects(), ns: c.Namespace(t), clock: newClock()}
}

func (e *env) manager(c client.Client, o nodelease.Options) *nodelease.Manager {
	o.Namespace, o.Now = e.ns, e.clock.now
	if c == nil {
		c = e.c
	}
	m, err := nodelease.New(c, o)
	require.NoError(e.t, err)
	return m
}

func (e *env) node(name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(e.t, e.c.Create(e.t.Context(), n))
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), n) })
	return n
}

// held writes node's lease as another actor holds it: renewed at renew,
// for d.
func (e *env) held(node, holder string, renew time.Time, d time.Duration) {
	m := metav1.NewMicroTime(renew)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: nodelease.Name(node)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To(int32(d / time.Second)),
			AcquireTime: &m, RenewTime: &m, LeaseTransitions: ptr.To(int32(0))}}
	require.NoError(e.t, e.c.Create(e.t.Context(), l))
}

func (e *env) lease(node string) (*coordinationv1.Lease, bool) {
	var l coordinationv1.Lease
	err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: nodelease.Name(node)}, &l)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(e.t, err)
	return &l, true
}

func admit(m *nodelease.Manager, node string) policy.Decision {
	return m.Gate().Admit(context.Background(), policy.Candidate{Node: policy.Node{Name: node, Unresponsive: true}}, policy.Cluster{})
}

// A free node's lease is created for fencekit, in medik8s's form: named
// node-NAME in lower case, owned by the Node, with its holder, duration,
// acquire and renew times.
func TestGateTakesAFreeNode(t *testing.T) {
	e := newEnv(t)
	n := e.node("lease-free-" + kubetest.UniqueName(t))
	m := e.manager(nil, nodelease.Options{Duration: 90 * time.Second})
	d := admit(m, n.Name)
	require.True(t, d.Admit, "%+v", d)
	l, ok := e.lease(n.Name)
	require.True(t, ok)
	assert.Equal(t, "node-"+n.Name, l.Name)
	assert.Equal(t, nodelease.DefaultHolder, *l.Spec.HolderIdentity)
	assert.Equal(t, int32(90), *l.Spec.LeaseDurationSeconds)
	assert.True(t, l.Spec.RenewTime.Time.Equal(e.clock.now()), "%v", l.Spec.RenewTime)
	require.Len(t, l.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}, l.OwnerReferences[0])

	// Asked again at once: nothing written; a third of the duration later:
	// renewed.
	rv := l.ResourceVersion
	require.True(t, admit(m, n.Name).Admit)
	l, _ = e.lease(n.Name)
	assert.Equal(t, rv, l.ResourceVersion, "not written again within a third of its duration")
	e.clock.step(31 * time.Second)
	require.True(t, admit(m, n.Name).Admit)
	l, _ = e.lease(n.Name)
	assert.True(t, l.Spec.RenewTime.Time.Equal(e.clock.now()), "renewed")
	assert.Equal(t, int32(0), *l.Spec.LeaseTransitions, "a renewal is no transition")
}

// A node another actor holds is refused, the holder and the lapse in the
// reason, until the lease lapses; then it is taken over (a transition).
// A lease whose renew time lies ahead of this clock counts as held.
func TestGateRefusesANodeAnotherActorHolds(t *testing.T) {
	e := newEnv(t)
	n := e.node("lease-held-" + kubetest.UniqueName(t))
	m := e.manager(nil, nodelease.Options{})
	e.held(n.Name, "node-maintenance", e.clock.now().Add(-10*time.Second), time.Minute)

	d := admit(m, n.Name)
	require.False(t, d.Admit)
	assert.Equal(t, nodelease.GateNodeLease, d.Gate)
	assert.Contains(t, d.Reason, "is held by node-maintenance")
	assert.Contains(t, d.Reason, e.clock.now().Add(50*time.Second).UTC().Format(time.RFC3339))
	assert.Equal(t, 50*time.Second, d.RetryAfter)
	l, _ := e.lease(n.Name)
	assert.Equal(t, "node-maintenance", *l.Spec.HolderIdentity, "untouched")

	// Its holder's clock runs ahead: renewed "in the future". medik8s's
	// package would take it over; fencekit waits for its end.
	l.Spec.RenewTime = &metav1.MicroTime{Time: e.clock.now().Add(5 * time.Minute)}
	require.NoError(t, e.c.Update(t.Context(), l))
	assert.False(t, admit(m, n.Name).Admit, "a renew time ahead of this clock still holds")

	// Lapsed: taken over.
	e.clock.step(6*time.Minute + time.Second)
	require.True(t, admit(m, n.Name).Admit)
	l, _ = e.lease(n.Name)
	assert.Equal(t, nodelease.DefaultHolder, *l.Spec.HolderIdentity)
	assert.Equal(t, int32(1), *l.Spec.LeaseTransitions)
	assert.True(t, l.Spec.AcquireTime.Time.Equal(e.clock.now()))
}

// A remediation Node Health Check asked for shares Node Health Check's
// lease: admitted, and the lease stays its owner's.
func TestGateSharesTheLeaseOfWhoAsked(t *testing.T) {
	e := newEnv(t)
	n := e.node("lease-shared-" + kubetest.UniqueName(t))
	asked := atomic.Bool{}
	m := e.manager(nil, nodelease.Options{Shared: func(node string) []string {
		if asked.Load() && node == n.Name {
			return []string{"NodeHealthCheck-workers"}
		}
		return nil
	}})
	e.held(n.Name, "NodeHealthCheck-workers", e.clock.now(), 3*time.Minute)
	assert.False(t, admit(m, n.Name).Admit, "not while no remediation of its asks")
	asked.Store(true)
	require.True(t, admit(m, n.Name).Admit)
	e.clock.step(2 * time.Minute)
	require.True(t, admit(m, n.Name).Admit)
	l, _ := e.lease(n.Name)
	assert.Equal(t, "NodeHealthCheck-workers", *l.Spec.HolderIdentity)
	assert.True(t, l.Spec.RenewTime.Time.Equal(e.clock.now().Add(-2*time.Minute)), "neither renewed nor taken")
	// The lease of another health check is not shared.
	o := e.node("lease-shared-other-" + kubetest.UniqueName(t))
	e.held(o.Name, "NodeHealthCheck-masters", e.clock.now(), 3*time.Minute)
	assert.False(t, admit(m, o.Name).Admit)
}

// The attacker's schedule: another actor takes the lease between the
// gate's read and its write. The write carries the version read, so the
// API server refuses it: the node is refused, the other's lease stands.
func TestGateLosesARaceToAnotherActor(t *testing.T) {
	e := newEnv(t)
	n := e.node("lease-race-" + kubetest.UniqueName(t))
	// A lapsed lease of a former holder, which the gate would take over.
	e.held(n.Name, "self-node-remediation", e.clock.now().Add(-time.Hour), time.Minute)
	var raced atomic.Bool
	c := interceptor.NewClient(e.c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if l, ok := obj.(*coordinationv1.Lease); ok && raced.CompareAndSwap(false, true) {
				// Node maintenance takes it first.
				var cur coordinationv1.Lease
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(l), &cur))
				cur.Spec.HolderIdentity = ptr.To("node-maintenance")
				cur.Spec.RenewTime = e.clock.micro()
				require.NoError(t, c.Update(ctx, &cur))
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	m := e.manager(c, nodelease.Options{})
	d := admit(m, n.Name)
	require.False(t, d.Admit, "%+v", d)
	assert.Contains(t, d.Reason, "whether another actor holds it is unknown")
	l, _ := e.lease(n.Name)
	assert.Equal(t, "node-maintenance", *l.Spec.HolderIdentity, "the other's write stands")
	// The next look sees it held.
	d = admit(m, n.Name)
	assert.Contains(t, d.Reason, "is held by node-maintenance")

	// Two actors create the lease of a free node at once: one create
	// wins, the other is refused.
	f := e.node("lease-race-create-" + kubetest.UniqueName(t))
	var created atomic.Bool
	c2 := interceptor.NewClient(e.c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok && created.CompareAndSwap(false, true) {
				e.held(f.Name, "NodeHealthCheck-workers", e.clock.now(), time.Minute)
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	d = admit(e.manager(c2, nodelease.Options{}), f.Name)
	require.False(t, d.Admit)
	l, _ = e.lease(f.Name)
	assert.Equal(t, "NodeHealthCheck-workers", *l.Spec.HolderIdentity)
}

// A lease that cannot be read refuses: who holds the node is unknown.
func TestGateRefusesWhenTheLeaseCannotBeRead(t *testing.T) {
	e := newEnv(t)
	n := e.node("lease-unreadable-" + kubetest.UniqueName(t))
	c := interceptor.NewClient(e.c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok {
				return apierrors.NewForbidden(coordinationv1.Resource("leases"), key.Name, errors.New("no rights"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	d := admit(e.manager(c, nodelease.Options{}), n.Name)
	require.False(t, d.Admit)
	assert.Contains(t, d.Reason, "node "+n.Name+": whether another actor holds it is unknown")
	assert.Contains(t, d.Reason, "forbidden")
}

// Sync renews fencekit's leases of open fencings, deletes those of the
// others (a new leader's predecessor's too), and never touches another
// holder's; Release deletes only its own.
func TestSyncRenewsAndReleases(t *testing.T) {
	e := newEnv(t)
	open, done, other := e.node("lease-open-"+kubetest.UniqueName(t)), e.node("lease-done-"+kubetest.UniqueName(t)), e.node("lease-other-"+kubetest.UniqueName(t))
	m := e.manager(nil, nodelease.Options{Duration: 30 * time.Second})
	require.True(t, admit(m, open.Name).Admit)
	// A predecessor's lease (same holder, another process).
	require.True(t, admit(e.manager(nil, nodelease.Options{Duration: 30 * time.Second}), done.Name).Admit)
	e.held(other.Name, "node-maintenance", e.clock.now(), time.Hour)

	e.clock.step(11 * time.Second)
	require.NoError(t, m.Sync(t.Context(), map[string]bool{open.Name: true}))
	l, ok := e.lease(open.Name)
	require.True(t, ok)
	assert.True(t, l.Spec.RenewTime.Time.Equal(e.clock.now()), "renewed")
	_, ok = e.lease(done.Name)
	assert.False(t, ok, "released: its fencing is over")
	l, ok = e.lease(other.Name)
	require.True(t, ok)
	assert.Equal(t, "node-maintenance", *l.Spec.HolderIdentity)

	require.NoError(t, m.Release(t.Context(), other.Name))
	_, ok = e.lease(other.Name)
	assert.True(t, ok, "another's lease is not released")
	require.NoError(t, m.Release(t.Context(), open.Name))
	_, ok = e.lease(open.Name)
	assert.False(t, ok)
}

// With no namespace yet, the first lease creates it, as medik8s's package
// does.
func TestGateCreatesTheNamespace(t *testing.T) {
	c := kubetest.Shared(t)
	ns := fmt.Sprintf("nodelease-ns-%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		_ = c.Client().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	m, err := nodelease.New(c.Objects(), nodelease.Options{Namespace: ns})
	require.NoError(t, err)
	require.True(t, admit(m, "lease-ns-"+kubetest.UniqueName(t)).Admit)
	_, err = c.Client().CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	require.NoError(t, err)
}

func TestNewRefusesAShortDuration(t *testing.T) {
	_, err := nodelease.New(nil, nodelease.Options{Duration: time.Second})
	require.ErrorContains(t, err, "the lease duration 1s is under 3s")
}
