package fencekube_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/policy"
)

// raceStore makes the first Create of two controllers meet: each waits
// (up to a few seconds) until the other has arrived, so that both create
// the node's record at the same time. It counts the conflicts.
type raceStore struct {
	*fencekube.Store
	gate      *createGate
	conflicts atomic.Int64
}

type createGate struct {
	once    [2]sync.Once
	arrived sync.WaitGroup
}

func newCreateGate() *createGate {
	g := &createGate{}
	g.arrived.Add(2)
	return g
}

func (s *raceStore) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	out, err := s.Store.Create(ctx, nf)
	s.count(err)
	return out, err
}

func (s *raceStore) Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	out, err := s.Store.Update(ctx, nf)
	s.count(err)
	return out, err
}

func (s *raceStore) count(err error) {
	if errors.Is(err, controller.ErrConflict) {
		s.conflicts.Add(1)
	}
}

// meet is called by controller i before its first Create.
func (g *createGate) meet(i int) {
	g.once[i].Do(func() {
		g.arrived.Done()
		done := make(chan struct{})
		go func() { g.arrived.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	})
}

// gatedStore is a raceStore whose Create meets the other controller's.
type gatedStore struct {
	*raceStore
	i int
}

func (s gatedStore) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	s.gate.meet(s.i)
	return s.raceStore.Create(ctx, nf)
}

// rig is a private API server with one node, worker-1, that stops
// answering at t0, its fence configuration (isolation fc-off, power
// management pdu-off, recovery pdu-on fc-on) on shared fake devices, and
// controllers on a fake clock, each with its own Store, Health and
// ConfigSource.
type rig struct {
	t       *testing.T
	c       *kubetest.Cluster
	fc, pdu *fake.Device
	clock   *fencetest.Clock
	ctrls   []*controller.Controller
	stores  []*raceStore
	healths []*fencekube.Health
	reader  *fencekube.Store
}

const rigNode = "worker-1"

func newRig(t *testing.T, ids ...string) *rig {
	c := kubetest.Start(t) // private: the controllers see every node
	c.InstallCRD(t, crdPath)
	ctx := t.Context()
	ns := c.Namespace(t)
	const node = rigNode

	prefix := kubetest.UniqueName(t)
	r := &rig{t: t, c: c, clock: fencetest.NewClock(t0.Add(2 * time.Minute)),
		fc:     fake.NewNamed(prefix+"-fc", fake.Options{Plugs: []string{"1"}}),
		pdu:    fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: []string{"1"}}),
		reader: fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})}
	t.Cleanup(func() { fake.Forget(prefix + "-fc"); fake.Forget(prefix + "-pdu") })
	cm := func(name, key, body string) {
		_, err := c.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: body}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, d := range []string{"fc", "pdu"} {
		cm("fence-method-template-"+d, "template.properties",
			"name="+d+"\ndriver=fake\naddress=fake://"+prefix+"-"+d+"\nstonith_status_sleep=0\npower_timeout=1\n")
		for _, a := range []string{"off", "on"} {
			cm("fence-method-"+d+"-"+a+"-"+node, "method.properties", "template="+d+"\nplug=1\naction="+a+"\n")
		}
	}
	cm("fence-config-"+node, "config.properties",
		"node_name="+node+"\nisolation=fc-off\npower_management=pdu-off\nrecovery=pdu-on fc-on\n")
	createNode(t, c, node, corev1.ConditionFalse, t0)

	gate := newCreateGate()
	for i, id := range ids {
		h, cfg := runAdapters(t, c, ns)
		s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
		ev := recorderEvents(t, c.Client(), "fencekit-"+id)
		rs := &raceStore{Store: s, gate: gate}
		var store controller.Store = rs
		if len(ids) == 2 {
			store = gatedStore{rs, i}
		}
		r.stores, r.healths = append(r.stores, rs), append(r.healths, h)
		r.ctrls = append(r.ctrls, &controller.Controller{
			Health: h, Store: store, Config: cfg,
			Pods: &fencekube.TaintPods{Client: c.Objects(), Now: r.clock.Now}, Events: ev, Now: r.clock.Now,
			Options: controller.Options{Identity: id, UnhealthyAfter: time.Minute,
				Flow: flow.Options{PowerDelay: 2 * time.Minute, PollInterval: 30 * time.Second, MaxPolls: 100,
					RetryBackoff: 10 * time.Second}},
		})
	}
	return r
}

// pass runs a pass of every controller at once and waits for their
// workers.
func (r *rig) pass() {
	var wg sync.WaitGroup
	for _, ctl := range r.ctrls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(r.t, ctl.Pass(r.t.Context()))
			ctl.Wait()
		}()
	}
	wg.Wait()
}

// passUntil passes until done holds of the node's record (10 passes at
// most).
func (r *rig) passUntil(what string, done func(nf *flow.NodeFence) bool) {
	r.t.Helper()
	for range 10 {
		r.pass()
		if nf, err := r.reader.Get(r.t.Context(), rigNode); err == nil && done(nf) {
			return
		}
	}
	nf, err := r.reader.Get(r.t.Context(), rigNode)
	r.t.Fatalf("%s: not reached after 10 passes: %+v (%v)", what, nf, err)
}

func (r *rig) record() *flow.NodeFence {
	nf, err := r.reader.Get(r.t.Context(), rigNode)
	require.NoError(r.t, err)
	return nf
}

func (r *rig) node() *corev1.Node {
	n, err := r.c.Client().CoreV1().Nodes().Get(r.t.Context(), rigNode, metav1.GetOptions{})
	require.NoError(r.t, err)
	return n
}

// powerFence takes the node through isolation and power management.
func (r *rig) powerFence() {
	t := r.t
	r.passUntil("isolated", func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepIsolation && nf.Status == flow.StatusDone && nf.Released == flow.ReleaseStorage
	})
	assert.Equal(t, 1, sets(r.fc, "1", fence.StateOff), "isolated once")
	assert.Equal(t, 1, r.fc.Calls(fake.OpSet))
	assert.Equal(t, fence.StateOn, r.pdu.Truth("1"))
	assert.False(t, fencekube.HasOutOfServiceTaint(r.node()), "no taint for an isolated node")

	r.clock.Add(2 * time.Minute) // the power delay
	r.passUntil("power fenced", func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone && nf.Released == flow.ReleasePower
	})
	assert.Equal(t, 1, sets(r.pdu, "1", fence.StateOff), "powered off once")
	assert.True(t, fencekube.HasOutOfServiceTaint(r.node()), "the node verified off is tainted")
}

// Two controllers, each with its own Store, Health and ConfigSource on a
// real API server, race on one node that stops answering, through
// isolation, power management and recovery. The devices are shared fake
// devices (fake://NAME): each was switched off exactly once.
func TestIntegrationTwoControllers(t *testing.T) {
	r := newRig(t, "controller-a", "controller-b")
	r.powerFence() // both create the record at once; one wins and fences

	// Polls while the node stays down: still one off each.
	for range 3 {
		r.clock.Add(30 * time.Second)
		r.pass()
	}
	assert.Positive(t, r.record().Polls)
	assert.Equal(t, 1, sets(r.fc, "1", fence.StateOff))
	assert.Equal(t, 1, sets(r.pdu, "1", fence.StateOff))

	// The node comes back: recovery, and the taint goes.
	setReady(t, r.c, rigNode, corev1.ConditionTrue, r.clock.Now())
	for _, h := range r.healths {
		require.Eventually(t, func() bool {
			for _, n := range h.Nodes() {
				if n.Name == rigNode {
					return n.Ready
				}
			}
			return false
		}, 30*time.Second, 10*time.Millisecond)
	}
	r.clock.Add(time.Second)
	r.passUntil("recovered", func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.False(t, fencekube.HasOutOfServiceTaint(r.node()), "the taint removed once the node is back")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, r.fc.History("1"))
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, r.pdu.History("1"))
	nf := r.record()
	assert.False(t, nf.Isolated)
	assert.False(t, nf.PoweredOff)
	assert.Equal(t, flow.ReleaseNone, nf.Released)

	conflicts := r.stores[0].conflicts.Load() + r.stores[1].conflicts.Load()
	t.Logf("conflicts lost by one of the controllers: %d", conflicts)
	assert.Positive(t, conflicts, "the controllers did race")

	// The transitions are events on the node, each recorded once.
	require.Eventually(t, func() bool {
		seen := kubetest.NodeEventCounts(t, r.c.Client(), rigNode)
		return seen["FenceIsolated"] == 1 && seen["FencePowerFenced"] == 1 && seen["FenceRecovered"] == 1 &&
			seen["FencePodsReleased"] == 2 && seen["FencePodsRestored"] == 1
	}, 30*time.Second, 50*time.Millisecond)
}

// A user deletes the NodeFence of a node that was powered off and
// tainted: the finalizer holds the object until the controller has removed
// the taint, then the record is forgotten and the object goes. The node
// stays down: nothing else is done to it.
func TestIntegrationAbandonRemovesTaint(t *testing.T) {
	r := newRig(t, "controller-a")
	ctx := t.Context()
	r.powerFence()

	require.NoError(t, r.c.Dynamic().Resource(gvr).Delete(ctx, rigNode, metav1.DeleteOptions{}))
	assert.True(t, r.record().Deleting, "held by the finalizer")
	assert.True(t, fencekube.HasOutOfServiceTaint(r.node()))

	r.clock.Add(time.Second)
	for range 5 {
		r.pass()
		if _, err := r.reader.Get(ctx, rigNode); errors.Is(err, controller.ErrNotFound) {
			break
		}
	}
	_, err := r.reader.Get(ctx, rigNode)
	require.ErrorIs(t, err, controller.ErrNotFound, "forgotten once the pods are restored")
	assert.False(t, fencekube.HasOutOfServiceTaint(r.node()), "never left behind")
	assert.Equal(t, fence.StateOff, r.pdu.Truth("1"), "abandoning undoes the pod treatment only")
}

// sets counts the switches of a plug to s.
func sets(d *fake.Device, plug string, s fence.State) int {
	h := d.History(plug)
	n := 0
	for i := 1; i < len(h); i++ {
		if h[i] == s && h[i-1] != s {
			n++
		}
	}
	return n
}

// Two controllers without leader election, each with its own Store, Health
// and ConfigSource on a real API server, share the admission ledger in a
// Lease: with "one fencing in flight", of two nodes that stop answering at
// once exactly one is fenced, whichever controller asks first.
func TestIntegrationTwoControllersShareTheInFlightLimit(t *testing.T) {
	c := kubetest.Start(t)
	c.InstallCRD(t, crdPath)
	ctx := t.Context()
	ns := c.Namespace(t)
	prefix := kubetest.UniqueName(t)
	fc := fake.NewNamed(prefix+"-fc", fake.Options{Plugs: []string{"1", "2"}})
	t.Cleanup(func() { fake.Forget(prefix + "-fc") })
	cm := func(name, key, body string) {
		_, err := c.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: body}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cm("fence-method-template-fc", "template.properties", "name=fc\ndriver=fake\naddress=fake://"+prefix+"-fc\nstonith_status_sleep=0\npower_timeout=1\n")
	nodes := []string{"worker-1", "worker-2"}
	for i, n := range nodes {
		cm("fence-method-fc-off-"+n, "method.properties", fmt.Sprintf("template=fc\nplug=%d\naction=off\n", i+1))
		cm("fence-config-"+n, "config.properties", "node_name="+n+"\nisolation=fc-off\n")
		createNode(t, c, n, corev1.ConditionFalse, t0)
	}
	clock := fencetest.NewClock(t0.Add(2 * time.Minute))
	var ctrls []*controller.Controller
	for _, id := range []string{"controller-a", "controller-b"} {
		h, cfg := runAdapters(t, c, ns)
		s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
		ctrls = append(ctrls, &controller.Controller{
			Health: h, Store: s, Config: cfg, Now: clock.Now,
			Admissions: fencekube.NewAdmissions(c.Objects(), ns, ""),
			Gate:       policy.MaxInFlight{N: 1},
			Options:    controller.Options{Identity: id, UnhealthyAfter: time.Minute},
		})
	}
	for range 3 {
		var wg sync.WaitGroup
		for _, ctl := range ctrls {
			wg.Add(1)
			go func() { defer wg.Done(); assert.NoError(t, ctl.Pass(ctx)); ctl.Wait() }()
		}
		wg.Wait()
	}
	reader := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	active := 0
	for _, n := range nodes {
		if nf, err := reader.Get(ctx, n); err == nil && nf.Active() {
			active++
			assert.Equal(t, flow.StatusDone, nf.Status, "%s: %s", n, nf.Message)
		} else if err == nil {
			assert.Contains(t, nf.Message, "refused by max-in-flight", n)
		}
	}
	assert.Equal(t, 1, active, "one fencing in flight across both controllers")
	assert.Equal(t, 1, sets(fc, "1", fence.StateOff)+sets(fc, "2", fence.StateOff), "one port disabled")
	l, err := fencekube.NewAdmissions(c.Objects(), ns, "").Ledger(ctx)
	require.NoError(t, err)
	assert.Len(t, l.Admitted, 1)
}
