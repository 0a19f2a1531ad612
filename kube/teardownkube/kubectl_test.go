package teardownkube_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
)

// Agreement with kubectl drain: two identical nodes, each in a namespace
// of its own with the same pods, one drained by kubectl drain v1.37.1 (the
// binary scripts/kube-binaries.sh builds) and the other by Drain with the
// same options, on the shared API server. Both must leave the same nodes
// and pods behind.

// twins returns two views of the shared server with identical nodes, each
// with its own namespace, and the cluster.
func twins(t *testing.T) (*kubetest.Cluster, *kube, *kube) {
	t.Helper()
	c := kubetest.Shared(t)
	kubetest.Kubectl(t) // skip (fail with CI=true) before creating anything
	return c, newKube(t), newKube(t)
}

// podState is what a drain left of a pod: whether it is there and, if so,
// whether it is terminating.
type podState string

const (
	podGone        podState = "gone"
	podKept        podState = "kept"
	podTerminating podState = "terminating"
)

// states returns the state of each named pod in k's namespace.
func (k *kube) states(names ...string) map[string]podState {
	k.t.Helper()
	out := map[string]podState{}
	for _, n := range names {
		switch p := k.getPod(n); {
		case p == nil:
			out[n] = podGone
		case p.DeletionTimestamp != nil:
			out[n] = podTerminating
		default:
			out[n] = podKept
		}
	}
	return out
}

// onNode lists the names of the pods bound to k's node, sorted.
func (k *kube) onNode() []string {
	k.t.Helper()
	list, err := k.cs.CoreV1().Pods(k.ns).List(k.ctx(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", k.node).String(),
	})
	require.NoError(k.t, err)
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// kubectlRun is the outcome of one kubectl command.
type kubectlRun struct {
	stdout, stderr string
	code           int // exit code; -1 when it did not exit by itself
	took           time.Duration
}

// lines returns stdout and stderr, line by line, with the namespace and
// node replaced by NS and NODE.
func (r kubectlRun) lines(k *kube) []string {
	return normalize(k, strings.Split(strings.TrimSpace(r.stdout+r.stderr), "\n"))
}

// kubectl runs kubectl with args against c (60 s at most) and returns
// what it printed and its exit code.
func kubectl(t *testing.T, c *kubetest.Cluster, args ...string) kubectlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := c.KubectlCommand(ctx, t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := kubectlRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("kubectl %s: exit %d after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code,
		r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

// normalize replaces k's namespace and node in each line by NS and NODE.
func normalize(k *kube, lines []string) []string {
	r := strings.NewReplacer(k.ns, "NS", k.node, "NODE")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, r.Replace(l))
	}
	return out
}

// both runs kubectl's drain of a and Drain of b at the same time and
// returns their outcomes.
func both(t *testing.T, c *kubetest.Cluster, a, b *kube, kubectlArgs []string, drain func() error) (kubectlRun, error) {
	t.Helper()
	var (
		wg  sync.WaitGroup
		run kubectlRun
		err error
	)
	wg.Go(func() {
		start := time.Now()
		err = drain()
		t.Logf("Drain: %v after %v", err, time.Since(start).Round(time.Millisecond))
	})
	defer wg.Wait() // also when kubectl ends the test
	run = kubectl(t, c, append(kubectlArgs, a.node)...)
	wg.Wait()
	return run, err
}

// The whole set of pods kubectl drain knows, with every option that lets
// it go through: ReplicaSet pods (one with an emptyDir volume), an
// unmanaged pod and a finished one are evicted; the DaemonSet pod and the
// mirror pod stay. The same pods stay on both nodes, both are cordoned, and
// what each prints says the same, but for the known differences of form.
func TestKubectlAgreementDrain(t *testing.T) {
	t.Parallel()
	c, a, b := twins(t)
	pods := []string{"web-1", "scratch-1", "lonely", "done-1", "agent-1", "static-1"}
	for _, k := range []*kube{a, b} {
		rs := k.controller("ReplicaSet", "web")
		ds := k.controller("DaemonSet", "agent")
		k.ownedPod("ReplicaSet", "web", rs, "web-1")
		k.ownedPod("ReplicaSet", "web", rs, "scratch-1", withEmptyDir)
		k.createPod("lonely")
		k.createPod("done-1", withPhase(corev1.PodSucceeded))
		k.ownedPod("DaemonSet", "agent", ds, "agent-1")
		k.createPod("static-1", mirror)
	}

	var rec progress
	run, err := both(t, c, a, b,
		[]string{"drain", "--force", "--ignore-daemonsets", "--delete-emptydir-data", "--grace-period=0", "--timeout=30s"},
		func() error {
			return teardownkube.New(b.cs, teardownkube.Options{}).Drain(b.ctx(), b.node, teardown.DrainOptions{
				Timeout: 30 * time.Second, Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true,
			}, rec.report)
		})
	assert.Equal(t, 0, run.code, "kubectl drain succeeded")
	require.NoError(t, err, "Drain succeeded")

	assert.True(t, a.getNode().Spec.Unschedulable, "kubectl cordoned")
	assert.True(t, b.getNode().Spec.Unschedulable, "Drain cordoned")
	want := map[string]podState{"web-1": podGone, "scratch-1": podGone, "lonely": podGone, "done-1": podGone,
		"agent-1": podKept, "static-1": podKept}
	assert.Equal(t, want, a.states(pods...), "after kubectl drain")
	assert.Equal(t, want, b.states(pods...), "after Drain")
	assert.Equal(t, a.onNode(), b.onNode())

	// What each one says, line by line, once the differences of form are
	// undone: kubectl names an evicted pod without its namespace, writes
	// "Warning:" where Drain's progress writes "WARNING:", and orders the
	// warning's groups at random (Drain sorts them).
	kubectlSays := run.lines(a)
	var undone []string
	for _, l := range kubectlSays {
		if name, ok := strings.CutSuffix(l, " evicted"); ok && strings.HasPrefix(name, "pod/") {
			l = "pod NS/" + strings.TrimPrefix(name, "pod/") + " evicted"
		}
		if w, ok := strings.CutPrefix(l, "Warning: "); ok {
			groups := strings.Split(w, "; ")
			slices.Sort(groups)
			l = "WARNING: " + strings.Join(groups, "; ")
		}
		undone = append(undone, l)
	}
	drainSays := normalize(b, rec.messages())
	assert.ElementsMatch(t, undone, drainSays, "kubectl:\n%s\nDrain:\n%s",
		strings.Join(kubectlSays, "\n"), strings.Join(drainSays, "\n"))
	stdout := normalize(a, strings.Split(strings.TrimSpace(run.stdout), "\n"))
	assert.Equal(t, "node/NODE cordoned", stdout[0])
	assert.Equal(t, "node/NODE drained", stdout[len(stdout)-1])
	assert.Contains(t, undone,
		"WARNING: deleting Pods that declare no controller: NS/lonely; ignoring DaemonSet-managed Pods: NS/agent-1")
}

// A PodDisruptionBudget that allows no disruption: both refuse, kubectl
// with exit code 1, Drain with an error naming the pod. Both evict the
// pods the budget does not cover and leave the one it does, with the node
// cordoned. kubectl does not name the budget; Drain does.
func TestKubectlAgreementBudget(t *testing.T) {
	t.Parallel()
	c, a, b := twins(t)
	pods := []string{"web-1", "lonely"}
	for _, k := range []*kube{a, b} {
		rs := k.controller("ReplicaSet", "web")
		k.ownedPod("ReplicaSet", "web", rs, "web-1")
		k.createPod("lonely")
		k.budget("web-budget", "web", 0)
	}

	// kubectl waits 5 s between two refused evictions and has no flag
	// for it; Drain has the same default. A timeout shorter than that
	// ends both at the first retry.
	run, err := both(t, c, a, b, []string{"drain", "--force", "--grace-period=0", "--timeout=2s"},
		func() error {
			return teardownkube.New(b.cs, teardownkube.Options{}).Drain(b.ctx(), b.node, teardown.DrainOptions{
				Timeout: 2 * time.Second, Force: true,
			}, nil)
		})
	assert.Equal(t, 1, run.code, "kubectl drain refused")
	require.Error(t, err, "Drain refused")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	assert.True(t, a.getNode().Spec.Unschedulable, "kubectl cordoned")
	assert.True(t, b.getNode().Spec.Unschedulable, "Drain cordoned")
	want := map[string]podState{"web-1": podKept, "lonely": podGone}
	assert.Equal(t, want, a.states(pods...), "after kubectl drain")
	assert.Equal(t, want, b.states(pods...), "after Drain")

	says := strings.Join(run.lines(a), "\n")
	assert.Contains(t, says, `error when evicting pods/"web-1" -n "NS" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`)
	assert.Contains(t, says, `There are pending pods in node "NODE" when an error occurred: error when evicting pods/"web-1" -n "NS": global timeout reached: 2s`)
	assert.Contains(t, says, "There are pending nodes to be drained:\n NODE")
	assert.NotContains(t, says, "web-budget", "kubectl does not name the budget")

	var e *teardownkube.Error
	require.ErrorAs(t, err, &e)
	require.Len(t, e.Remaining, 1)
	assert.Equal(t, "web-1", e.Remaining[0].Name)
	assert.Equal(t, []string{"web-budget (disruptionsAllowed 0)"}, e.Remaining[0].Budgets)
	assert.Contains(t, err.Error(), "The disruption budget web-budget needs 1 healthy pods and has 1 currently")
}

// The one option that differs: kubectl drain --grace-period=0 evicts with
// a grace period of zero, so a pod whose own terminationGracePeriodSeconds
// is 30 goes at once; a DrainOptions.GracePeriod of zero means the pod's
// own, so Drain leaves that pod terminating, waiting for a kubelet to
// confirm its end (here there is none), until its timeout. The pod's grace
// period is the only way to a grace period of zero through Drain.
func TestKubectlGracePeriodZeroDiffers(t *testing.T) {
	t.Parallel()
	c, a, b := twins(t)
	for _, k := range []*kube{a, b} {
		rs := k.controller("ReplicaSet", "web")
		k.ownedPod("ReplicaSet", "web", rs, "slow-1", withGrace(30))
	}
	run, err := both(t, c, a, b, []string{"drain", "--grace-period=0", "--timeout=10s"},
		func() error {
			return teardownkube.New(b.cs, teardownkube.Options{}).Drain(b.ctx(), b.node,
				teardown.DrainOptions{Timeout: 2 * time.Second}, nil)
		})
	assert.Equal(t, 0, run.code)
	assert.Equal(t, map[string]podState{"slow-1": podGone}, a.states("slow-1"), "after kubectl drain --grace-period=0")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, map[string]podState{"slow-1": podTerminating}, b.states("slow-1"), "after Drain")
	if p := b.getPod("slow-1"); assert.NotNil(t, p) {
		assert.Equal(t, int64(30), *p.DeletionGracePeriodSeconds)
	}
}

// drainPods is the number of pods on each node a drain benchmark drains.
const drainPods = 10

// BenchmarkDrain compares Drain with kubectl drain on the shared API
// server. Each iteration drains a fresh node holding drainPods ReplicaSet
// pods (terminationGracePeriodSeconds 0, so each goes at once without a
// kubelet); creating them is not timed, the drain is, until it returns.
//
// tool=kubectl includes kubectl's process start-up, as an operator runs
// it; its discovery cache is warm (one HOME per sub-benchmark, filled
// before the timer starts). The allocations are the benchmark process's
// only: kubectl's own are not counted.
//
// qps=default is client-go's default client-side rate limit, which kubectl
// has no flag to change: QPS and Burst left zero, so each API group's
// client (core, policy, discovery) has its own limit of 5 requests a
// second in bursts of 10. (QPS 5 and Burst 10 set explicitly give the
// whole clientset one limiter instead, and a drain of about 3 s.)
// qps=1000 is the harness's client (QPS 1000, Burst 2000), for Drain only.
// Drain's client is made afresh for each drain, not timed, so that each
// starts with full bursts, as each kubectl process does. Compare with
//
//	go test -run '^$' -bench Drain -count 6 ./kube/teardownkube/ > drain.txt
//	benchstat -col /tool drain.txt
func BenchmarkDrain(b *testing.B) {
	c := kubetest.Shared(b)
	opts := teardown.DrainOptions{Timeout: 30 * time.Second}
	b.Run("tool=fencekit/qps=default", func(b *testing.B) { benchFencekit(b, c, opts, 0, 0) })
	b.Run("tool=fencekit/qps=1000", func(b *testing.B) { benchFencekit(b, c, opts, 1000, 2000) })
	b.Run("tool=kubectl/qps=default", func(b *testing.B) {
		kubetest.Kubectl(b)
		k := benchKube(b, c)
		// Fill the discovery cache.
		if out, err := c.KubectlCommand(b.Context(), b, "get", "namespace", k.ns, "-o", "name").CombinedOutput(); err != nil {
			b.Fatalf("kubectl: %v\n%s", err, out)
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			k.benchNode(i)
			cmd := c.KubectlCommand(b.Context(), b, "drain", "--timeout="+opts.Timeout.String(), k.node)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			b.StartTimer()
			if err := cmd.Run(); err != nil {
				b.Fatalf("kubectl drain: %v\n%s", err, out.String())
			}
			b.StopTimer()
			if !strings.Contains(out.String(), "node/"+k.node+" drained") {
				b.Fatalf("kubectl drain said:\n%s", out.String())
			}
			k.benchDone()
			b.StartTimer()
		}
	})
}

// benchFencekit times Drain through a client with the given rate limit
// (zero: client-go's defaults).
func benchFencekit(b *testing.B, c *kubetest.Cluster, opts teardown.DrainOptions, qps float32, burst int) {
	k := benchKube(b, c)
	cfg := c.Config()
	cfg.QPS, cfg.Burst = qps, burst
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		k.benchNode(i)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cl := teardownkube.New(cs, teardownkube.Options{})
		b.StartTimer()
		if err := cl.Drain(b.Context(), k.node, opts, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		k.benchDone()
		b.StartTimer()
	}
}

// benchView is a benchmark's view of the shared server: a namespace with
// a ReplicaSet, and the node of the current iteration.
type benchView struct {
	*kube
	rs types.UID
}

// benchKube creates the benchmark's namespace and ReplicaSet.
func benchKube(b *testing.B, c *kubetest.Cluster) *benchView {
	b.Helper()
	k := &kube{t: b, cs: c.Client(), ns: c.Namespace(b)}
	v := &benchView{kube: k}
	v.rs = k.controller("ReplicaSet", "web")
	return v
}

// benchNode creates a fresh node with drainPods ReplicaSet pods on it.
func (v *benchView) benchNode(i int) {
	v.t.Helper()
	v.node = fmt.Sprintf("%s-%d", kubetest.UniqueName(v.t), i)
	v.createNode(v.node)
	for j := range drainPods {
		v.ownedPod("ReplicaSet", "web", v.rs, fmt.Sprintf("%s-web-%d", v.node, j))
	}
}

// benchDone checks that the node holds no pod and deletes it.
func (v *benchView) benchDone() {
	v.t.Helper()
	if left := v.onNode(); len(left) > 0 {
		v.t.Fatalf("pods left on %s: %v", v.node, left)
	}
	if err := v.cs.CoreV1().Nodes().Delete(v.ctx(), v.node, metav1.DeleteOptions{}); err != nil {
		v.t.Fatal(err)
	}
}
