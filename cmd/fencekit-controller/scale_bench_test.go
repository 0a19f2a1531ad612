package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// benchUser is the controller's identity in the scale benchmark: its
// requests are told apart in the API server's audit log by it.
const benchUser = "fencekit-bench"

// BenchmarkControlPlaneScale runs the controller (built and started as its
// own process, as deployed) against a real control plane of 1,000 and
// 5,000 kwok nodes with the default lease (40 s) and grace period (50 s),
// and reports:
//
//   - its steady state: resident memory (rss-MiB, and B/node), CPU
//     (cpu-ms/s) and requests per second to the API server, all of them
//     (req/s) and those other than watches (nonwatch-req/s), counted in
//     the API server's audit log by the controller's user over a 30 s
//     window once it has synced;
//   - the recovery of one node (the timed operation: its kwok process
//     killed, until its StatefulSet pod runs on another node), split into
//     detection (until the node lifecycle controller marks it
//     Ready=Unknown), fencekit (until the out-of-service taint, the BMC
//     read back off before it) and Kubernetes (until the new pod runs);
//   - the same for ten nodes at once (rack10-*: the slowest of the ten).
//
// Each size runs two chains: default (the Ready condition, as the
// controller manager sets it after its grace period) and fast (detection
// from the node's lease, --lease-grace=15s). make bench runs it once
// (-benchtime 1x); it takes about 20 minutes.
func BenchmarkControlPlaneScale(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, chain := range []string{"default", "fast"} {
			b.Run(fmt.Sprintf("nodes=%d/chain=%s", n, chain), func(b *testing.B) { benchScale(b, n, chain) })
		}
	}
}

// chainArgs are the controller's flags of each chain.
var chainArgs = map[string][]string{
	"default": nil,
	"fast":    {"--lease-grace=15s"},
}

// victim is a node the benchmark kills, with its BMC, the spare node its
// StatefulSet pod may move to, and what was seen of its recovery.
type victim struct {
	node, spare string
	bmc         *ipmisim.GoBMC
	oldPod      types.UID

	killed, unknown, taint, running time.Time
	fencedAt                        time.Time
}

func benchScale(b *testing.B, nodes int, chain string) {
	b.ReportAllocs()
	dir := b.TempDir()
	cp, auditLog := auditedControlPlane(b, dir)
	ctx := b.Context()
	admin := cp.Client()
	cp.InstallCRD(b, crdPath)
	ns := cp.Namespace(b)

	// 11 victims (one alone, then ten at once), a spare for each, and the
	// rest in one kwok process.
	var vs []*victim
	var bulk []string
	for i := 1; i <= 11; i++ {
		vs = append(vs, &victim{node: fmt.Sprintf("victim-%02d", i), spare: fmt.Sprintf("spare-%02d", i)})
		bulk = append(bulk, fmt.Sprintf("spare-%02d", i))
	}
	for i := len(bulk) + len(vs); i < nodes; i++ {
		bulk = append(bulk, fmt.Sprintf("node-%05d", i))
	}
	createConfigMap(b, admin, ns, "fence-method-template-bmc", "template.properties",
		"name=bmc\ndriver=ipmi\nusername="+ipmisim.DefaultUser+"\npassword="+ipmisim.DefaultPassword+"\naction=reboot\npower_timeout=5\n")
	start := time.Now()
	for _, v := range vs {
		must(b, cp.AddNodes(ctx, v.node, nil, v.node))
		v.bmc = ipmisim.StartGoBMC(b, ipmisim.GoBMCOptions{})
		tieMachine(b, cp, v.node, v.node, v.bmc)
		createConfigMap(b, admin, ns, "fence-method-bmc-"+v.node, "method.properties", "template=bmc\naddress="+v.bmc.URL()+"\n")
		createConfigMap(b, admin, ns, "fence-config-"+v.node, "config.properties", "node_name="+v.node+"\npower_management=bmc\n")
	}
	must(b, cp.AddNodes(ctx, "bulk", nil, bulk...))
	waitAllReady(b, admin, nodes, 10*time.Minute)
	b.Logf("%d nodes Ready %v after their creation began", nodes, time.Since(start).Round(time.Second))
	for _, v := range vs {
		sts := kubetest.StatefulSet("db-"+v.node, ns, 1)
		// The pod runs on its victim, and may move to its spare only: with
		// thousands of nodes the scheduler scores a sample of them, so a
		// preference alone would not keep it on the victim.
		sts.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{v.node, v.spare}}},
			}}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{v.node}}},
			}}},
		}}
		_, err := admin.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
		must(b, err)
	}

	// The controller, built and run as its own process under its own user.
	bin := filepath.Join(dir, "fencekit-controller")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	must(b, cp.WriteKubeconfigAs(kubeconfig, benchUser))
	policy := filepath.Join(dir, "policy.yaml")
	must(b, os.WriteFile(policy, []byte("maxInFlight: 10\n"), 0o600))
	metricsAddr := freeAddr(b)
	// The metrics and profiles over HTTPS, to a reader's token, as
	// deployed.
	scraper := metricsToken(b, cp.Cluster, ns, "fencekit-metrics-reader", "fencekit-profiles-reader")
	ctl := startController(b, bin, dir, append([]string{"--kubeconfig=" + kubeconfig, "--namespace=" + ns, "--identity=bench",
		"--leader-elect=true", "--unhealthy-after=1s", "--pod-treatment=taint", "--policy-file=" + policy, "--log-level=info",
		"--device-check-interval=0", "--metrics-bind-address=" + metricsAddr, "--profiling"}, chainArgs[chain]...)...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := admin.CoordinationV1().Leases(ns).Get(ctx, "fencekit-controller", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "bench" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the controller does not lead after 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, v := range vs {
		p := kubetest.WaitPodRunning(b, admin, ns, "db-"+v.node+"-0", "", 2*time.Minute)
		if p.Spec.NodeName != v.node {
			b.Fatalf("pod %s on %s, not on %s", p.Name, p.Spec.NodeName, v.node)
		}
		v.oldPod = p.UID
	}

	// Steady state: 10 s to settle, then a 30 s window.
	time.Sleep(10 * time.Second)
	const window = 30 * time.Second
	cpu0 := procCPU(b, ctl.Process.Pid)
	w0 := time.Now()
	time.Sleep(window)
	w1 := time.Now()
	cpu1 := procCPU(b, ctl.Process.Pid)
	rss := procRSS(b, ctl.Process.Pid)
	heap := heapInuse(b, metricsAddr, scraper, fmt.Sprintf("heap-%d-%s.pb.gz", nodes, chain))
	total, nonWatch, byKind := auditCount(b, auditLog, w0, w1)
	b.Logf("steady state over %v at %d nodes: %d requests (%d not watches): %v", window, nodes, total, nonWatch, byKind)

	// One node, b.N times.
	one := vs[0]
	var sum [4]time.Duration
	var req1 int
	var by1 map[string]int
	b.ResetTimer()
	for i := range b.N {
		if i > 0 {
			b.StopTimer()
			movePodBack(b, admin, ns, one)
			b.StartTimer()
		}
		recoverNodes(b, cp, admin, ns, []*victim{one}, true)
		if i == 0 {
			req1, _, by1 = auditCount(b, auditLog, one.killed, one.running)
		}
		d := one.split()
		for k := range sum {
			sum[k] += d[k]
		}
	}
	b.StopTimer()
	// Reported after the timed loop: ResetTimer drops the metrics reported
	// before it.
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(rss)/float64(nodes), "B/node")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	b.ReportMetric(float64((cpu1-cpu0).Milliseconds())/window.Seconds(), "cpu-ms/s")
	b.ReportMetric(float64(total)/window.Seconds(), "req/s")
	b.ReportMetric(float64(nonWatch)/window.Seconds(), "nonwatch-req/s")
	for k, name := range []string{"detect-s", "fencekit-s", "kube-s", "total-s"} {
		b.ReportMetric((sum[k] / time.Duration(b.N)).Seconds(), name)
	}

	// Ten at once.
	rack := vs[1:]
	recoverNodes(b, cp, admin, ns, rack, false)
	var worst [4]time.Duration
	var last time.Time
	for _, v := range rack {
		d := v.split()
		for k := range worst {
			worst[k] = max(worst[k], d[k])
		}
		if v.running.After(last) {
			last = v.running
		}
	}
	for k, name := range []string{"rack10-detect-s", "rack10-fencekit-s", "rack10-kube-s", "rack10-total-s"} {
		b.ReportMetric(worst[k].Seconds(), name)
	}
	// The controller's requests from the kill until the pods run again
	// (watches counted when they start): per fencing, for one node and for
	// each of the ten.
	req10, _, by10 := auditCount(b, auditLog, rack[0].killed, last)
	b.Logf("requests from the kill to the pods running: one node %d %v; ten at once %d %v", req1, by1, req10, by10)
	// The leader lease's renewals go on whatever happens: not a fencing's.
	req1 -= leaderRequests(by1)
	req10 -= leaderRequests(by10)
	b.ReportMetric(float64(req1), "req/fencing")
	b.ReportMetric(float64(req10)/float64(len(rack)), "rack10-req/fencing")
}

// auditedControlPlane starts a control plane for the scale benchmarks:
// benchUser's requests written to the audit log it returns, the default
// lease (40 s) and grace period (50 s), kwok working on 32 nodes at once.
func auditedControlPlane(b *testing.B, dir string) (*kubetest.ControlPlane, string) {
	auditPolicy := filepath.Join(dir, "audit-policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	must(b, os.WriteFile(auditPolicy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["`+benchUser+`"]
- level: None
`), 0o600))
	cp := kubetest.StartControlPlane(b, kubetest.ControlPlaneOptions{
		Options: kubetest.Options{
			Users:              []string{benchUser},
			ExtraAPIServerArgs: []string{"--audit-policy-file=" + auditPolicy, "--audit-log-path=" + auditLog, "--audit-log-maxsize=0"},
		},
		NodeMonitorGracePeriod: 50 * time.Second,
		NodeLease:              40 * time.Second,
		KwokParallelism:        32,
	})
	return cp, auditLog
}

// startController starts the controller binary bin with args, its log in
// dir (its end shown when b fails), and kills it when b ends.
func startController(b *testing.B, bin, dir string, args ...string) *exec.Cmd {
	logFile, err := os.Create(filepath.Join(dir, "controller.log"))
	must(b, err)
	ctl := exec.CommandContext(b.Context(), bin, args...)
	ctl.Stdout, ctl.Stderr = logFile, logFile
	must(b, ctl.Start())
	b.Cleanup(func() {
		_ = ctl.Process.Kill()
		_ = ctl.Wait()
		_ = logFile.Close()
		if b.Failed() {
			out, _ := os.ReadFile(logFile.Name())
			b.Logf("controller log (end):\n%s", tail(string(out), 30))
		}
	})
	return ctl
}

// split returns detection, fencekit's share, Kubernetes' share and the
// total of v's last recovery.
func (v *victim) split() [4]time.Duration {
	return [4]time.Duration{v.unknown.Sub(v.killed), v.taint.Sub(v.unknown), v.running.Sub(v.taint), v.running.Sub(v.killed)}
}

// recoverNodes kills the kwok process of each victim at once and waits
// until each one's pod runs on its spare, the node was fenced (its BMC
// read back off before the taint) and the node is back and untainted.
//
// With afterRenewal, the victims are killed the moment the first one's
// node lease is renewed: its detection then takes the whole grace, the
// longest it can (ten killed at once are in every phase of their
// renewals, so the slowest of them is near that too).
func recoverNodes(b *testing.B, cp *kubetest.ControlPlane, c kubernetes.Interface, ns string, vs []*victim, afterRenewal bool) {
	ctx := b.Context()
	for _, v := range vs {
		v.unknown, v.taint, v.running, v.fencedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	}
	if afterRenewal {
		waitRenewal(b, c, vs[0].node)
	}
	killed := time.Now()
	for _, v := range vs {
		must(b, cp.StopNodes(v.node))
		v.killed = killed
	}
	store := fencekube.NewStore(cp.Objects(), fencekube.StoreOptions{})
	deadline := time.Now().Add(5 * time.Minute)
	for {
		left := 0
		for _, v := range vs {
			if v.running.IsZero() {
				left++
				observe(b, c, store, ns, v)
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not recovered after 5 minutes: %+v", vs[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, v := range vs {
		log := v.bmc.PowerLog()
		var off time.Time
		for _, ch := range log {
			if !ch.On {
				off = ch.At
			}
		}
		if v.fencedAt.IsZero() || off.Before(killed) || v.fencedAt.Before(off) || v.taint.Before(v.fencedAt.Add(-100*time.Millisecond)) {
			b.Fatalf("%s: not fenced by its BMC before the taint: fenced at %v, taint seen at %v, power log %+v", v.node, v.fencedAt, v.taint, log)
		}
	}
	// Back to normal: every victim recovered and untainted.
	for _, v := range vs {
		for {
			nf, err := store.Get(ctx, v.node)
			if err == nil && nf.Closed() {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: not recovered: %+v (%v)", v.node, nf, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitRenewal returns as soon as node's lease in kube-node-lease is
// renewed (a watch event), within a minute.
func waitRenewal(b *testing.B, c kubernetes.Interface, node string) {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	leases := c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	cur, err := leases.Get(ctx, node, metav1.GetOptions{})
	must(b, err)
	w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node, ResourceVersion: cur.ResourceVersion})
	must(b, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Modified {
			return
		}
	}
	b.Fatalf("%s: its lease not renewed within a minute", node)
}

// observe looks once at v's node, record and pod and notes the first
// time each step of the chain is seen (the record's FencedAt is read while
// it is there: the recovery clears it).
func observe(b *testing.B, c kubernetes.Interface, store *fencekube.Store, ns string, v *victim) {
	ctx := b.Context()
	now := time.Now()
	if v.fencedAt.IsZero() {
		if nf, err := store.Get(ctx, v.node); err == nil && !nf.FencedAt.IsZero() {
			v.fencedAt = nf.FencedAt
		}
	}
	if v.unknown.IsZero() || v.taint.IsZero() {
		n, err := c.CoreV1().Nodes().Get(ctx, v.node, metav1.GetOptions{})
		must(b, err)
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionUnknown && v.unknown.IsZero() {
				v.unknown = now
			}
		}
		if fencekube.HasOutOfServiceTaint(n) && v.taint.IsZero() {
			v.taint = now
			if v.unknown.IsZero() {
				v.unknown = now
			}
		}
	}
	p, err := c.CoreV1().Pods(ns).Get(ctx, "db-"+v.node+"-0", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	must(b, err)
	if p.UID != v.oldPod && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		if p.Spec.NodeName != v.spare {
			b.Fatalf("%s: new pod on %s, want %s", v.node, p.Spec.NodeName, v.spare)
		}
		v.running = now
		v.oldPod = p.UID
	}
}

// movePodBack deletes v's pod from its spare, so that it is made again on
// the victim (preferred) now that it is back.
func movePodBack(b *testing.B, c kubernetes.Interface, ns string, v *victim) {
	must(b, c.CoreV1().Pods(ns).Delete(b.Context(), "db-"+v.node+"-0", metav1.DeleteOptions{}))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := c.CoreV1().Pods(ns).Get(b.Context(), "db-"+v.node+"-0", metav1.GetOptions{})
		if err == nil && p.UID != v.oldPod && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == v.node {
			v.oldPod = p.UID
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: pod not back on its node", v.node)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitAllReady waits until n nodes are Ready.
func waitAllReady(b *testing.B, c kubernetes.Interface, n int, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		l, err := c.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{ResourceVersion: "0"})
		must(b, err)
		ready := 0
		for i := range l.Items {
			for _, cond := range l.Items[i].Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d nodes Ready after %v", ready, n, d)
		}
		time.Sleep(time.Second)
	}
}

// auditCount counts the requests of benchUser received between from and to
// in the audit log at path: all of them, those that are not watches, and
// by verb and resource (the leader election's renewals, through a client
// of their own, marked). A watch is logged when its response starts, any
// other request when it completes.
func auditCount(b *testing.B, path string, from, to time.Time) (total, nonWatch int, by map[string]int) {
	f, err := os.Open(path)
	must(b, err)
	defer f.Close()
	by = map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Stage string `json:"stage"`
			Verb  string `json:"verb"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != benchUser {
			continue
		}
		if ev.Received.Before(from) || ev.Received.After(to) {
			continue
		}
		if (ev.Verb == "watch" && ev.Stage != "ResponseStarted") || (ev.Verb != "watch" && ev.Stage != "ResponseComplete") {
			continue
		}
		total++
		if ev.Verb != "watch" {
			nonWatch++
		}
		k := ev.Verb + " " + ev.ObjectRef.Resource
		if strings.HasSuffix(ev.UserAgent, "/leader-election") {
			k += " (leader election)"
		}
		by[k]++
	}
	must(b, sc.Err())
	return total, nonWatch, by
}

// procCPU returns the CPU time (user and system) process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	// Fields after the command (in parentheses, which may hold spaces):
	// state is field 3; utime and stime are 14 and 15, in clock ticks
	// (100 per second on Linux).
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procRSS returns the resident memory of process pid in bytes.
func procRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(b, err)
	for l := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			must(b, err)
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status: no VmRSS", pid)
	return 0
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// heapInuse returns the controller's heap in use (go_memstats_heap_inuse_bytes
// on its /metrics at addr) after a collection, and, when
// FENCEKIT_HEAP_PROFILE_DIR is set, saves its heap profile there as name
// (go tool pprof -sample_index=inuse_space reads it).
func heapInuse(b *testing.B, addr, token, name string) int64 {
	get := func(path string) []byte {
		code, body := scrape(b, addr, path, token)
		if code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, code, body)
		}
		return []byte(body)
	}
	prof := get("/debug/pprof/heap?gc=1") // collects first
	if dir := os.Getenv("FENCEKIT_HEAP_PROFILE_DIR"); dir != "" {
		must(b, os.WriteFile(filepath.Join(dir, name), prof, 0o644))
		b.Logf("heap profile: %s", filepath.Join(dir, name))
	}
	for l := range strings.Lines(string(get("/metrics"))) {
		if v, ok := strings.CutPrefix(l, "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			must(b, err)
			return int64(f)
		}
	}
	b.Fatal("no go_memstats_heap_inuse_bytes on /metrics")
	return 0
}

// leaderRequests counts the leader election's requests in by (auditCount).
func leaderRequests(by map[string]int) int {
	n := 0
	for k, v := range by {
		if strings.HasSuffix(k, "(leader election)") {
			n += v
		}
	}
	return n
}
