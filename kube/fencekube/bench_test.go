package fencekube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fakedev "github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// clusterSize is the size of the cluster of the pass benchmarks.
const clusterSize = 10000

// BenchmarkStoreList is the Store's part of a controller pass over a large
// cluster: a List from a manager's cache (the objects as its informer
// holds them, not copied), every object converted once before the timer
// starts.
func BenchmarkStoreList(b *testing.B) {
	cache := &listedCache{}
	for i := range clusterSize {
		o := object(b, sample(fmt.Sprintf("worker-%05d", i)))
		o.ResourceVersion = fmt.Sprint(i + 1)
		cache.items = append(cache.items, *o)
	}
	s := fencekube.NewStore(cache, fencekube.StoreOptions{Reader: cache})
	ctx := b.Context()
	if recs, err := s.List(ctx); err != nil || len(recs) != clusterSize {
		b.Fatalf("%d records, %v", len(recs), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.List(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// listedCache lists its items as controller-runtime's cache reader does
// with UnsafeDisableDeepCopy: a shallow copy of each object.
type listedCache struct {
	client.Client
	items []fencekube.NodeFence
}

func (c *listedCache) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	l.(*fencekube.NodeFenceList).Items = slices.Clone(c.items)
	return nil
}

// BenchmarkHealthNodes is the Health's part of a controller pass over a
// large cluster.
func BenchmarkHealthNodes(b *testing.B) {
	var objs []runtime.Object
	for i := range clusterSize {
		objs = append(objs, node(fmt.Sprintf("worker-%05d", i), corev1.ConditionTrue, t0, map[string]string{"zone": "a"}))
	}
	h := fencekube.NewHealth()
	runHealth(b, fake.NewClientset(objs...), h)
	wctx, wcancel := context.WithTimeout(b.Context(), time.Minute)
	defer wcancel()
	if err := h.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := h.Nodes(); len(n) != clusterSize {
			b.Fatalf("%d nodes", len(n))
		}
	}
}

// BenchmarkDecode converts one object with three jobs and two transitions
// to a record.
func BenchmarkDecode(b *testing.B) {
	u := object(b, sample("worker-1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode converts one record to an object.
func BenchmarkEncode(b *testing.B) {
	nf := sample("worker-1")
	b.ReportAllocs()
	for b.Loop() {
		if o := fencekube.FromRecord(nf); o == nil {
			b.Fatal("no object")
		}
	}
}

// benchHealth is the Health of the benchmark's nodes only: the shared API
// server may hold the nodes of other tests, which the benchmark's
// controller must neither fence nor count.
type benchHealth struct {
	*fencekube.Health
	prefix string
}

func (h benchHealth) Nodes() []controller.NodeHealth {
	return slices.DeleteFunc(h.Health.Nodes(), func(n controller.NodeHealth) bool {
		return !strings.HasPrefix(n.Name, h.prefix)
	})
}

// benchStore is the Store of the benchmark's NodeFences only (as
// benchHealth), which keeps the last record the controller wrote, so that
// the benchmark sees where the fencing is without a read of its own.
type benchStore struct {
	*fencekube.Store
	prefix string

	mu   sync.Mutex
	last *flow.NodeFence
}

func (s *benchStore) List(ctx context.Context) ([]*flow.NodeFence, error) {
	recs, err := s.Store.List(ctx)
	return slices.DeleteFunc(recs, func(r *flow.NodeFence) bool { return !strings.HasPrefix(r.Node, s.prefix) }), err
}

func (s *benchStore) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	return s.keep(s.Store.Create(ctx, nf))
}

func (s *benchStore) Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	return s.keep(s.Store.Update(ctx, nf))
}

func (s *benchStore) keep(nf *flow.NodeFence, err error) (*flow.NodeFence, error) {
	if err == nil {
		s.mu.Lock()
		s.last = nf
		s.mu.Unlock()
	}
	return nf, err
}

// written returns the last record written, nil when none was.
func (s *benchStore) written() *flow.NodeFence {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *benchStore) reset() {
	s.mu.Lock()
	s.last = nil
	s.mu.Unlock()
}

// isolated tells a record whose isolation is done and whose storage
// release is carried out.
func isolated(nf *flow.NodeFence) bool {
	return nf != nil && nf.Step == fence.StepIsolation && nf.Status == flow.StatusDone && nf.Isolated &&
		nf.Released == flow.ReleaseStorage
}

// powerFenced tells a record whose power management is done (the node
// verified off) and whose power release (the out-of-service taint) is
// carried out.
func powerFenced(nf *flow.NodeFence) bool {
	return nf != nil && nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone && nf.PoweredOff &&
		nf.Released == flow.ReleasePower
}

// BenchmarkNotReadyToPodsReleased is the controller's latency on a real
// API server: one node stops answering, and the timer runs from the Pass
// that sees it unresponsive (not ready for UnhealthyAfter, by a fake
// clock) until its NodeFence says
//
//   - step=isolation: isolation done (fc-off) and the storage release
//     carried out (one pass);
//   - step=power_management: power management done (pdu-off, after the
//     power delay, which the fake clock skips at once) and the
//     out-of-service taint on the Node (two passes).
//
// The controller has fencekube's Store, Health, ConfigSource and
// TaintPods (no Events) on informers started once; its devices are fake
// devices (fake://NAME) that switch at once, so the time is what the
// controller and the API server add: the NodeFence's create and status
// writes, the reads before each transition, the Node's read and update for
// the taint. Every iteration has a new node, created Ready and then set
// NotReady with an old lastTransitionTime, its own fence ConfigMaps, new
// devices and a new Controller; that set-up (which waits until the
// informers see the node and ConfigSource has parsed its ConfigMaps), the
// checks (the record read back, the devices' plugs, the taint) and the
// clean-up (the NodeFence forgotten, the Node and ConfigMaps deleted, the
// informers seeing it) are untimed. TaintPods' storage release only logs.
// Allocations are the process's: the informers' decoding of the watch
// events the writes cause is counted too.
func BenchmarkNotReadyToPodsReleased(b *testing.B) {
	c := kubetest.Shared(b)
	c.InstallCRD(b, crdPath)
	ctx := b.Context()
	ns := c.Namespace(b)
	prefix := kubetest.UniqueName(b)

	h, cfg := runAdapters(b, c, ns)
	s := fencekube.NewStore(c.Objects(), fencekube.StoreOptions{})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, w := range []interface{ WaitForSync(context.Context) error }{h, cfg} {
		if err := w.WaitForSync(wctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{"fc", "pdu"} {
		createConfigMap(b, c, ns, "fence-method-template-"+d, "template.properties",
			"name="+d+"\ndriver=fake\naddress=fake://"+prefix+"-"+d+"\nstonith_status_sleep=0\npower_timeout=1\n")
	}
	b.Cleanup(func() { fakedev.Forget(prefix + "-fc"); fakedev.Forget(prefix + "-pdu") })

	health := benchHealth{Health: h, prefix: prefix}
	store := &benchStore{Store: s, prefix: prefix}
	// The API server holds the first create of a custom resource for a
	// couple of seconds after its CRD is established (kubernetes#99199,
	// for HA consistency): a NodeFence made and forgotten here takes that
	// wait out of the first iteration.
	warm, err := s.Create(ctx, newRecord(prefix+"-warmup"))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Forget(ctx, warm); err != nil {
		b.Fatal(err)
	}
	benchWait(b, "the warm-up NodeFence gone", func() bool {
		recs, err := store.List(ctx)
		return err == nil && len(recs) == 0
	})
	n := 0
	for _, bc := range []struct {
		step fence.Step
		done func(*flow.NodeFence) bool
	}{
		{fence.StepIsolation, isolated},
		{fence.StepPowerManagement, powerFenced},
	} {
		b.Run("step="+bc.step.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				n++
				name := fmt.Sprintf("%s-%d", prefix, n)
				fc := fakedev.NewNamed(prefix+"-fc", fakedev.Options{Plugs: []string{"1"}})
				pdu := fakedev.NewNamed(prefix+"-pdu", fakedev.Options{Plugs: []string{"1"}})
				clock := fencetest.NewClock(t0.Add(2 * time.Minute))
				benchFenceable(b, c, ns, name, health, cfg)
				store.reset()
				ctl := &controller.Controller{
					Health: health, Store: store, Config: cfg,
					Pods: &fencekube.TaintPods{Client: c.Objects(), Now: clock.Now}, Now: clock.Now,
					Options: controller.Options{Identity: "bench", UnhealthyAfter: time.Minute,
						Flow: flow.Options{PowerDelay: 2 * time.Minute}},
				}
				b.StartTimer()

				for range 10 {
					if err := ctl.Pass(ctx); err != nil {
						b.Fatal(err)
					}
					ctl.Wait()
					nf := store.written()
					if bc.done(nf) {
						break
					}
					if isolated(nf) {
						clock.Add(2 * time.Minute) // the power delay
					}
				}

				b.StopTimer()
				nf, err := s.Get(ctx, name)
				if err != nil || !bc.done(nf) {
					b.Fatalf("%s: %s not reached after 10 passes: %+v (%v)", name, bc.step, nf, err)
				}
				if got := fc.Truth("1"); got != fence.StateOff {
					b.Fatalf("%s: fc plug %s, want off", name, got)
				}
				powered := fence.StateOn
				if bc.step == fence.StepPowerManagement {
					powered = fence.StateOff
				}
				if got := pdu.Truth("1"); got != powered {
					b.Fatalf("%s: pdu plug %s, want %s", name, got, powered)
				}
				nd, err := c.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if got := fencekube.HasOutOfServiceTaint(nd); got != (bc.step == fence.StepPowerManagement) {
					b.Fatalf("%s: out-of-service taint %v after %s", name, got, bc.step)
				}
				if err := s.Forget(ctx, nf); err != nil {
					b.Fatal(err)
				}
				benchRemove(b, c, ns, name, health, store)
				b.StartTimer()
			}
		})
	}
}

// benchMethods are the fence methods of a benchmark node, as method name,
// template, action.
var benchMethods = [][3]string{{"fc-off", "fc", "off"}, {"fc-on", "fc", "on"}, {"pdu-off", "pdu", "off"}, {"pdu-on", "pdu", "on"}}

// benchFenceable creates the fence ConfigMaps of the node name (isolation
// fc-off, power management pdu-off, recovery pdu-on fc-on) and the Node,
// Ready and then not ready since t0, and waits (30 s at most) until the
// informers of health and cfg see both.
func benchFenceable(b *testing.B, c *kubetest.Cluster, ns, name string, health benchHealth, cfg *fencekube.ConfigSource) {
	b.Helper()
	ctx := b.Context()
	for _, m := range benchMethods {
		createConfigMap(b, c, ns, "fence-method-"+m[0]+"-"+name, "method.properties",
			"template="+m[1]+"\nplug=1\naction="+m[2]+"\n")
	}
	createConfigMap(b, c, ns, "fence-config-"+name, "config.properties",
		"node_name="+name+"\nisolation=fc-off\npower_management=pdu-off\nrecovery=pdu-on fc-on\n")

	nodes := c.Client().CoreV1().Nodes()
	nd, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct {
		ready corev1.ConditionStatus
		since time.Time
	}{{corev1.ConditionTrue, t0.Add(-time.Hour)}, {corev1.ConditionFalse, t0}} {
		nd.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st.ready,
			LastTransitionTime: metav1.NewTime(st.since), LastHeartbeatTime: metav1.NewTime(st.since), Reason: "Bench"}}
		if nd, err = nodes.UpdateStatus(ctx, nd, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	benchWait(b, name+" not ready, with its configuration", func() bool {
		seen := false
		for _, n := range health.Nodes() {
			seen = seen || n.Name == name && !n.Ready && n.Since.Equal(t0)
		}
		conf, _ := cfg.Config(ctx)
		if conf == nil {
			return false
		}
		_, ok := conf.Node(name)
		return seen && ok
	})
}

// benchRemove deletes the Node and the ConfigMaps of the node name and
// waits (30 s at most) until the informers no longer hold the Node nor
// its NodeFence.
func benchRemove(b *testing.B, c *kubetest.Cluster, ns, name string, health benchHealth, store *benchStore) {
	b.Helper()
	ctx := b.Context()
	if err := c.Client().CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	cms := c.Client().CoreV1().ConfigMaps(ns)
	for _, m := range benchMethods {
		if err := cms.Delete(ctx, "fence-method-"+m[0]+"-"+name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, "fence-config-"+name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	benchWait(b, name+" gone", func() bool {
		recs, err := store.List(ctx)
		return err == nil && len(recs) == 0 && len(health.Nodes()) == 0
	})
}

// benchWait polls cond every millisecond until it holds, failing b after
// 30 s.
func benchWait(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func createConfigMap(b *testing.B, c *kubetest.Cluster, ns, name, key, body string) {
	b.Helper()
	_, err := c.Client().CoreV1().ConfigMaps(ns).Create(b.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: body}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSummarizeNode is the Node informer's transform, run on every
// Node event it receives (each kubelet's status update).
func BenchmarkSummarizeNode(b *testing.B) {
	n := node("w1", corev1.ConditionTrue, t0, map[string]string{"kubernetes.io/hostname": "w1", "node-role.kubernetes.io/worker": ""})
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeExternalIP, Address: "192.0.2.1"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fencekube.SummarizeNode(n); err != nil {
			b.Fatal(err)
		}
	}
}
