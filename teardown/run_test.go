package teardown_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// site is a fixture: node-3 with pods, labels, a member in each of two
// etcd clusters, a BMC, a provisioner and design revisions, all in memory,
// on a fake clock.
type site struct {
	clock   *fencetest.Clock
	cluster *teardowntest.Cluster
	k8s     *teardowntest.Etcd
	calico  *teardowntest.Etcd
	prov    *teardowntest.Provisioner
	bmc     *fake.Device
	revs    *teardown.MemoryRevisions
	x       *teardown.Executor
	logs    *bytes.Buffer
	events  []teardown.StepEvent
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{clock: fencetest.NewClock(t0), cluster: teardowntest.NewCluster(), prov: &teardowntest.Provisioner{},
		bmc: fake.New(fake.Options{Plugs: []string{""}}), logs: &bytes.Buffer{}}
	s.cluster.Now = s.clock.Now
	s.cluster.AddNode(teardown.Node{
		Name:      "node-3",
		Addresses: []string{"10.0.0.3"},
		Labels: map[string]string{
			"kubernetes.io/hostname":                "node-3",
			"kubernetes.io/arch":                    "amd64",
			"beta.kubernetes.io/os":                 "linux",
			"node-role.kubernetes.io/control-plane": "",
			"calico-etcd":                           "enabled",
			"kubernetes-apiserver":                  "enabled",
		},
	},
		teardown.Pod{Namespace: "shop", Name: "web-1"},
		teardown.Pod{Namespace: "shop", Name: "web-2"},
		teardown.Pod{Namespace: "kube-system", Name: "calico-node-1", DaemonSet: true},
		teardown.Pod{Namespace: "kube-system", Name: "kube-apiserver-node-3", Mirror: true},
		teardown.Pod{Namespace: "batch", Name: "job-1", Finished: true},
	)
	s.cluster.AddNode(teardown.Node{Name: "node-1", Labels: map[string]string{"kubernetes-apiserver": "enabled"}})
	s.k8s = teardowntest.NewEtcd(
		teardown.Member{ID: 0xa1, Name: "node-1", PeerURLs: []string{"https://10.0.0.1:2380"}, ClientURLs: []string{"https://10.0.0.1:2379"}},
		teardown.Member{ID: 0xa2, Name: "node-2", PeerURLs: []string{"https://10.0.0.2:2380"}, ClientURLs: []string{"https://10.0.0.2:2379"}},
		teardown.Member{ID: 0xa3, Name: "node-3", PeerURLs: []string{"https://10.0.0.3:2380"}, ClientURLs: []string{"https://10.0.0.3:2379"}},
	)
	s.calico = teardowntest.NewEtcd(
		teardown.Member{ID: 0xc1, Name: "calico-1", PeerURLs: []string{"https://10.0.0.1:6667"}},
		teardown.Member{ID: 0xc2, Name: "calico-2", PeerURLs: []string{"https://10.0.0.2:6667"}},
		teardown.Member{ID: 0xc3, Name: "calico-3", PeerURLs: []string{"https://10.0.0.3:6667"}},
		teardown.Member{ID: 0xc4, Name: "calico-4", PeerURLs: []string{"https://10.0.0.4:6667"}},
		teardown.Member{ID: 0xc5, Name: "calico-5", PeerURLs: []string{"https://10.0.0.5:6667"}},
	)
	s.revs = teardown.NewMemoryRevisions(
		teardown.Revision{ID: 1, Committed: true, Tags: []teardown.Tag{teardown.SiteActionTag(true, "deploy_site-1")}},
		teardown.Revision{ID: 2, Committed: true, Tags: []teardown.Tag{teardown.SiteActionTag(false, "update_site-2")}},
		teardown.Revision{ID: 3, Committed: true},
	)
	s.x = &teardown.Executor{
		Cluster:     s.cluster,
		Etcd:        map[string]teardown.Etcd{"kubernetes": s.k8s, "calico": s.calico},
		Provisioner: s.prov,
		Power: func(ctx context.Context, node string) ([]fence.Level, error) {
			return []fence.Level{{Methods: []*fence.Method{{Name: "ipmi", Node: node, Driver: "fake", Device: s.bmc,
				Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 50 * time.Millisecond}}}}}, nil
		},
		Revisions: s.revs,
		Now:       s.clock.Now,
		Sleep:     s.clock.Sleep,
		Logger:    slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observer:  func(e teardown.StepEvent) { s.events = append(s.events, e) },
	}
	return s
}

func (s *site) plan(t *testing.T, req teardown.Request) *teardown.Plan {
	t.Helper()
	if req.Node == "" {
		req.Node = "node-3"
	}
	p, err := s.x.Plan(t.Context(), req)
	require.NoError(t, err)
	return p
}

// outcomes returns "name=outcome" per step.
func outcomes(r *teardown.Report) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Step.Name()+"="+s.Outcome.String())
	}
	return out
}

func TestRunAll(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{"drain=done", "clear-labels=done", "remove-etcd=done", "etcd-ready=done",
		"shutdown-kubelet=done", "destroy-node=done", "power-off=done", "release-node=done", "remove-from-cluster=done"}, outcomes(rep))
	assert.True(t, rep.Succeeded())

	_, exists := s.cluster.Get("node-3")
	assert.False(t, exists, "Node deleted")
	assert.Equal(t, []uint64{0xa3}, s.k8s.Removed())
	assert.Equal(t, []uint64{0xc3}, s.calico.Removed(), "found by its peer URL's host, one of the node's addresses")
	wipe, ok := s.prov.Destroyed("node-3")
	require.True(t, ok)
	assert.Equal(t, teardown.WipeAll, wipe)
	assert.Equal(t, fence.StateOff, s.bmc.Truth(""))
	assert.Equal(t, 1, p.Revision, "successful-site-action by default")
	opts, _ := s.prov.DestroyedWith("node-3")
	assert.Equal(t, 1, opts.Revision, "the chosen revision is passed on to the provisioner")
	assert.True(t, s.prov.Released("node-3"))

	st := rep.Status()
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, teardown.ReasonSuccess, st.Reason)
	assert.Equal(t, 0, st.Details.ErrorCount)
	health := 0
	for _, m := range st.Details.MessageList {
		if m.Kind == teardown.KindHealth {
			health++
			assert.Equal(t, "Healthy", m.Message, m.Name)
		}
	}
	assert.Equal(t, 2+4, health, "one health message per member left")

	// The kubelet was given its 60 s of silence on the fake clock.
	kubelet := rep.Steps[4]
	assert.GreaterOrEqual(t, kubelet.Duration, time.Minute)
	assert.Less(t, kubelet.Duration, time.Minute+10*time.Second)
	assert.Contains(t, s.logs.String(), "step=drain outcome=done")
}

func TestRunPreserveLocalStorage(t *testing.T) {
	s := newSite(t)
	rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{PreserveLocalStorage: true}))
	require.NoError(t, rep.Err())
	wipe, ok := s.prov.Destroyed("node-3")
	require.True(t, ok)
	assert.Equal(t, teardown.WipeOSDisk, wipe)
	assert.Contains(t, rep.Steps[5].Message, "OS disk only")
}

// A run stopped midway says which steps ran, failed and did not run; a
// rerun of the same plan continues, finding the first steps done.
func TestRunStopsThenRerunContinues(t *testing.T) {
	s := newSite(t)
	broken := errors.New("provisioner API unavailable")
	s.prov.Hook = func(string, teardown.DestroyOptions) error { return broken }
	p := s.plan(t, teardown.Request{})

	rep := s.x.Run(t.Context(), p)
	assert.Equal(t, []string{"drain=done", "clear-labels=done", "remove-etcd=done", "etcd-ready=done",
		"shutdown-kubelet=done", "destroy-node=failed", "power-off=not run", "release-node=not run", "remove-from-cluster=not run"}, outcomes(rep))
	require.ErrorIs(t, rep.Err(), broken)
	st := rep.Status()
	assert.Equal(t, 500, st.Code)
	assert.Equal(t, teardown.ReasonDestroyNodeError, st.Reason)
	assert.Contains(t, st.Message, "stopped at step destroy-node")
	assert.Contains(t, st.Message, "5 done, 1 failed, 3 not run")
	assert.Equal(t, 1, st.Details.ErrorCount)
	assert.Equal(t, fence.StateOn, s.bmc.Truth(""), "nothing after the failed step ran")
	_, exists := s.cluster.Get("node-3")
	assert.True(t, exists)

	s.prov.Hook = nil
	rep = s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{"drain=skipped", "clear-labels=skipped", "remove-etcd=skipped", "etcd-ready=done",
		"shutdown-kubelet=skipped", "destroy-node=done", "power-off=done", "release-node=done", "remove-from-cluster=done"}, outcomes(rep))

	// A third run: the node is gone and off; everything is skipped but the
	// checks that still hold.
	rep = s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{"drain=skipped", "clear-labels=skipped", "remove-etcd=skipped", "etcd-ready=done",
		"shutdown-kubelet=skipped", "destroy-node=done", "power-off=skipped", "release-node=done", "remove-from-cluster=skipped"}, outcomes(rep))
	assert.Equal(t, []uint64{0xa3}, s.k8s.Removed(), "removed once")
}

func TestRunDrainBlockedByPDB(t *testing.T) {
	s := newSite(t)
	s.cluster.Block("shop/web-2")
	rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}))
	assert.Equal(t, "failed", rep.Steps[0].Outcome.String())
	assert.Equal(t, teardown.ReasonDrainNodeError, teardown.ReasonOf(rep.Steps[0].Err))
	for _, r := range rep.Steps[1:] {
		assert.Equal(t, teardown.NotRun, r.Outcome, r.Step.Name())
	}
	st := rep.Status()
	assert.Equal(t, 500, st.Code)
	assert.Equal(t, teardown.ReasonDisassociateStepFailure, st.Reason)
	assert.Contains(t, st.Details.MessageList[0].Message, "failed (DrainNodeError)")
	assert.Contains(t, st.Details.MessageList[0].Message, "shop/web-2")
	assert.Equal(t, "not run: step drain stopped the plan", st.Details.MessageList[1].Message)
	assert.Empty(t, s.k8s.Removed())

	ds := rep.Steps[0].Status()
	assert.Equal(t, teardown.ReasonDrainNodeError, ds.Reason, "the per-step response keeps the step's reason")
	assert.Equal(t, 500, ds.Code)
}

// A drain that returns nil while pods are still there is not taken on its
// word.
func TestRunDrainNotConfirmed(t *testing.T) {
	s := newSite(t)
	s.x.Cluster = &lyingDrain{Cluster: s.cluster}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[:1]
	rep := s.x.Run(t.Context(), p)
	require.Error(t, rep.Err())
	assert.ErrorIs(t, rep.Err(), teardown.ErrNotConfirmed)
	assert.Contains(t, rep.Err().Error(), "not cordoned")
}

// lyingDrain says the drain worked and does nothing.
type lyingDrain struct{ *teardowntest.Cluster }

func (lyingDrain) Drain(context.Context, string, teardown.DrainOptions, func(teardown.DrainProgress)) error {
	return nil
}

func TestRunDrainProgressObserved(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[:1]
	s.x.Run(t.Context(), p)
	var types []teardown.EventType
	var progress *teardown.DrainProgress
	for _, e := range s.events {
		types = append(types, e.Type)
		if e.Type == teardown.EventProgress {
			progress = e.Drain
		}
	}
	assert.Equal(t, []teardown.EventType{teardown.EventStart, teardown.EventProgress, teardown.EventEnd}, types)
	require.NotNil(t, progress)
	assert.Equal(t, []string{"shop/web-1", "shop/web-2", "batch/job-1"}, progress.Done)
}

// The teardown design's kubectl drain settings reach the port.
func TestRunDrainOptions(t *testing.T) {
	s := newSite(t)
	rec := &recordDrain{Cluster: s.cluster}
	s.x.Cluster = rec
	p := s.plan(t, teardown.Request{Timeouts: teardown.Timeouts{Drain: 120 * time.Second, DrainGracePeriod: 30 * time.Second}})
	p.Steps = p.Steps[:1]
	require.NoError(t, s.x.Run(t.Context(), p).Err())
	assert.Equal(t, teardown.DrainOptions{Timeout: 120 * time.Second, GracePeriod: 30 * time.Second,
		Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true}, rec.opts)
}

type recordDrain struct {
	*teardowntest.Cluster
	opts teardown.DrainOptions
}

func (r *recordDrain) Drain(ctx context.Context, node string, o teardown.DrainOptions, f func(teardown.DrainProgress)) error {
	r.opts = o
	return r.Cluster.Drain(ctx, node, o, f)
}

func TestRunClearLabelsWaitsForPods(t *testing.T) {
	s := newSite(t)
	s.cluster.SetPods("node-3", teardown.Pod{Namespace: "kube-system", Name: "calico-etcd-1", DaemonSet: true, Terminating: true})
	polls := 0
	s.cluster.Hook = func(op, node string) error {
		if op == teardowntest.OpPods {
			polls++
			if polls == 4 { // the DaemonSet pod goes away on the fourth look
				s.cluster.SetPods("node-3")
			}
		}
		return nil
	}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[1:2]
	start := s.clock.Now()
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, teardown.Done, rep.Steps[0].Outcome)
	assert.Equal(t, 3*teardown.DefaultPoll, s.clock.Now().Sub(start), "three polls of 5 s")
	n, _ := s.cluster.Get("node-3")
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "node-3", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux"}, n.Labels)
}

func TestRunClearLabelsTimeout(t *testing.T) {
	s := newSite(t)
	s.cluster.SetPods("node-3", teardown.Pod{Namespace: "shop", Name: "stuck", Terminating: true})
	p := s.plan(t, teardown.Request{Timeouts: teardown.Timeouts{ClearLabels: 60 * time.Second}})
	p.Steps = p.Steps[1:2]
	rep := s.x.Run(t.Context(), p)
	err := rep.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, teardown.ErrNotConfirmed)
	assert.Equal(t, teardown.ReasonClearLabelsError, teardown.ReasonOf(err))
	assert.Contains(t, err.Error(), "1 pod still terminating: shop/stuck")
	assert.Equal(t, 60*time.Second, rep.Steps[0].Duration)
}

func TestRunClearExplicitLabels(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{Labels: []string{"calico-etcd", "absent"}})
	p.Steps = p.Steps[1:2]
	require.NoError(t, s.x.Run(t.Context(), p).Err())
	n, _ := s.cluster.Get("node-3")
	assert.NotContains(t, n.Labels, "calico-etcd")
	assert.Contains(t, n.Labels, "kubernetes-apiserver", "only the named keys")
}

// Removing node-3's member while another member is down would leave one
// healthy member of two: refused, retried every 30 s until the timeout.
func TestRunRemoveEtcdQuorumRefused(t *testing.T) {
	s := newSite(t)
	delete(s.x.Etcd, "calico")
	s.k8s.SetHealth(0xa2, errors.New("connection refused"))
	p := s.plan(t, teardown.Request{Timeouts: teardown.Timeouts{RemoveEtcd: 300 * time.Second}})
	p.Steps = p.Steps[2:3]
	rep := s.x.Run(t.Context(), p)
	err := rep.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, teardown.ErrQuorum)
	assert.Equal(t, teardown.ReasonRemoveEtcdError, teardown.ReasonOf(err))
	assert.Contains(t, err.Error(), "3 voting members, 2 after the removal, 1 of them healthy (2 needed)")
	assert.Contains(t, err.Error(), "11 checks")
	assert.Equal(t, 300*time.Second, rep.Steps[0].Duration)
	assert.Empty(t, s.k8s.Removed())
}

// The member comes back before the timeout: the removal goes on.
func TestRunRemoveEtcdWaitsForQuorum(t *testing.T) {
	s := newSite(t)
	delete(s.x.Etcd, "calico")
	s.k8s.SetHealth(0xa2, errors.New("connection refused"))
	start := s.clock.Now()
	s.k8s.Hook = func(op string, id uint64) error {
		if op == teardowntest.OpMemberHealth && s.clock.Now().Sub(start) >= 90*time.Second {
			s.k8s.SetHealth(0xa2, nil)
		}
		return nil
	}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:3]
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, []uint64{0xa3}, s.k8s.Removed())
	assert.Equal(t, 90*time.Second, rep.Steps[0].Duration)
}

func TestRunRemoveEtcdLastMember(t *testing.T) {
	s := newSite(t)
	s.x.Etcd = map[string]teardown.Etcd{"solo": teardowntest.NewEtcd(teardown.Member{ID: 7, Name: "node-3"})}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:3]
	rep := s.x.Run(t.Context(), p)
	err := rep.Err()
	require.ErrorIs(t, err, teardown.ErrQuorum)
	assert.Contains(t, err.Error(), "last voting member")
	assert.Zero(t, rep.Steps[0].Duration, "refused at once, no retry")
}

func TestRunRemoveEtcdLearner(t *testing.T) {
	s := newSite(t)
	e := teardowntest.NewEtcd(
		teardown.Member{ID: 1, Name: "node-1"},
		teardown.Member{ID: 3, Name: "node-3", IsLearner: true},
	)
	e.SetHealth(1, errors.New("down"))
	s.x.Etcd = map[string]teardown.Etcd{"k": e}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:3]
	require.NoError(t, s.x.Run(t.Context(), p).Err(), "a learner leaves without a quorum check")
	assert.Equal(t, []uint64{3}, e.Removed())
}

// Another client removed the member between our list and our removal.
func TestRunRemoveEtcdAlreadyGone(t *testing.T) {
	s := newSite(t)
	delete(s.x.Etcd, "calico")
	s.k8s.Hook = func(op string, id uint64) error {
		if op == teardowntest.OpRemoveMember {
			s.k8s.Hook = nil
			require.NoError(t, s.k8s.RemoveMember(context.Background(), id))
		}
		return nil
	}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:3]
	require.NoError(t, s.x.Run(t.Context(), p).Err())
}

// The removal happened but its answer was lost (a member asked to remove
// itself may stop first): the next attempt finds it gone and counts it.
func TestRunRemoveEtcdLostAnswer(t *testing.T) {
	s := newSite(t)
	delete(s.x.Etcd, "calico")
	s.x.Etcd["kubernetes"] = &lostAnswer{Etcd: s.k8s}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:3]
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, teardown.Done, rep.Steps[0].Outcome)
	assert.Equal(t, "removed kubernetes/node-3 (id a3)", rep.Steps[0].Message)
	assert.Equal(t, teardown.DefaultEtcdPoll, rep.Steps[0].Duration, "one retry")
}

type lostAnswer struct {
	*teardowntest.Etcd
	lost bool
}

func (l *lostAnswer) RemoveMember(ctx context.Context, id uint64) error {
	err := l.Etcd.RemoveMember(ctx, id)
	if err == nil && !l.lost {
		l.lost = true
		return errors.New("etcdserver: server stopped")
	}
	return err
}

func TestRunNoEtcd(t *testing.T) {
	s := newSite(t)
	s.x.Etcd = nil
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[2:4]
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{"remove-etcd=skipped", "etcd-ready=skipped"}, outcomes(rep))
}

// etcd-ready polls every 30 s (as in the teardown design) until the members
// not on the node are healthy.
func TestRunEtcdReadyPolls(t *testing.T) {
	s := newSite(t)
	s.calico.SetHealth(0xc5, errors.New("no leader"))
	start := s.clock.Now()
	s.calico.Hook = func(op string, id uint64) error {
		if op == teardowntest.OpMembers && s.clock.Now().Sub(start) >= 120*time.Second {
			s.calico.SetHealth(0xc5, nil)
		}
		return nil
	}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[3:4]
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, 120*time.Second, rep.Steps[0].Duration, "5 checks, 30 s apart")
	assert.Contains(t, rep.Steps[0].Message, "calico 4/4, kubernetes 2/2", "node-3's members ignored")
}

func TestRunEtcdReadyTimeout(t *testing.T) {
	s := newSite(t)
	s.calico.SetHealth(0xc5, errors.New("no leader"))
	s.k8s.Hook = func(op string, _ uint64) error {
		if op == teardowntest.OpMembers {
			return errors.New("dial tcp 10.0.0.1:2379: connection refused")
		}
		return nil
	}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[3:4]
	rep := s.x.Run(t.Context(), p)
	err := rep.Err()
	require.ErrorIs(t, err, teardown.ErrNotConfirmed)
	assert.Equal(t, teardown.ReasonEtcdNotAccessible, teardown.ReasonOf(err))
	assert.Contains(t, err.Error(), "21 checks", "600 s polled every 30 s")
	assert.Contains(t, err.Error(), "cluster calico: 3 of 4 members healthy (4 needed)")
	assert.Contains(t, err.Error(), "cluster kubernetes: dial tcp")
	st := rep.Steps[0].Status()
	assert.Equal(t, teardown.ReasonEtcdNotAccessible, st.Reason)
	var msgs []string
	for _, m := range st.Details.MessageList[1:] {
		msgs = append(msgs, m.Name+" "+strings.SplitN(m.Message, ":", 2)[0])
	}
	assert.Equal(t, []string{"calico/calico-1 Healthy", "calico/calico-2 Healthy", "calico/calico-4 Healthy",
		"calico/calico-5 Unhealthy", "kubernetes Unable to access Etcd"}, msgs)
}

// A threshold below "all" lets a cluster with a dead member be ready.
func TestRunEtcdReadyThreshold(t *testing.T) {
	s := newSite(t)
	s.calico.SetHealth(0xc5, errors.New("no leader"))
	s.x.EtcdMinHealthy = map[string]int{"calico": 3}
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[3:4]
	require.NoError(t, s.x.Run(t.Context(), p).Err())
}

// The kubelet cannot be stopped (its DaemonSet does not run): the step
// fails after its timeout, and the plan goes on.
func TestRunShutdownKubeletBestEffort(t *testing.T) {
	s := newSite(t)
	s.cluster.KeepKubelet("node-3", true)
	rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}))
	require.NoError(t, rep.Err(), "a best-effort failure is not the plan's error")
	assert.Equal(t, teardown.Failed, rep.Steps[4].Outcome)
	assert.Equal(t, teardown.ReasonShutdownKubeletError, teardown.ReasonOf(rep.Steps[4].Err))
	assert.Contains(t, rep.Steps[4].Err.Error(), "the kubelet reported 0s ago")
	assert.Equal(t, teardown.Done, rep.Steps[7].Outcome)
	st := rep.Status()
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, 1, st.Details.ErrorCount)
	assert.Contains(t, s.logs.String(), "level=WARN msg=\"teardown step\" node=node-3 step=shutdown-kubelet outcome=failed")
}

// Without a Lease, the heartbeat alone decides, and it needs 6 minutes.
func TestRunShutdownKubeletNoLease(t *testing.T) {
	s := newSite(t)
	s.cluster.Now = nil // no kubelet renewing anything: zero lease, zero heartbeat
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[4:5]
	rep := s.x.Run(t.Context(), p)
	require.NoError(t, rep.Err())
	assert.Equal(t, teardown.NoLeaseKubeletStale, rep.Steps[0].Duration)
	n, _ := s.cluster.Get("node-3")
	assert.Equal(t, teardown.DecommissionValue, n.Labels[teardown.DecommissionLabel])
}

// The provisioner releases the node only after a device confirmed it off,
// as the teardown design orders it (shut down, then removed from the
// provisioner); the release step run alone powers the node off first.
func TestRunReleaseAfterVerifiedOff(t *testing.T) {
	t.Run("in the plan", func(t *testing.T) {
		s := newSite(t)
		var powerAtRelease, powerAtDestroy fence.State
		s.prov.Hook = func(string, teardown.DestroyOptions) error { powerAtDestroy = s.bmc.Truth(""); return nil }
		s.prov.ReleaseHook = func(string) error { powerAtRelease = s.bmc.Truth(""); return nil }
		rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}))
		require.NoError(t, rep.Err())
		assert.Equal(t, fence.StateOn, powerAtDestroy, "the provisioner wipes a running server")
		assert.Equal(t, fence.StateOff, powerAtRelease, "released once off")
	})
	t.Run("alone", func(t *testing.T) {
		s := newSite(t)
		var powerAtRelease fence.State
		s.prov.ReleaseHook = func(string) error { powerAtRelease = s.bmc.Truth(""); return nil }
		rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}).Only(teardown.StepReleaseNode))
		require.NoError(t, rep.Err())
		assert.Equal(t, fence.StateOff, powerAtRelease)
		assert.Equal(t, "released from the provisioner (powered off, confirmed by ipmi (level 1))", rep.Steps[0].Message)
	})
	t.Run("alone, device down", func(t *testing.T) {
		s := newSite(t)
		s.bmc.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
		rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}).Only(teardown.StepReleaseNode))
		err := rep.Err()
		require.ErrorIs(t, err, fence.ErrNotFenced)
		assert.Contains(t, err.Error(), "not released")
		assert.False(t, s.prov.Released("node-3"))
	})
}

func TestRunPowerOffFailures(t *testing.T) {
	t.Run("device down", func(t *testing.T) {
		s := newSite(t)
		s.bmc.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
		p := s.plan(t, teardown.Request{})
		p.Steps = p.Steps[6:]
		rep := s.x.Run(t.Context(), p)
		err := rep.Err()
		require.Error(t, err)
		assert.ErrorIs(t, err, fence.ErrNotFenced)
		assert.Equal(t, teardown.ReasonDestroyNodeError, teardown.ReasonOf(err))
		assert.Equal(t, teardown.NotRun, rep.Steps[1].Outcome, "not released while the power is not confirmed off")
		assert.Equal(t, teardown.NotRun, rep.Steps[2].Outcome, "the Node stays while the power is not confirmed off")
		assert.False(t, s.prov.Released("node-3"))
	})
	t.Run("device lies", func(t *testing.T) {
		s := newSite(t)
		s.bmc.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Lie, State: fence.StateOn})
		p := s.plan(t, teardown.Request{})
		p.Steps = p.Steps[6:7]
		err := s.x.Run(t.Context(), p).Err()
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err))
	})
	t.Run("not configured", func(t *testing.T) {
		s := newSite(t)
		s.x.Power = nil
		s.x.Provisioner = nil
		p := s.plan(t, teardown.Request{})
		p.Steps = p.Steps[5:7]
		rep := s.x.Run(t.Context(), p)
		assert.ErrorIs(t, rep.Steps[0].Err, teardown.ErrNotConfigured)
		assert.Equal(t, teardown.NotRun, rep.Steps[1].Outcome)
	})
}

func TestRunRemoveFromClusterConflict(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	p.Steps = p.Steps[7:]
	rep := s.x.Run(t.Context(), p)
	err := rep.Err()
	require.ErrorIs(t, err, teardown.ErrNotReady)
	st := rep.Status()
	assert.Equal(t, 409, st.Code)
	assert.Equal(t, teardown.ReasonConflict, st.Reason)
	assert.Contains(t, st.Message, "not cordoned; not drained: 2 pods on it: shop/web-1, shop/web-2; labels left: calico-etcd, kubernetes-apiserver, node-role.kubernetes.io/control-plane")
	_, exists := s.cluster.Get("node-3")
	assert.True(t, exists)

	// A wrong value of the decommission label is a label left.
	s.cluster.AddNode(teardown.Node{Name: "node-3", Unschedulable: true, Labels: map[string]string{
		"kubernetes.io/hostname": "node-3", teardown.DecommissionLabel: "pending"}})
	err = s.x.Run(t.Context(), p).Err()
	require.ErrorIs(t, err, teardown.ErrNotReady)
	assert.Contains(t, err.Error(), "labels left: promenade-decomission")

	s.cluster.AddNode(teardown.Node{Name: "node-3", Unschedulable: true, Labels: map[string]string{
		"kubernetes.io/hostname": "node-3", teardown.DecommissionLabel: teardown.DecommissionValue}},
		teardown.Pod{Namespace: "kube-system", Name: "ds", DaemonSet: true})
	require.NoError(t, s.x.Run(t.Context(), p).Err())
}

func TestRunCancelled(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep := s.x.Run(ctx, p)
	require.ErrorIs(t, rep.Err(), context.Canceled)
	assert.Equal(t, teardown.Failed, rep.Steps[0].Outcome)
	assert.Equal(t, teardown.NotRun, rep.Steps[7].Outcome)
	assert.Empty(t, s.cluster.Calls()[1:], "only the plan's read of the node")
}

func TestRunCapturesNodeErrors(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	s.cluster.Hook = func(op, node string) error {
		if op == teardowntest.OpNode {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}
	rep := s.x.Run(t.Context(), p)
	var te *teardown.Error
	require.ErrorAs(t, rep.Err(), &te)
	assert.Equal(t, "node-3", te.Node)
	assert.Equal(t, teardown.StepDrain, te.Step)
	assert.Equal(t, "teardown: node node-3, step drain: read the node: etcdserver: request timed out", te.Error())
}

func TestReportStatusJSON(t *testing.T) {
	s := newSite(t)
	s.cluster.Block("shop/web-1")
	rep := s.x.Run(t.Context(), s.plan(t, teardown.Request{}))
	raw, err := json.Marshal(rep.Status())
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, "Status", got["kind"])
	assert.Equal(t, "v1.0", got["apiVersion"])
	assert.Equal(t, map[string]any{}, got["metadata"])
	assert.Equal(t, "Failure", got["status"])
	assert.Equal(t, "DisassociateStepFailure", got["reason"])
	assert.EqualValues(t, 500, got["code"])
	details := got["details"].(map[string]any)
	assert.EqualValues(t, 1, details["errorCount"])
	list := details["messageList"].([]any)
	require.Len(t, list, 9)
	first := list[0].(map[string]any)
	assert.Equal(t, []string{"error", "kind", "message", "name"}, keys(first))
	assert.Equal(t, true, first["error"])
	assert.Equal(t, "drain", first["name"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A cluster port that answers neither a node nor an error stops the run:
// no step that reads the node is taken as done, or skipped, on nothing.
func TestRunNodeReadNothing(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{})
	s.x.Cluster = &silentNode{Cluster: s.cluster}
	p.Steps = p.Steps[:1]
	rep := s.x.Run(t.Context(), p)
	require.Error(t, rep.Err())
	assert.Contains(t, rep.Err().Error(), "the cluster returned no node and no error")
	assert.NotContains(t, outcomes(rep), "drain=done")
}

// silentNode answers a node read with nothing at all.
type silentNode struct{ *teardowntest.Cluster }

func (silentNode) Node(context.Context, string) (*teardown.Node, error) { return nil, nil }
