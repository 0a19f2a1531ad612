package teardownkube_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/etcdtest"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/etcdv3"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// End-to-end tests: a whole teardown plan run by teardown.Executor over
// real parts. The Kubernetes side is teardownkube on the shared API server;
// etcd is a real three-member cluster in-process (etcdv3 over
// internal/etcdtest) whose members are named after nodes, one of them the
// node torn down; power goes through fence levels of in-memory fence
// devices (drivers/fake); only the provisioner is a fake
// (teardowntest.Provisioner).
//
// With no kubelet, a pod only leaves when evicted with a grace period of
// zero: its own terminationGracePeriodSeconds (0 here) and a drain grace
// period of zero, which a request gets from drain-node-timeout=1 alone
// (Timeouts.WithDefaults gives half of it, rounded down to whole seconds).
// Nothing renews the node's Lease unless a test runs a kubelet
// (startKubelet), so shutdown-kubelet finds it quiet and waits
// KubeletStale.

// e2e timings: short polls, a short kubelet staleness.
const (
	e2ePoll         = 50 * time.Millisecond
	e2eEtcdPoll     = 200 * time.Millisecond
	e2eKubeletStale = time.Second
	e2eRenewEvery   = 100 * time.Millisecond
)

// The labels a deployment puts on a control-plane node, beside the
// kubelet's own: all of them are cleared by clear-labels.
var deploymentLabels = map[string]string{
	"openstack-control-plane": "enabled",
	"openstack-nova-compute":  "enabled",
	"ceph-mon":                "enabled",
	"ceph-osd":                "enabled",
	"kubernetes-apiserver":    "enabled",
	"kubernetes-etcd":         "enabled",
	"calico-etcd":             "enabled",
	"ucp-control-plane":       "enabled",
}

// nodeAddress is the node's InternalIP. It must not be 127.0.0.1: every
// etcd member listens there, and remove-etcd takes a member whose URL's
// host is one of the node's addresses for one on the node.
const nodeAddress = "192.0.2.13"

// site is one end-to-end test's world.
type site struct {
	*kube
	etcd   *etcdtest.Cluster
	peers  []string // the other etcd members, named after other nodes
	prov   *teardowntest.Provisioner
	bmc    *fake.Device // level 1: unreachable
	pduA   *fake.Device // level 2, with pduB: the node's two power feeds
	pduB   *fake.Device
	x      *teardown.Executor
	events *eventLog
	query  url.Values // the request's parameters, as the teardown design's API gets them
}

// newSite starts the etcd cluster, creates the node with its Lease and the
// pods bound to it (web-1, web-2 of a ReplicaSet, agent-1 of a DaemonSet),
// and builds the executor.
func newSite(t *testing.T) *site {
	t.Helper()
	c := kubetest.Shared(t)
	node := kubetest.UniqueName(t)
	s := &site{
		kube:  &kube{t: t, cs: c.Client(), ns: c.Namespace(t), node: node},
		peers: []string{kubetest.UniqueName(t), kubetest.UniqueName(t)},
		prov:  &teardowntest.Provisioner{},
		bmc:   fake.New(fake.Options{Plugs: []string{""}}),
		pduA:  fake.New(fake.Options{}),
		pduB:  fake.New(fake.Options{}),
	}
	// etcd first: it refuses a removal until its members have been
	// connected for 5 s (its strict reconfiguration check), and
	// remove-etcd retries until then.
	s.etcd = etcdtest.StartNamed(t, append([]string{node}, s.peers...)...)
	s.bmc.Inject(fake.Fault{Kind: fake.Down})

	s.createDeployedNode()
	for _, p := range s.peers {
		s.createNode(p)
	}
	rs := s.controller("ReplicaSet", "web")
	ds := s.controller("DaemonSet", "agent")
	s.ownedPod("ReplicaSet", "web", rs, "web-1")
	s.ownedPod("ReplicaSet", "web", rs, "web-2")
	s.ownedPod("DaemonSet", "agent", ds, "agent-1")

	ec, err := etcdv3.New(s.etcd.Endpoints(), etcdv3.Options{DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { ec.Close() })
	cluster, logs := s.cluster(teardownkube.Options{EvictionRetryDelay: 100 * time.Millisecond})
	s.events = &eventLog{}
	s.x = &teardown.Executor{
		Cluster:     cluster,
		Etcd:        map[string]teardown.Etcd{"kubernetes": ec},
		Provisioner: s.prov,
		Power:       s.levels,
		Revisions: teardown.NewMemoryRevisions(
			teardown.Revision{ID: 1, Committed: true, Tags: []teardown.Tag{teardown.SiteActionTag(true, "deploy_site-1")}},
		),
		EtcdPoll:        e2eEtcdPoll,
		Poll:            e2ePoll,
		KubeletStale:    e2eKubeletStale,
		EtcdCallTimeout: 2 * time.Second,
		Logger:          logs.logger(),
		Observer:        s.events.record,
	}
	s.query = url.Values{
		teardown.ParamDrainTimeout:             {"1"}, // grace period 0: see above
		teardown.ParamClearLabelsTimeout:       {"10"},
		teardown.ParamRemoveEtcdTimeout:        {"30"},
		teardown.ParamEtcdReadyTimeout:         {"10"},
		teardown.ParamShutdownKubeletTimeout:   {"10"},
		teardown.ParamDestroyNodeTimeout:       {"10"},
		teardown.ParamPowerOffTimeout:          {"10"},
		teardown.ParamReleaseNodeTimeout:       {"10"},
		teardown.ParamRemoveFromClusterTimeout: {"10"},
		teardown.ParamTargetRevision:           {"successful-site-action"},
	}
	return s
}

// createDeployedNode creates the node as a deployment leaves it: the
// kubelet's labels and the deployment's, an InternalIP and a Hostname
// address, a Ready condition, and a Lease the kubelet renewed.
func (s *site) createDeployedNode() {
	s.t.Helper()
	now := time.Now().UTC()
	n := newNode(s.node, corev1.ConditionTrue, now.Truncate(time.Second))
	for k, v := range map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux"} {
		n.Labels[k] = v
	}
	for k, v := range deploymentLabels {
		n.Labels[k] = v
	}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: nodeAddress},
		{Type: corev1.NodeHostName, Address: s.node},
	}
	created, err := s.cs.CoreV1().Nodes().Create(s.ctx(), n, metav1.CreateOptions{})
	require.NoError(s.t, err)
	created.Status = n.Status
	_, err = s.cs.CoreV1().Nodes().UpdateStatus(s.ctx(), created, metav1.UpdateOptions{})
	require.NoError(s.t, err)

	_, err = s.cs.CoreV1().Namespaces().Create(s.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(s.t, err)
	}
	_, err = s.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(s.ctx(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: s.node},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(s.node), LeaseDurationSeconds: ptr(int32(40)),
			RenewTime: &metav1.MicroTime{Time: now}},
	}, metav1.CreateOptions{})
	require.NoError(s.t, err)
}

// levels are the node's fence levels: its BMC (unreachable), then its two
// PDU feeds, plug 3 of each.
func (s *site) levels(_ context.Context, node string) ([]fence.Level, error) {
	opts := fence.Options{PollInterval: 10 * time.Millisecond, PowerTimeout: 2 * time.Second}
	return []fence.Level{
		{Methods: []*fence.Method{{Name: "ipmi", Node: node, Driver: "fake", Device: s.bmc, Options: opts}}},
		{Methods: []*fence.Method{
			{Name: "pdu-a-off", Node: node, Driver: "fake", Device: s.pduA, Plug: "3", Options: opts},
			{Name: "pdu-b-off", Node: node, Driver: "fake", Device: s.pduB, Plug: "3", Options: opts},
		}},
	}, nil
}

// request parses the site's query, as the teardown design's API would.
func (s *site) request() teardown.Request {
	s.t.Helper()
	req, err := teardown.ParseRequest(s.node, s.query)
	require.NoError(s.t, err)
	return req
}

// run plans the request and runs the plan, logging the report.
func (s *site) run(req teardown.Request) (*teardown.Plan, *teardown.Report) {
	s.t.Helper()
	p, err := s.x.Plan(s.ctx(), req)
	require.NoError(s.t, err)
	require.Equal(s.t, 1, p.Revision)
	return p, s.runPlan(p)
}

// runPlan runs a plan, logging the report.
func (s *site) runPlan(p *teardown.Plan) *teardown.Report {
	s.t.Helper()
	rep := s.x.Run(s.ctx(), p)
	s.t.Logf("teardown of %s in %v:\n%s", s.node, rep.Duration.Round(time.Millisecond), rep)
	return rep
}

// etcdMembers lists the etcd members' names through a client of its own.
func (s *site) etcdMembers() []string {
	s.t.Helper()
	cli, err := s.etcd.NewClient()
	require.NoError(s.t, err)
	defer cli.Close()
	resp, err := cli.MemberList(s.ctx())
	require.NoError(s.t, err)
	var out []string
	for _, m := range resp.Members {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

// checkTornDown checks the world after a complete teardown: the node's
// etcd member removed and stopped, the other two healthy, the node wiped,
// powered off and deleted, its ReplicaSet pods gone.
func (s *site) checkTornDown() {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.etcd.Member(s.node).WaitStopped(ctx), "a removed member stops")
	assert.Equal(t, slices.Sorted(slices.Values(s.peers)), s.etcdMembers())
	ms, err := s.x.Etcd["kubernetes"].Members(ctx)
	require.NoError(t, err)
	for _, m := range ms {
		assert.NoError(t, s.x.Etcd["kubernetes"].MemberHealth(ctx, m), "member %s", m.Name)
	}

	opts, ok := s.prov.DestroyedWith(s.node)
	assert.True(t, ok, "destroyed")
	assert.Equal(t, teardown.DestroyOptions{Wipe: teardown.WipeAll, Revision: 1}, opts)
	assert.True(t, s.prov.Released(s.node))
	assert.Equal(t, fence.StateOff, s.pduA.Truth("3"))
	assert.Equal(t, fence.StateOff, s.pduB.Truth("3"))
	assert.Equal(t, fence.StateOn, s.pduA.Truth("2"), "only the node's plug")

	_, err = s.cs.CoreV1().Nodes().Get(s.ctx(), s.node, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "Node deleted: %v", err)
	assert.Nil(t, s.getPod("web-1"))
	assert.Nil(t, s.getPod("web-2"))
	assert.NotNil(t, s.getPod("agent-1"), "DaemonSet pods stay (nothing collects them here)")
}

// stepsOf returns the outcome of every step, by name.
func stepsOf(rep *teardown.Report) map[string]teardown.Outcome {
	out := map[string]teardown.Outcome{}
	for _, s := range rep.Steps {
		out[s.Step.Name()] = s.Outcome
	}
	return out
}

// allSteps maps every step to the outcome o, but those given in except.
func allSteps(o teardown.Outcome, except map[string]teardown.Outcome) map[string]teardown.Outcome {
	out := map[string]teardown.Outcome{}
	for _, k := range []string{"drain", "clear-labels", "remove-etcd", "etcd-ready", "shutdown-kubelet",
		"destroy-node", "power-off", "release-node", "remove-from-cluster"} {
		out[k] = o
	}
	for k, v := range except {
		out[k] = v
	}
	return out
}

// message returns the message of the step named name.
func message(rep *teardown.Report, name string) string {
	for _, s := range rep.Steps {
		if s.Step.Name() == name {
			return s.Message
		}
	}
	return ""
}

// The whole teardown of a node whose kubelet is already gone: every step
// Done, 200 Success. The same plan run again after the Node is gone
// changes nothing and succeeds too.
func TestE2ETeardown(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	p, rep := s.run(s.request())
	require.NoError(t, rep.Err())
	require.True(t, rep.Succeeded())
	assert.Equal(t, allSteps(teardown.Done, nil), stepsOf(rep))

	st := rep.Status()
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, teardown.ReasonSuccess, st.Reason)
	assert.Equal(t, "Success", st.Status)
	assert.Equal(t, "node "+s.node+" torn down: 9 done", st.Message)
	assert.Zero(t, st.Details.ErrorCount)

	keys := slices.Sorted(maps.Keys(deploymentLabels))
	assert.Equal(t, "cordoned; 2 pods evicted or deleted", message(rep, "drain"))
	assert.Equal(t, "removed the labels "+strings.Join(keys, ", ")+"; no pod terminating", message(rep, "clear-labels"),
		"the kubelet's own labels stay")
	assert.Contains(t, message(rep, "remove-etcd"), "removed kubernetes/"+s.node+" (id ")
	assert.Equal(t, "healthy members, not counting node "+s.node+": kubernetes 2/2", message(rep, "etcd-ready"))
	assert.Equal(t, fmt.Sprintf("labelled %s=%s; the kubelet has not reported for %v", teardown.DecommissionLabel,
		teardown.DecommissionValue, e2eKubeletStale), message(rep, "shutdown-kubelet"))
	assert.Equal(t, "powered off, confirmed by pdu-a-off, pdu-b-off (level 2)", message(rep, "power-off"))
	assert.Equal(t, "Node "+s.node+" deleted", message(rep, "remove-from-cluster"))
	assert.GreaterOrEqual(t, s.events.duration("shutdown-kubelet"), e2eKubeletStale, "waited for the lease to go quiet")
	assert.Equal(t, []string{s.ns + "/web-1", s.ns + "/web-2"}, s.events.drained())
	s.checkTornDown()

	// The Node is gone: planning again is 404, as the teardown design's APIs
	// answer, but the plan kept runs again, finding everything done.
	_, err := s.x.Plan(s.ctx(), s.request())
	assert.Equal(t, teardown.ReasonNotFound, teardown.ReasonOf(err))
	again := s.runPlan(p)
	require.NoError(t, again.Err())
	assert.Equal(t, allSteps(teardown.Skipped, map[string]teardown.Outcome{
		"etcd-ready":   teardown.Done, // checked again
		"destroy-node": teardown.Done, // the provisioner is asked again: it finds the wipe done
		"release-node": teardown.Done, // and the node released
	}), stepsOf(again))
	assert.Equal(t, 200, again.Status().Code)
	assert.Equal(t, 2, s.prov.Calls())
	s.checkTornDown()
}

// A node whose kubelet runs until the decommission label stops it, as the
// teardown design's DaemonSet does: shutdown-kubelet waits until the
// renewals stop, and KubeletStale after the last one.
func TestE2ETeardownStopsRunningKubelet(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	k := s.startKubelet()
	_, rep := s.run(s.request())
	require.NoError(t, rep.Err())
	assert.Equal(t, allSteps(teardown.Done, nil), stepsOf(rep))
	assert.Equal(t, 200, rep.Status().Code)

	rec := k.wait(t)
	assert.Greater(t, rec.renewals, 2, "the kubelet renewed its lease before the teardown reached it")
	assert.Greater(t, rec.after, 0, "and after the label, until it stopped")
	var sk teardown.StepResult
	for _, r := range rep.Steps {
		if r.Step.Kind == teardown.StepShutdownKubelet {
			sk = r
		}
	}
	assert.True(t, rec.labelled.After(sk.Start), "labelled by the step")
	assert.True(t, rec.last.After(rec.labelled), "renewed after the label, while the step waited")
	end := sk.Start.Add(sk.Duration)
	assert.GreaterOrEqual(t, end.Sub(rec.last), e2eKubeletStale, "done only KubeletStale after the last renewal")
	s.checkTornDown()
}

// A drain blocked by a PodDisruptionBudget stops the plan: drain Failed,
// the rest NotRun, 500 DisassociateStepFailure with the drain's reason in
// the details, and nothing else touched. Once the budget allows a
// disruption, the same request completes.
func TestE2ETeardownStoppedByBudget(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	db := s.controller("ReplicaSet", "db")
	s.ownedPod("ReplicaSet", "db", db, "db-1")
	s.budget("db-budget", "db", 0)

	req := s.request()
	_, rep := s.run(req)
	require.False(t, rep.Succeeded())
	assert.Equal(t, allSteps(teardown.NotRun, map[string]teardown.Outcome{"drain": teardown.Failed}), stepsOf(rep))
	err := rep.Err()
	assert.Equal(t, teardown.ReasonDrainNodeError, teardown.ReasonOf(err))
	// The step's context outlives the drain's timeout by a margin, so the
	// drain explains the refusal: the pod and the budget that holds it.
	assert.Contains(t, err.Error(), "db-1")
	assert.Contains(t, err.Error(), "db-budget")

	st := rep.Status()
	assert.Equal(t, 500, st.Code)
	assert.Equal(t, teardown.ReasonDisassociateStepFailure, st.Reason)
	assert.Equal(t, "Failure", st.Status)
	assert.Contains(t, st.Message, "stopped at step drain: 1 failed, 8 not run")
	assert.Equal(t, 1, st.Details.ErrorCount)
	require.Len(t, st.Details.MessageList, 9)
	drain := st.Details.MessageList[0]
	assert.Equal(t, teardown.Message{Message: drain.Message, Error: true, Kind: teardown.KindStep, Name: "drain"}, drain)
	assert.True(t, strings.HasPrefix(drain.Message, "failed (DrainNodeError): teardown: node "+s.node+", step drain: "), drain.Message)
	assert.Contains(t, drain.Message, "db-1")
	for _, m := range st.Details.MessageList[1:] {
		assert.Equal(t, "not run: step drain stopped the plan", m.Message, m.Name)
	}

	// Only the drain acted: cordoned, the web pods evicted, db-1 kept.
	n := s.getNode()
	assert.True(t, n.Spec.Unschedulable)
	for k, v := range deploymentLabels {
		assert.Equal(t, v, n.Labels[k], "label %s kept", k)
	}
	assert.NotContains(t, n.Labels, teardown.DecommissionLabel)
	assert.Nil(t, s.getPod("web-1"))
	if p := s.getPod("db-1"); assert.NotNil(t, p) {
		assert.Nil(t, p.DeletionTimestamp)
	}
	assert.Len(t, s.etcdMembers(), 3)
	assert.Zero(t, s.prov.Calls())
	assert.Equal(t, fence.StateOn, s.pduA.Truth("3"))
	assert.Zero(t, s.bmc.Calls(fake.OpSet)+s.pduA.Calls(fake.OpSet)+s.pduB.Calls(fake.OpSet))

	// The budget lifted, the same request runs again and completes; the
	// drain finds the node cordoned and evicts the pod left.
	pdb, err := s.cs.PolicyV1().PodDisruptionBudgets(s.ns).Get(s.ctx(), "db-budget", metav1.GetOptions{})
	require.NoError(t, err)
	s.setBudget(pdb, 1)
	_, rep = s.run(req)
	require.NoError(t, rep.Err())
	assert.Equal(t, allSteps(teardown.Done, nil), stepsOf(rep))
	assert.Equal(t, "cordoned; 1 pod evicted or deleted", message(rep, "drain"))
	st = rep.Status()
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, teardown.ReasonSuccess, st.Reason)
	assert.Nil(t, s.getPod("db-1"))
	s.checkTornDown()
}

// kubelet renews a node's Lease, as a running kubelet does, until the
// teardown design's DaemonSet stops it: e2eKubeletStopDelay after the node
// got the decommission label (the time its pod takes to start and run
// systemctl).
type kubelet struct {
	done     chan struct{}
	mu       sync.Mutex
	renewals int       // renewals written
	after    int       // renewals written after the label was seen
	labelled time.Time // when the label was first seen
	last     time.Time // when the last renewal was written
	stopped  bool      // stopped by the label
	err      error
}

// e2eKubeletStopDelay is how long the kubelet runs on after the label.
const e2eKubeletStopDelay = 500 * time.Millisecond

// startKubelet starts renewing the node's Lease every e2eRenewEvery. It
// stops e2eKubeletStopDelay after the label is seen, on an error, or when
// the test ends.
func (s *site) startKubelet() *kubelet {
	k := &kubelet{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(func() { cancel(); <-k.done })
	go func() {
		defer close(k.done)
		tick := time.NewTicker(e2eRenewEvery)
		defer tick.Stop()
		for {
			stop, err := s.renew(ctx, k)
			if stop || err != nil {
				k.mu.Lock()
				k.stopped, k.err = stop, err
				k.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
				k.mu.Lock()
				k.err = ctx.Err()
				k.mu.Unlock()
				return
			case <-tick.C:
			}
		}
	}()
	return k
}

// renew renews the Lease once, unless the node has carried the
// decommission label for e2eKubeletStopDelay (stop). A conflict with
// another writer is left for the next turn.
func (s *site) renew(ctx context.Context, k *kubelet) (stop bool, err error) {
	n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read the node: %w", err)
	}
	labelled := n.Labels[teardown.DecommissionLabel] == teardown.DecommissionValue
	k.mu.Lock()
	if labelled && k.labelled.IsZero() {
		k.labelled = time.Now()
	}
	since := k.labelled
	k.mu.Unlock()
	if labelled && time.Since(since) >= e2eKubeletStopDelay {
		return true, nil
	}
	leases := s.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read the lease: %w", err)
	}
	now := time.Now()
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("renew the lease: %w", err)
	}
	k.mu.Lock()
	k.renewals++
	if labelled {
		k.after++
	}
	k.last = now
	k.mu.Unlock()
	return false, nil
}

// wait waits for the kubelet to stop (10 s at most), fails the test unless
// the label stopped it, and returns a copy of its record.
func (k *kubelet) wait(t *testing.T) kubeletRecord {
	t.Helper()
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the kubelet still runs 10 s after the teardown")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	require.NoError(t, k.err)
	require.True(t, k.stopped, "stopped by the label")
	return kubeletRecord{renewals: k.renewals, after: k.after, labelled: k.labelled, last: k.last}
}

// kubeletRecord is what a kubelet did.
type kubeletRecord struct {
	renewals, after int
	labelled, last  time.Time
}

// eventLog records the executor's events.
type eventLog struct {
	mu     sync.Mutex
	events []teardown.StepEvent
}

func (l *eventLog) record(e teardown.StepEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// duration returns how long the last run of step name took, from its end
// event.
func (l *eventLog) duration(name string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for _, e := range l.events {
		if e.Type == teardown.EventEnd && e.Step.String() == name {
			d = e.Duration
		}
	}
	return d
}

// drained returns the pods the drain's progress named as gone, sorted.
func (l *eventLog) drained() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Type == teardown.EventProgress && e.Drain != nil {
			out = append(out, e.Drain.Done...)
		}
	}
	slices.Sort(out)
	return out
}
