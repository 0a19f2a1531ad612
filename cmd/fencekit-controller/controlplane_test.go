package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// e2e is a whole control plane with kwok nodes, one in-process go-ipmi
// reference BMC per fenced node, tied to its node (when the BMC cuts the
// power, the node's kwok process dies; when it gives the power back, the
// node boots), and the fence controller of this program, as deployed.
type e2e struct {
	t   *testing.T
	cp  *kubetest.ControlPlane
	ns  string
	run *started

	mu   sync.Mutex
	bmcs map[string]*ipmisim.GoBMC
}

// e2eBoot is how long a simulated machine takes from power on to a kubelet
// that renews its lease.
const e2eBoot = 2 * time.Second

// e2eSpec describes an end-to-end set-up.
type e2eSpec struct {
	// groups maps a kwok group to its nodes; a group dies and comes back
	// as one.
	groups map[string][]string
	// labels maps a group to the labels of its nodes (none when absent).
	labels map[string]map[string]string
	// fenced are the nodes with a BMC and a fence configuration (one reboot
	// method through their BMC).
	fenced []string
	bmc    ipmisim.GoBMCOptions
	// policy is the controller's policy file (YAML); args are more flags.
	policy string
	args   []string
	// cmArgs are more flags of kube-controller-manager.
	cmArgs []string
	// crds are more CRDs installed before the controller starts.
	crds []string
	// dial, when set, makes the controller's connections to the API
	// server (rest.Config.Dial).
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// background marks a test that mostly waits out a fixed delay of a
	// component (the controller manager's 6-minute force detach): it runs
	// beside the e2e lane, not in it.
	background bool
}

// A lane runs its tests one at a time in the package's parallel phase,
// beside the background tests: e2eLane holds the tests with a control
// plane of their own, whose timing another's would squeeze on 2 cores.
// The tests on the shared API server stay sequential, before it, in their
// order: their storm guards and in-flight limits count every node and
// NodeFence of that cluster, what one test leaves the next one sees.
type lane chan struct{}

var e2eLane = make(lane, 1)

// enter makes t a parallel test that runs alone in l.
func (l lane) enter(t *testing.T) {
	t.Helper()
	t.Parallel()
	start := time.Now()
	select {
	case l <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal("the lane never freed")
	}
	// internal/testtimes reads this line: the wait is not the test's time.
	t.Logf("waited %v for its lane", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { <-l }) // the first cleanup registered: the last run
}

// startE2E starts the control plane, the nodes, the BMCs and the
// controller of spec.
func startE2E(t *testing.T, spec e2eSpec) *e2e {
	t.Helper()
	if !spec.background {
		e2eLane.enter(t)
	}
	groups, fenced, policy, args := spec.groups, spec.fenced, spec.policy, spec.args
	cp := kubetest.StartControlPlane(t, kubetest.ControlPlaneOptions{ExtraControllerManagerArgs: spec.cmArgs})
	ctx := t.Context()
	e := &e2e{t: t, cp: cp, bmcs: map[string]*ipmisim.GoBMC{}}
	cp.InstallCRD(t, crdPath)
	for _, p := range spec.crds {
		cp.InstallCRD(t, p)
	}
	e.ns = cp.Namespace(t)
	cfg := applyRBAC(t, cp.Cluster, e.ns, nil)
	admin := cp.Client()

	groupOf := map[string]string{}
	names := slices.Sorted(func(yield func(string) bool) {
		for g := range groups {
			if !yield(g) {
				return
			}
		}
	})
	for _, g := range names {
		require.NoError(t, cp.AddNodes(ctx, g, spec.labels[g], groups[g]...))
		for _, n := range groups[g] {
			groupOf[n] = g
		}
	}
	createConfigMap(t, admin, e.ns, "fence-method-template-bmc", "template.properties",
		"name=bmc\ndriver=ipmi\nusername="+ipmisim.DefaultUser+"\npassword="+ipmisim.DefaultPassword+"\naction=reboot\npower_timeout=5\n")
	for _, n := range fenced {
		bmc := ipmisim.StartGoBMC(t, spec.bmc)
		e.bmcs[n] = bmc
		tieMachine(t, cp, n, groupOf[n], bmc)
		createConfigMap(t, admin, e.ns, "fence-method-bmc-"+n, "method.properties", "template=bmc\naddress="+bmc.URL()+"\n")
		createConfigMap(t, admin, e.ns, "fence-config-"+n, "config.properties", "node_name="+n+"\npower_management=bmc\n")
	}
	for _, g := range names {
		for _, n := range groups[g] {
			kubetest.WaitNodeReady(t, admin, n, corev1.ConditionTrue, 60*time.Second)
		}
	}

	policyFile := writePolicy(t, policy)
	flags := []string{
		"--namespace=" + e.ns, "--identity=" + kubetest.UniqueName(t),
		"--leader-elect=true", "--leader-election-name=" + serviceAccount,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
		"--unhealthy-after=1s", "--interval=1s", "--power-delay=1s", "--poll-interval=500ms", "--max-polls=200",
		"--retry-backoff=500ms", "--job-timeout=20s", "--pod-treatment=taint", "--pods-timeout=60s",
		"--policy-file=" + policyFile, "--log-level=debug", "--sync-timeout=20s", "--shutdown-timeout=5s",
	}
	if spec.dial != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Dial = spec.dial
	}
	e.run = startRun(t, cfg, true, append(flags, args...)...)
	return e
}

// tieMachine makes node's machine follow its BMC: power off kills the kwok
// process of its group, power on starts it again after e2eBoot.
func tieMachine(t testing.TB, cp *kubetest.ControlPlane, node, group string, bmc *ipmisim.GoBMC) {
	changes := make(chan ipmisim.PowerChange, 64)
	bmc.OnPowerChange(func(c ipmisim.PowerChange) {
		select {
		case changes <- c:
		default:
			t.Errorf("%s: power changes pile up", node)
		}
	})
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-changes:
				if !c.On {
					_ = cp.StopNodes(group)
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(e2eBoot):
				}
				if bmc.Truth() != fence.StateOn {
					continue // switched off again while booting
				}
				if err := cp.StartNodes(group); err != nil {
					t.Errorf("%s: booting: %v", node, err)
				}
			}
		}
	}()
}

// record returns node's NodeFence, or nil.
func (e *e2e) record(node string) *flow.NodeFence { return newRecords(e.t, e.cp.Objects()).get(node) }

// rv reads a resource version as the number etcd made it. The API
// promises only opacity; this harness runs one etcd, whose revisions order
// every write of the cluster.
func rv(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	assert.NoError(t, err, "resource version %q", s) // not require: called from watch goroutines
	return n
}

// chainSeen is what the test saw of one node's chain, each step at the
// first resource version that showed it.
type chainSeen struct {
	fencedRV    uint64    // the NodeFence first carried FencedAt
	fencedAt    time.Time // its FencedAt
	taintRV     uint64    // the node first carried the out-of-service taint
	untaintRV   uint64    // the node lost it again
	deletingRV  uint64    // the old pod got its deletionTimestamp (or was force-deleted)
	deletedRV   uint64    // the old pod was removed
	deletedAt   time.Time // when the test saw it removed
	newPodRV    uint64    // a pod of the same name with another UID appeared
	deletingAt  time.Time // when the old pod's deletion was asked (seconds)
	newPodNode  string
	newPodReady time.Time // when the test saw the new pod Running
}

func (s chainSeen) String() string {
	return fmt.Sprintf("fenced rv %d (at %s), taint rv %d, old pod deleting rv %d (asked at %s), deleted rv %d, new pod rv %d (Running on %q), taint removed rv %d",
		s.fencedRV, s.fencedAt.Format(time.RFC3339Nano), s.taintRV, s.deletingRV, s.deletingAt.Format(time.RFC3339), s.deletedRV,
		s.newPodRV, s.newPodNode, s.untaintRV)
}

// chainLog collects a chainSeen from several watches.
type chainLog struct {
	mu   sync.Mutex
	seen chainSeen
}

// get returns what was seen so far.
func (l *chainLog) get() chainSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen
}

func (l *chainLog) String() string { return l.get().String() }

// watchChain records, from watches opened before the node dies, the
// transitions of node's NodeFence, of node, and of the pod ns/pod (UID old).
func (e *e2e) watchChain(node, ns, pod string, old types.UID) *chainLog {
	t := e.t
	ctx := t.Context()
	log := &chainLog{}
	c := e.cp.Client()

	nfw, err := e.cp.Dynamic().Resource(fencekube.NodeFenceResource).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + node})
	require.NoError(t, err)
	nw, err := c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
	require.NoError(t, err)
	pw, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, w := range []watch.Interface{nfw, nw, pw} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					log.see(t, ev, old)
				}
			}
		}()
	}
	t.Cleanup(wg.Wait)
	return log
}

func (l *chainLog) see(t *testing.T, ev watch.Event, old types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := &l.seen
	first := func(dst *uint64, r string) {
		if *dst == 0 {
			*dst = rv(t, r)
		}
	}
	switch o := ev.Object.(type) {
	case *unstructured.Unstructured:
		if s, ok, _ := unstructured.NestedString(o.Object, "status", "fencedAt"); ok && s != "" && v.fencedRV == 0 {
			v.fencedRV = rv(t, o.GetResourceVersion())
			v.fencedAt, _ = time.Parse(time.RFC3339Nano, s)
		}
	case *corev1.Node:
		if fencekube.HasOutOfServiceTaint(o) {
			first(&v.taintRV, o.ResourceVersion)
		} else if v.taintRV != 0 {
			first(&v.untaintRV, o.ResourceVersion)
		}
	case *corev1.Pod:
		switch {
		case o.UID == old && ev.Type == watch.Deleted:
			if v.deletingRV == 0 { // force-deleted: no step between
				v.deletingAt = time.Now().Truncate(time.Second)
				first(&v.deletingRV, o.ResourceVersion)
			}
			first(&v.deletedRV, o.ResourceVersion)
			if v.deletedAt.IsZero() {
				v.deletedAt = time.Now()
			}
		case o.UID == old && o.DeletionTimestamp != nil:
			if v.deletingRV == 0 {
				// The deletion timestamp is when the grace period ends;
				// the deletion was asked that long before.
				v.deletingAt = o.DeletionTimestamp.Time
				if g := o.DeletionGracePeriodSeconds; g != nil {
					v.deletingAt = v.deletingAt.Add(-time.Duration(*g) * time.Second)
				}
			}
			first(&v.deletingRV, o.ResourceVersion)
		case o.UID != old && ev.Type != watch.Deleted:
			first(&v.newPodRV, o.ResourceVersion)
			if o.Status.Phase == corev1.PodRunning && v.newPodReady.IsZero() {
				v.newPodReady, v.newPodNode = time.Now(), o.Spec.NodeName
			}
		}
	}
}

// TestControlPlaneNonGracefulShutdownChain is the chain of the Kubernetes
// non-graceful node shutdown design (KEP-2268) on a real control plane: a
// StatefulSet of one replica runs on node A; node A dies (its kwok process
// is killed: no lease, no kubelet); the node lifecycle controller marks it
// Ready=Unknown; fencekit powers it off through its BMC and reads it back
// off; then, and only then, it force-deletes the pod; the StatefulSet
// controller makes a new one; then comes the out-of-service taint (after
// the new pod: the controller manager's taint eviction deletes by name, and
// would delete the new pod in the old one's place), which has the
// controller manager let go of the node's volumes; the scheduler puts the
// new pod on another node; kwok runs it. fencekit switches node A on again once its
// pods are gone; A boots, turns Ready, and the taint is removed. The order
// is asserted from the objects' resource versions (one etcd orders every
// write) and the BMC's power log. The controller's pass comes only every
// 30 s, a backstop: each step follows the event (or the due time) that
// allows it, the power-on within a second of the later of the pod's
// deletion, which a watch of the node's pods tells (it used to be polled
// every 2 s), and the end of the reboot's minimum off.
func TestControlPlaneNonGracefulShutdownChain(t *testing.T) {
	a, b, c := "node-a", "node-b", "node-c"
	e := startE2E(t, e2eSpec{
		groups: map[string][]string{"a": {a}, "b": {b}, "c": {c}},
		fenced: []string{a, b, c},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: 5s\nmaxInFlight: 2\n",
		args:   []string{"--interval=30s"},
	})
	ctx := t.Context()
	admin := e.cp.Client()
	ns := e.cp.Namespace(t)

	// The pod goes to node A: the others are cordoned until it runs there.
	old := kubetest.RunStatefulSetOn(t, admin, ns, "db", a, b, c)
	assert.Nil(t, e.record(a), "a Ready node has no NodeFence")
	log := e.watchChain(a, ns, "db-0", old.UID)

	// Node A dies.
	killed := time.Now()
	require.NoError(t, e.cp.StopNodes("a"))
	kubetest.WaitNodeReady(t, admin, a, corev1.ConditionUnknown, 40*time.Second)
	unknown := time.Since(killed)

	// The new pod runs elsewhere.
	fresh := kubetest.WaitPodRunning(t, admin, ns, "db-0", old.UID, 90*time.Second)
	running := time.Since(killed)
	assert.NotEqual(t, a, fresh.Spec.NodeName, "the new pod runs on another node")

	// Node A is back, its record closed, its taint gone.
	var nf *flow.NodeFence
	if !assert.Eventually(t, func() bool {
		nf = e.record(a)
		return nf != nil && nf.Closed() && nf.Released == flow.ReleaseNone
	}, 90*time.Second, 100*time.Millisecond) {
		t.Fatalf("not recovered: %+v\n%s", e.record(a), log)
	}
	n, err := admin.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, fencekube.HasOutOfServiceTaint(n), "the taint removed after recovery")
	back := time.Since(killed)

	// The order, from the cluster's own record and the BMC's log.
	power := e.bmcs[a].PowerLog()
	require.GreaterOrEqual(t, len(power), 2, "the BMC switched the power: %+v", power)
	require.False(t, power[0].On, "first change: off")
	require.True(t, power[1].On, "then on")
	require.Eventually(t, func() bool {
		s := log.get()
		return s.untaintRV != 0 && s.deletedRV != 0 && s.newPodRV != 0
	}, 10*time.Second, 50*time.Millisecond, "%s", log)
	seen := log.get()
	t.Logf("chain: %s", seen)
	assert.False(t, seen.fencedAt.Before(power[0].At), "fenced at %v, not before the BMC cut the power at %v", seen.fencedAt, power[0].At)
	assert.Less(t, seen.fencedRV, seen.deletingRV, "the record said fenced before the pod's deletion")
	assert.False(t, seen.deletingAt.Before(power[0].At.Truncate(time.Second)), "deleted (%v) after the power went (%v)", seen.deletingAt, power[0].At)
	assert.LessOrEqual(t, seen.deletingRV, seen.deletedRV)
	assert.Less(t, seen.deletedRV, seen.newPodRV, "the new pod once the old one is gone")
	assert.Less(t, seen.newPodRV, seen.taintRV, "the taint once the StatefulSet made the new pod")
	assert.True(t, power[1].At.After(power[0].At))
	assert.Less(t, seen.deletedRV, seen.untaintRV, "the taint stays until the pod is gone")
	// The on is due once the pod is gone and the off has been held for
	// the reboot's minimum (fence.DefaultMinOff), whichever comes last.
	due := seen.deletedAt
	if held := seen.fencedAt.Add(fence.DefaultMinOff); held.After(due) {
		due = held
	}
	onAfter := power[1].At.Sub(due)
	assert.Less(t, onAfter, time.Second, "switched on as it came due (the on %v after the pod's deletion was seen and the off held %v)", onAfter, fence.DefaultMinOff)
	events := eventCounts(t, admin, a)
	for _, r := range []string{"FencePowerFenced", "FencePodsReleased", "FencePodsRestored"} {
		assert.NotZero(t, events[r], "event %s on node A: %v", r, events)
	}
	t.Logf("node A killed; Ready=Unknown after %v; new pod Running on %s after %v; switched on %v after it came due (its pod gone, its off held); node A back, untainted, after %v",
		unknown.Round(100*time.Millisecond), fresh.Spec.NodeName, running.Round(100*time.Millisecond), onAfter.Round(time.Millisecond), back.Round(100*time.Millisecond))
}

// waitRecord waits until node's NodeFence satisfies ok, and fails t after
// d with the last record.
func (e *e2e) waitRecord(node string, d time.Duration, what string, ok func(*flow.NodeFence) bool) *flow.NodeFence {
	e.t.Helper()
	return newRecords(e.t, e.cp.Objects()).wait(node, what, d, ok)
}

// stormUnhealthyAfter is --unhealthy-after in the storm tests: longer than
// the spread over which the nodes of one failure turn not ready, so that
// the guards count all of them before the first is due. The nodes are
// killed together, but each kwok process renews its leases on its own
// phase (every 2 s, a quarter of kubetest's 8 s node lease), and the node
// lifecycle controller looks every second: the last of them turns not
// ready up to about 3 s after the first, more on a loaded machine. With 2 s,
// the first of zone-a's three was fenced while the third still counted
// ready (2 of 4, under the 55 %), about one run in three. A real cluster's
// spread is the kubelet's 10 s renewal plus the 5 s monitor period, and
// the controller's default --unhealthy-after is a minute.
const stormUnhealthyAfter = 6 * time.Second

// TestControlPlaneStorm: four of six nodes stop at once (their kwok
// processes killed together), over the storm guard's 50 %. Nothing is
// fenced: every BMC keeps its power, each refusal is in the node's record
// and in a FenceRefused event. Two of the four come back: the storm is
// over, and once its cooldown has passed the two still dead are fenced.
func TestControlPlaneStorm(t *testing.T) {
	groups := map[string][]string{}
	var nodes []string
	for i := 1; i <= 6; i++ {
		n := fmt.Sprintf("storm-%d", i)
		groups[n] = []string{n}
		nodes = append(nodes, n)
	}
	const cooldown = 8 * time.Second
	e := startE2E(t, e2eSpec{
		groups: groups,
		fenced: nodes,
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: " + cooldown.String() + "\nmaxInFlight: 6\n",
		args:   []string{"--unhealthy-after=" + stormUnhealthyAfter.String()},
	})
	admin := e.cp.Client()
	dead := nodes[:4]
	for _, n := range dead {
		require.NoError(t, e.cp.StopNodes(n))
	}
	for _, n := range dead {
		kubetest.WaitNodeReady(t, admin, n, corev1.ConditionUnknown, 40*time.Second)
	}
	for _, n := range dead {
		nf := e.waitRecord(n, 30*time.Second, "refused", func(nf *flow.NodeFence) bool {
			return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by")
		})
		assert.Contains(t, nf.Message, "4 of 6")
		require.Eventually(t, func() bool { return eventCounts(t, admin, n)["FenceRefused"] > 0 },
			10*time.Second, 100*time.Millisecond, "%s: a FenceRefused event", n)
	}
	// Refused for a while, as long as the storm lasts.
	time.Sleep(3 * time.Second)
	for _, n := range nodes {
		assert.Empty(t, e.bmcs[n].PowerLog(), "%s: nothing switched during the storm", n)
		if nf := e.record(n); nf != nil {
			assert.True(t, nf.FencedAt.IsZero(), "%s: not fenced during the storm", n)
		}
	}

	// Two come back: once the first is Ready, three of six are down, no
	// longer over the bound (strictly over 50 %): the storm is over.
	for _, n := range dead[2:] {
		require.NoError(t, e.cp.StartNodes(n))
	}
	require.Eventually(t, func() bool {
		for _, n := range dead[2:] {
			nd, err := admin.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
			if err == nil && readyOf(nd) == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "one of the two back")
	over := time.Now()
	for _, n := range dead[2:] {
		kubetest.WaitNodeReady(t, admin, n, corev1.ConditionTrue, 30*time.Second)
	}
	for _, n := range dead[:2] {
		nf := e.waitRecord(n, 60*time.Second, "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
		// The guard saw the storm last at its pass before the nodes came
		// back (passes every second here).
		assert.False(t, nf.FencedAt.Before(over.Add(cooldown-2*time.Second)),
			"%s fenced at %v, storm over at %v, cooldown %v", n, nf.FencedAt, over, cooldown)
		t.Logf("%s fenced %v after the storm ended (cooldown %v)", n, nf.FencedAt.Sub(over).Round(100*time.Millisecond), cooldown)
		assert.NotEmpty(t, e.bmcs[n].PowerLog(), "%s: switched by its BMC", n)
	}
	for _, n := range dead[2:] {
		assert.Empty(t, e.bmcs[n].PowerLog(), "%s came back by itself: never switched", n)
	}
	// The two fenced nodes are rebooted and recovered.
	for _, n := range dead[:2] {
		e.waitRecord(n, 60*time.Second, "recovered", func(nf *flow.NodeFence) bool { return nf.Closed() })
	}
}

// TestControlPlaneZoneStorm: three of the four nodes of zone-a stop, and
// one of the six of zone-b: 4 of 10 nodes, under the cluster-wide bound of
// 50 %, but 75 % of zone-a, over the zone storm guard's 55 % (its
// defaults). zone-a's nodes are refused, each record naming the zone;
// zone-b's node is fenced.
func TestControlPlaneZoneStorm(t *testing.T) {
	zone := func(z string) map[string]string { return map[string]string{"topology.kubernetes.io/zone": z} }
	spec := e2eSpec{
		groups: map[string][]string{"rest-a": {"a-4"}, "rest-b": {"b-2", "b-3", "b-4", "b-5", "b-6"}},
		labels: map[string]map[string]string{"rest-a": zone("zone-a"), "rest-b": zone("zone-b")},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\nmaxInFlight: 4\n",
		args:   []string{"--unhealthy-after=" + stormUnhealthyAfter.String()},
	}
	dead := []string{"a-1", "a-2", "a-3", "b-1"}
	for _, n := range dead {
		spec.groups[n] = []string{n}
		spec.labels[n] = zone("zone-" + n[:1])
	}
	spec.fenced = dead
	e := startE2E(t, spec)
	admin := e.cp.Client()
	for _, n := range dead {
		require.NoError(t, e.cp.StopNodes(n))
	}
	nf := e.waitRecord("b-1", 60*time.Second, "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	t.Logf("b-1 (zone-b): fenced %v", nf.FencedAt.Format(time.TimeOnly))
	for _, n := range dead[:3] {
		nf := e.waitRecord(n, 30*time.Second, "refused by the zone guard", func(nf *flow.NodeFence) bool {
			return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "zone-storm-guard")
		})
		assert.Contains(t, nf.Message, "of topology.kubernetes.io/zone=zone-a unresponsive", n)
		require.Eventually(t, func() bool { return eventCounts(t, admin, n)["FenceRefused"] > 0 },
			10*time.Second, 100*time.Millisecond, "%s: a FenceRefused event", n)
	}
	time.Sleep(2 * time.Second)
	for _, n := range dead[:3] {
		assert.Empty(t, e.bmcs[n].PowerLog(), "%s: nothing switched in zone-a's storm", n)
	}
	assert.NotEmpty(t, e.bmcs["b-1"].PowerLog(), "b-1: switched by its BMC")
}

// TestControlPlaneFlappingNode: with --healthy-delay=20s, a node that dies
// is held (the taint fencekit.io/fencing:NoSchedule) and fenced (its BMC
// reboots it), boots (its out-of-service taint removed: it is ready, still
// held), is ready for a few seconds and dies again: it takes no pods in
// between, and it is fenced again; left up, its hold ends once it has been
// ready for 20 s.
func TestControlPlaneFlappingNode(t *testing.T) {
	nodes := []string{"flap-1", "flap-2", "flap-3"}
	groups := map[string][]string{}
	for _, n := range nodes {
		groups[n] = []string{n}
	}
	const delay = 20 * time.Second
	e := startE2E(t, e2eSpec{groups: groups, fenced: nodes[:1],
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n", args: []string{"--unhealthy-after=2s", "--healthy-delay=" + delay.String()}})
	admin := e.cp.Client()
	n := nodes[0]
	taints := func() (outOfService, held bool) {
		nd, err := admin.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		require.NoError(t, err)
		return fencekube.HasOutOfServiceTaint(nd), fencekube.HasHoldTaint(nd)
	}

	require.NoError(t, e.cp.StopNodes(n))
	e.waitRecord(n, 60*time.Second, "fenced", func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	_, held := taints()
	assert.True(t, held, "held (NoSchedule) from the fencing's admission")
	// The BMC's reboot boots the machine: ready again, recovered, the
	// out-of-service taint gone (the node is ready), still held.
	kubetest.WaitNodeReady(t, admin, n, corev1.ConditionTrue, 60*time.Second)
	e.waitRecord(n, 30*time.Second, "recovered, held", func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepRecovery && strings.Contains(nf.Message, "it takes pods again once it has been ready for 20s") && !nf.Restoring
	})
	oos, held := taints()
	assert.False(t, oos, "no out-of-service taint on a ready node")
	assert.True(t, held, "held during the healthy delay")
	// It dies again, well within the delay.
	require.NoError(t, e.cp.StopNodes(n))
	e.waitRecord(n, 60*time.Second, "fenced again, its pods released", func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && !nf.FencedAt.IsZero() && nf.Released == flow.ReleasePower
	})
	_, held = taints()
	assert.True(t, held, "held all along: it took no pods in between")
	offs := 0
	for _, c := range e.bmcs[n].PowerLog() {
		if !c.On {
			offs++
		}
	}
	assert.GreaterOrEqual(t, offs, 2, "fenced twice")

	// Left up: it takes pods again once it has been ready for the delay.
	kubetest.WaitNodeReady(t, admin, n, corev1.ConditionTrue, 60*time.Second)
	readyAt := time.Now()
	e.waitRecord(n, 60*time.Second, "closed", func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.GreaterOrEqual(t, time.Since(readyAt), delay-2*time.Second, "not before the healthy delay")
	oos, held = taints()
	assert.False(t, oos)
	assert.False(t, held, "the hold ends with the record")
	assert.Positive(t, eventCounts(t, admin, n)["FencePodsRestored"])
}

// TestControlPlaneRack: ten of a hundred nodes stop at once, a rack that
// loses its power (below the storm guard's bound). All ten are fenced,
// in parallel: the BMCs answer slowly (as real ones do: every round trip
// takes 30 ms here), so that one fencing at a time would take ten times
// as long as all of them together.
func TestControlPlaneRack(t *testing.T) {
	if testing.Short() {
		t.Skip("100 nodes: not in -short")
	}
	groups := map[string][]string{}
	var rack, rest []string
	for i := 1; i <= 10; i++ {
		n := fmt.Sprintf("rack-%02d", i)
		groups[n] = []string{n}
		rack = append(rack, n)
	}
	for i := 1; i <= 90; i++ {
		rest = append(rest, fmt.Sprintf("node-%02d", i))
	}
	groups["rest"] = rest
	e := startE2E(t, e2eSpec{
		groups: groups,
		fenced: rack,
		bmc:    ipmisim.GoBMCOptions{ReplyDelay: 30 * time.Millisecond},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\n  cooldown: 1m\nmaxInFlight: 10\n",
		args:   []string{"--unhealthy-after=2s"},
	})
	for _, n := range rack {
		require.NoError(t, e.cp.StopNodes(n))
	}
	killed := time.Now()
	// Power fenced: its history says so. FencedAt alone is no condition
	// to wait on here: a rack node boots as soon as it is switched on,
	// and its recovery clears FencedAt; waiting on the ten in turn under
	// the suite's load, one was fenced and back before its turn came.
	took := map[string]time.Duration{}
	for _, n := range rack {
		e.waitRecord(n, 90*time.Second, "fenced", func(nf *flow.NodeFence) bool {
			var start time.Time
			for _, tr := range nf.History {
				switch {
				case tr.Step == fence.StepPowerManagement && tr.Status == flow.StatusRunning:
					start = tr.Time
				case tr.Step == fence.StepPowerManagement && tr.Status == flow.StatusDone && !start.IsZero():
					took[n] = tr.Time.Sub(start)
					return true
				}
			}
			return false
		})
	}
	// How many were between their power off and their power on at once.
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	var first, last time.Time
	var each time.Duration
	for _, n := range rack {
		log := e.bmcs[n].PowerLog()
		require.NotEmpty(t, log, "%s: switched off", n)
		require.False(t, log[0].On)
		off := log[0].At
		on := time.Now()
		if len(log) > 1 {
			on = log[1].At
		}
		edges = append(edges, edge{off, 1}, edge{on, -1})
		if first.IsZero() || off.Before(first) {
			first = off
		}
		if off.After(last) {
			last = off
		}
		each = max(each, took[n])
	}
	slices.SortFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	most, cur := 0, 0
	for _, ed := range edges {
		cur += ed.d
		most = max(most, cur)
	}
	t.Logf("10 nodes of 100 stopped: first power off %v after, last %v after; at most %d off at once; one fence took up to %v",
		first.Sub(killed).Round(100*time.Millisecond), last.Sub(killed).Round(100*time.Millisecond), most, each.Round(time.Millisecond))
	assert.Greater(t, most, 1, "fenced in parallel")
	for _, n := range rack {
		assert.Zero(t, eventCounts(t, e.cp.Client(), n)["FenceRefused"], "%s: admitted at the first asking", n)
	}
	for _, n := range rest {
		if nf := e.record(n); nf != nil {
			t.Errorf("%s: a healthy node has a NodeFence: %+v", n, nf)
		}
	}
	for _, n := range rack {
		e.waitRecord(n, 60*time.Second, "recovered", func(nf *flow.NodeFence) bool { return nf.Closed() })
	}
}

// readyOf returns the status of the node's Ready condition ("" without
// one).
func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
