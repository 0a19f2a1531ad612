package agentfence

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/nodeagent"
)

const ns = "fencekit-system"

func agentLease(node string, pub nodeagent.Published, reports map[string]nodeagent.Report) *coordinationv1.Lease {
	p, _ := json.Marshal(pub)
	r, _ := json.Marshal(reports)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeagent.LeasePrefix + node, Namespace: ns,
		Labels:      map[string]string{nodeagent.LeaseLabel: nodeagent.LeaseLabelValue},
		Annotations: map[string]string{nodeagent.AgentAnnotation: string(p), nodeagent.ReportsAnnotation: string(r)}}}
}

func published(peers ...string) nodeagent.Published {
	return nodeagent.Published{Boot: "boot-1", Incarnation: "i1", State: nodeagent.StateRunning,
		SelfFenceTimeout: 3, WatchdogTimeout: 2, Interval: 0.5, Peers: peers}
}

type world struct {
	t   *testing.T
	c   client.WithWatch
	clk *fencetest.Clock
	dev *Device
}

func newWorld(t *testing.T) *world {
	c := fakeClient(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "boot-1"}}},
		agentLease("a", published("b", "c"), nil),
		agentLease("b", published("a", "c"), nil),
		agentLease("c", published("a", "b"), nil),
	)
	clk := fencetest.NewClock(time.Unix(1000, 0))
	dev, err := New(c, Options{Namespace: ns, Now: clk.Now})
	require.NoError(t, err)
	return &world{t, c, clk, dev}
}

// report writes peer's report on node a's request, as its agent would.
func (w *world) report(peer, inc string, seenFor, unheardFor float64) {
	cm := &corev1.ConfigMap{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: nodeagent.RequestsConfigMap}, cm))
	pub := published("a", "b", "c")
	pub.Incarnation = inc
	w.renew(agentLease(peer, pub, map[string]nodeagent.Report{"a": {Request: cm.Data["a"], SeenFor: seenFor, UnheardFor: unheardFor}}))
}

// renew writes l over the Lease of its name, as its agent renews it (the
// server gives it a new resourceVersion).
func (w *world) renew(l *coordinationv1.Lease) {
	cur := &coordinationv1.Lease{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKeyFromObject(l), cur))
	l.ResourceVersion = cur.ResourceVersion
	require.NoError(w.t, w.c.Update(context.Background(), l))
}

// boot makes node a report boot.
func (w *world) boot(boot string) {
	n := &corev1.Node{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKey{Name: "a"}, n))
	n.Status.NodeInfo.BootID = boot
	require.NoError(w.t, w.c.Status().Update(context.Background(), n))
}

// fakeClient is controller-runtime's fake client holding objs, Node status
// written through its subresource.
func fakeClient(objs ...client.Object) client.WithWatch {
	return crfake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).Build()
}

func (w *world) status() fence.State {
	st, err := w.dev.Status(context.Background(), "a")
	require.NoError(w.t, err)
	return st
}

// The proof: node a's Lease unchanged since the request, both its peers
// (more than half of the three with it) saying on the request that they
// have not heard it since before they saw it, until T + the margin past
// the latest starting point (their own durations, less 1%), and this
// process's clock past T + 2W + the margin before the reads.
func TestProofByTime(t *testing.T) {
	w := newWorld(t)
	assert.Equal(t, fence.StateOn, w.status(), "no request: on")
	require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
	cw := w.clk.Now()
	assert.Equal(t, fence.StateUnknown, w.status())

	// The peers' first reports are seen a second after the request.
	w.clk.Add(time.Second)
	w.report("b", "i1", 0.4, 5)
	w.report("c", "i1", 0.4, 5)
	assert.Equal(t, fence.StateUnknown, w.status()) // first seen now: X = now
	x := w.clk.Now()
	t3, wd, i := 3*time.Second, 2*time.Second, 500*time.Millisecond
	m := margin(t3, wd, i)

	// Their reports just short of X + T + the margin: not yet, however
	// late the clock.
	need := (x.Sub(cw) + t3 + m).Seconds() / 0.99
	w.clk.Set(x.Add(time.Hour))
	w.report("b", "i1", need-0.001, need+1)
	w.report("c", "i1", need-0.001, need+1)
	assert.Equal(t, fence.StateUnknown, w.status())

	// Far enough, and the clock just short of X + T + 2W + the margin.
	w = newWorld(t)
	require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
	w.clk.Add(time.Second)
	w.report("b", "i1", 0.4, 5)
	w.report("c", "i1", 0.4, 5)
	assert.Equal(t, fence.StateUnknown, w.status())
	w.clk.Set(x.Add(Wait(t3, wd, i) - time.Millisecond))
	w.report("b", "i1", need+0.001, need+1)
	w.report("c", "i1", need+0.001, need+1)
	assert.Equal(t, fence.StateUnknown, w.status(), "the reports reach far enough, the watchdog's time has not passed")
	w.clk.Set(x.Add(Wait(t3, wd, i)))
	assert.Equal(t, fence.StateOff, w.status())
	assert.True(t, w.dev.ProofByTime())

	// Proven, the request says so: another process (the controller's
	// next job) reads the node off while its Lease is the one proven.
	other, err := New(w.c, Options{Namespace: ns})
	require.NoError(t, err)
	st, err := other.Status(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	// The same boot renewing its Lease: found running after it was
	// counted off.
	w.renew(agentLease("a", published("b", "c"), nil))
	st, err = other.Status(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "the boot counted off runs")
	// A new boot: the machine was reset.
	pub := published("b", "c")
	pub.Boot = "boot-2"
	w.renew(agentLease("a", pub, nil))
	st, err = other.Status(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "reset since")
	// The Node reports the new boot: the machine is back, running.
	w.boot("boot-2")
	st, err = other.Status(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "back, and its kubelet says so: a request proven long ago is no proof")

	// The on withdraws the request.
	require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOn))
	assert.Equal(t, fence.StateOn, w.status())
	cm := &corev1.ConfigMap{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: nodeagent.RequestsConfigMap}, cm))
	assert.NotContains(t, cm.Data, "a")
}

// What keeps the node from counting off: a peer that heard it since it
// saw the request, a single witness of two peers, a restarted peer (its
// reports count from when its new run's were first seen), a Lease renewed
// since the request.
func TestNoProof(t *testing.T) {
	long := 60.0
	t.Run("heard since", func(t *testing.T) {
		w := newWorld(t)
		require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
		w.report("b", "i1", 0, 0)
		w.report("c", "i1", 0, 0)
		w.clk.Add(time.Minute)
		w.report("b", "i1", long, long)
		w.report("c", "i1", long, 1) // heard a second ago
		assert.Equal(t, fence.StateUnknown, w.status())
	})
	t.Run("one witness of two", func(t *testing.T) {
		w := newWorld(t)
		require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
		w.report("b", "i1", 0, 0)
		w.clk.Add(time.Minute)
		w.report("b", "i1", long, long)
		assert.Equal(t, fence.StateUnknown, w.status())
	})
	t.Run("restarted peer", func(t *testing.T) {
		w := newWorld(t)
		require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
		w.report("b", "i1", 0, 0)
		w.report("c", "i1", 0, 0)
		assert.Equal(t, fence.StateUnknown, w.status())
		w.clk.Add(time.Minute)
		w.report("c", "i2", 5, 5) // c's agent restarted: its new run first seen now
		assert.Equal(t, fence.StateUnknown, w.status())
		xNew := w.clk.Now()
		wait := Wait(3*time.Second, 2*time.Second, 500*time.Millisecond)
		w.report("b", "i1", 300, 300)
		w.report("c", "i2", 300, 300)
		w.clk.Set(xNew.Add(wait - time.Millisecond))
		assert.Equal(t, fence.StateUnknown, w.status(), "the first run's reports would have sufficed: not the new run's")
		w.clk.Set(xNew.Add(wait))
		assert.Equal(t, fence.StateOff, w.status(), "counted from the new run's first report")
	})
	t.Run("booted again", func(t *testing.T) {
		w := newWorld(t)
		require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
		w.boot("boot-2")
		_, err := w.dev.Status(context.Background(), "a")
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), "booted again")
		// An off again starts a new request, which is refused too.
		err = w.dev.Set(context.Background(), "a", fence.StateOff)
		assert.True(t, fence.IsNotDone(err))
	})
	t.Run("renewed", func(t *testing.T) {
		w := newWorld(t)
		require.NoError(t, w.dev.Set(context.Background(), "a", fence.StateOff))
		w.renew(agentLease("a", published("b", "c"), nil))
		w.clk.Add(time.Minute)
		w.report("b", "i1", long, long)
		w.report("c", "i1", long, long)
		_, err := w.dev.Status(context.Background(), "a")
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), "agent Lease changed since the request")
	})
}

// An agent that cannot prove the node off is refused before anything is
// written, with the reason.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		pub  func(*nodeagent.Published)
		boot string
		err  string
	}{
		{"stopped", func(p *nodeagent.Published) { p.State = nodeagent.StateStopped }, "boot-1", `says it is "stopped"`},
		{"booted again", func(*nodeagent.Published) {}, "boot-2", "booted again"},
		{"long timeout", func(p *nodeagent.Published) { p.SelfFenceTimeout = 600 }, "boot-1", "more than this method's max_self_fence_timeout"},
		{"long watchdog", func(p *nodeagent.Published) { p.WatchdogTimeout = 120 }, "boot-1", "more than this method's max_watchdog_timeout"},
		{"no timings", func(p *nodeagent.Published) { p.Interval = 0 }, "boot-1", "timings out of range"},
		{"no peers", func(p *nodeagent.Published) { p.Peers = nil }, "boot-1", "lists no peer"},
		{"peer twice", func(p *nodeagent.Published) { p.Peers = []string{"b", "b"} }, "boot-1", "named twice"},
		{"no boot reported", func(*nodeagent.Published) {}, "", "reports no boot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := published("b", "c")
			tc.pub(&pub)
			c := fakeClient(
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: tc.boot}}},
				agentLease("a", pub, nil))
			dev, err := New(c, Options{Namespace: ns})
			require.NoError(t, err)
			err = dev.Set(context.Background(), "a", fence.StateOff)
			require.Error(t, err)
			assert.True(t, fence.IsNotDone(err))
			assert.Contains(t, err.Error(), tc.err)
			err = c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: nodeagent.RequestsConfigMap}, &corev1.ConfigMap{})
			assert.True(t, apierrors.IsNotFound(err), "no request written: %v", err)
		})
	}
	dev, err := New(fakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}), Options{Namespace: ns})
	require.NoError(t, err)
	err = dev.Set(context.Background(), "a", fence.StateOff)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.Contains(t, err.Error(), "no agent Lease")
}

// power_timeout must exceed the longest off the method's limits allow.
func TestDriverCheck(t *testing.T) {
	d := Driver(nil)
	err := d.Check(fence.Address{}, fence.Params{"namespace": "x", "power_timeout": "60"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must exceed")
	assert.NoError(t, d.Check(fence.Address{}, fence.Params{"namespace": "x", "power_timeout": "60", "max_self_fence_timeout": "10", "max_watchdog_timeout": "5"}))
	assert.Error(t, d.Check(fence.Address{}, fence.Params{"power_timeout": "600"}), "namespace required")
}
