package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/authhttp"
	"github.com/fencekit/fencekit/nodeagent"
)

// unheardAnnotation says, at each renewal, how long (in seconds, by the
// agent's monotonic clock) each peer's heartbeat has not come:
// "node-b=0.4,node-c=31.0", for an operator looking at a partition.
const unheardAnnotation = "fencekit.io/unheard"

// peersRefresh is how often the peers are read again from their Leases
// (at every look while none is known).
const peersRefresh = 10 * time.Second

// exitSelfFenced is the exit status once the node fenced itself and the
// agent was asked to stop (its watchdog left armed).
const exitSelfFenced = 3

// timings are what the agent runs with (the smaller of its flags and what
// it published before in this boot).
type timings struct {
	selfFence, watchdog, interval time.Duration
}

type agent struct {
	o      *options
	log    *slog.Logger
	client kubernetes.Interface
	hb     *nodeagent.Heartbeats
	hw     nodeagent.Watchdog
	static []nodeagent.Peer
	t      timings
	boot   string
	inc    string
	state  *stateFile
	start  time.Time

	mu         sync.Mutex
	peers      []nodeagent.Peer // known: the static ones, or those read from the Leases
	lists      [][]string       // the peer lists that may stand in the Lease (see stateFile)
	since      time.Time        // the last healthy look, by the boot clock (from the state at start)
	lease      *coordinationv1.Lease
	selfFenced bool                 // this boot's agent fenced the node (kept in the state)
	armed      bool                 // this boot's agent said in its Lease what it runs with (kept in the state)
	guarded    bool                 // an agent of this boot opened the watchdog before this one and did not stop cleanly: it may be armed
	open       bool                 // the watchdog is open, by this agent or an earlier one of this boot (kept in the state)
	lastKick   time.Time            // of the watchdog, by this process's monotonic clock (an open kicks it)
	saveMu     sync.Mutex           // held through each write of the state
	seenIDs    map[string]time.Time // request -> when this run first saw it, kept while the run lasts
	learnt     bool                 // the peers were read from the API server once
	listed     time.Time            // when they were last read
	requests   map[string]seen

	apiUp, reached, known, cut, fenced, requested prometheus.Gauge
	kicks                                         prometheus.Counter
	reg                                           *prometheus.Registry
}

// seen is a fence request this agent has seen, and when it first did.
type seen struct {
	id string
	at time.Time
}

func newAgent(o *options, log *slog.Logger) (*agent, error) {
	a := &agent{o: o, log: log, reg: prometheus.NewRegistry(), start: time.Now(), requests: map[string]seen{}, seenIDs: map[string]time.Time{}}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		a.reg.MustRegister(g)
		return g
	}
	a.apiUp = gauge("fencekit_agent_api_reachable", "1 while the agent renews its Lease on the API server.")
	a.reached = gauge("fencekit_agent_peers_reached", "Peers that acknowledged the last heartbeat.")
	a.known = gauge("fencekit_agent_peers", "Peers known (the cluster's other agents).")
	a.cut = gauge("fencekit_agent_cut_off_seconds", "How long the node has been cut from the API server and its quorum (0 while it is not).")
	a.fenced = gauge("fencekit_agent_self_fenced", "1 once the node fenced itself: the watchdog is kicked no more.")
	a.requested = gauge("fencekit_agent_fence_requests", "Fence requests standing for other nodes, on which this agent reports.")
	a.kicks = prometheus.NewCounter(prometheus.CounterOpts{Name: "fencekit_agent_watchdog_kicks_total", Help: "Kicks of the watchdog."})
	a.reg.MustRegister(a.kicks)

	if o.peers != "" {
		for _, p := range strings.Split(o.peers, ",") {
			name, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
			if _, _, err := net.SplitHostPort(addr); !ok || name == "" || err != nil {
				return nil, fmt.Errorf("--peers: %q: want NODE=HOST:PORT", p)
			}
			if slices.ContainsFunc(a.static, func(q nodeagent.Peer) bool { return q.Name == name }) {
				return nil, fmt.Errorf("--peers: %s named twice: each peer counts once in the quorum", name)
			}
			if name != o.node {
				a.static = append(a.static, nodeagent.Peer{Name: name, Addr: addr})
			}
		}
	}
	a.t = timings{o.selfFence, o.watchdogTimeout, o.interval}
	var b [8]byte
	_, _ = rand.Read(b[:])
	a.inc = hex.EncodeToString(b[:])
	if o.selfFence > 0 {
		boot, _, err := sbd.KernelUptime()
		if err != nil {
			return nil, fmt.Errorf("the node's boot clock (needed to keep the agent's state across its restarts): %w", err)
		}
		a.boot = formatBoot(boot)
		if err := a.restore(); err != nil {
			return nil, err
		}
		secret, err := os.ReadFile(o.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--peer-secret-file: %w", err)
		}
		secret = []byte(strings.TrimSpace(string(secret)))
		if len(secret) < 16 {
			return nil, fmt.Errorf("--peer-secret-file %s: %w", o.secretFile, nodeagent.ErrWeakSecret)
		}
		a.hb = &nodeagent.Heartbeats{Node: o.node, Secret: fence.NewSecret(string(secret)), Client: &http.Client{Timeout: a.t.interval}}
		cfg, err := clientConfig(o.kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg.Timeout = a.t.interval
		// A renewal every interval, the peers listed now and then: never
		// held up by the client's own rate limit.
		cfg.QPS, cfg.Burst = 20, 40
		if a.client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	if len(a.static) > 0 {
		a.peers = a.static
	}
	if a.selfFenced {
		// The watchdog is not opened again: nothing kicks it until the
		// machine is reset.
		return a, nil
	}
	a.lastKick = time.Now() // the open kicks the watchdog
	if path, ok := strings.CutPrefix(o.watchdog, "sim:"); ok {
		a.hw = nodeagent.NewSimWatchdog(a.t.watchdog, path)
	} else {
		// A watchdog an agent of this boot armed stays armed if this one
		// cannot use it: the node may have been counted on it.
		lw, err := sbd.OpenLinuxWatchdogArmed(o.watchdog, a.t.watchdog, a.guarded)
		if err != nil {
			return nil, fmt.Errorf("--watchdog: %w", err)
		}
		err = checkWatchdog(lw, o.selfFence > 0)
		if err == nil && lw.Timeout() < 3*a.t.interval {
			err = fmt.Errorf("the watchdog runs with a timeout of %v, less than three intervals (%v)", lw.Timeout(), a.t.interval)
		}
		if err != nil {
			_ = lw.Close(!a.guarded)
			return nil, fmt.Errorf("--watchdog %s: %w", o.watchdog, err)
		}
		// What the device runs with (never more than asked) is what the
		// Lease says.
		a.t.watchdog = lw.Timeout()
		a.hw = lw
	}
	a.hw = countingWatchdog{a.hw, a.kicks, a}
	if o.selfFence > 0 {
		a.open = true
		if err := a.save(); err != nil {
			_ = a.hw.Close(!a.guarded)
			return nil, err
		}
	}
	return a, nil
}

// abandon closes the watchdog when the agent cannot run: disarmed, unless
// an earlier agent of this boot had it guarding the node.
func (a *agent) abandon() {
	if a.hw != nil {
		_ = a.hw.Close(!a.guarded)
	}
}

// checkWatchdog refuses a watchdog a proof by time cannot count on: one
// that stops when the agent dies (no magic close).
func checkWatchdog(w *sbd.LinuxWatchdog, selfFence bool) error {
	if selfFence && !w.MagicClose() {
		return fmt.Errorf("the watchdog %q stops at any close (its driver has no magic close): a node whose agent died would be left unguarded", w.Identity())
	}
	return nil
}

func formatBoot(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// bootClock is the kernel's CLOCK_BOOTTIME as a time: it counts a
// suspended machine's time, and no setting of the wall clock moves it.
// Read once at the start (sbd.KernelUptime), it does not fail later; if it
// ever did, the time would read as far ahead, and the node fence itself.
func bootClock() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Unix(1<<40, 0)
	}
	return time.Unix(0, ts.Nano())
}

func clientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}

type countingWatchdog struct {
	nodeagent.Watchdog
	kicks prometheus.Counter
	a     *agent
}

func (w countingWatchdog) Kick() error {
	err := w.Watchdog.Kick()
	if err == nil {
		w.kicks.Inc()
		w.a.mu.Lock()
		w.a.lastKick = time.Now()
		w.a.mu.Unlock()
	}
	return err
}

func (a *agent) run(ctx context.Context) int {
	o := a.o
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.metrics != "" {
		h, tlsConfig, err := a.metricsHandler(ctx)
		if err == nil {
			err = serve(ctx, o.metrics, h, tlsConfig)
		}
		if err != nil {
			a.log.Error("metrics", "err", err)
			a.abandon()
			return 1
		}
	}
	if a.selfFenced {
		a.fenced.Set(1)
		a.log.Error("an agent of this boot fenced the node: its watchdog is kicked no more, and resets the machine")
		<-ctx.Done()
		return exitSelfFenced
	}
	var guards []func(context.Context, nodeagent.Watchdog) error
	if o.selfFence > 0 {
		if err := serve(ctx, o.listen, a.hb); err != nil {
			a.log.Error("heartbeats", "err", err)
			a.abandon()
			return 1
		}
		guards = append(guards, func(ctx context.Context, wd nodeagent.Watchdog) error {
			a.mu.Lock()
			since := a.since
			a.mu.Unlock()
			g := &nodeagent.Guard{Look: a.look, Watchdog: wd, Logger: a.log, Now: bootClock,
				Options: nodeagent.Options{Timeout: a.t.selfFence, Interval: a.t.interval, Since: since},
				Observe: a.observe, Disarm: a.disarm, Armed: a.isArmed, Fencing: a.fencing}
			return g.Run(ctx)
		})
	}
	if o.sbdDevices != "" {
		guards = append(guards, func(ctx context.Context, wd nodeagent.Watchdog) error {
			w := &sbd.Watcher{Devices: strings.Split(o.sbdDevices, ","), Node: o.node, Watchdog: wd, Logger: a.log}
			err := w.Run(ctx)
			if errors.Is(err, sbd.ErrSelfFenced) {
				return errors.Join(nodeagent.ErrSelfFenced, err)
			}
			return err
		})
	}
	gate := nodeagent.NewGate(a.hw, len(guards))
	errs := make(chan error, len(guards))
	for i, g := range guards {
		go func() { errs <- g(ctx, gate.Handle(i)) }()
	}
	a.log.Info("fencekit agent started", "selfFenceTimeout", a.t.selfFence, "sbdDevices", o.sbdDevices, "interval", a.t.interval,
		"watchdogTimeout", a.t.watchdog, "incarnation", a.inc)
	for range guards {
		err := <-errs
		switch {
		case errors.Is(err, nodeagent.ErrSelfFenced):
			a.fenced.Set(1)
			a.log.Error("the node fenced itself: its watchdog resets it", "err", err)
			if o.selfFence > 0 {
				a.fencing()
			}
			// Stay: a restarted agent must not kick the watchdog again.
			<-ctx.Done()
			return exitSelfFenced
		case err != nil && ctx.Err() == nil:
			a.log.Error("a guard stopped", "err", err)
			cancel()
			return 1
		}
	}
	return 0
}

// isArmed reports whether the countdown runs: once this boot's agent has
// said in its Lease what it runs with (until then no controller counts
// on it, and a node that never reached the API server in this boot does
// not fence itself over and over).
func (a *agent) isArmed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.armed
}

// fencing keeps on the node that it fenced itself, before the watchdog is
// closed armed: no later agent of this boot opens it again.
func (a *agent) fencing() {
	a.mu.Lock()
	a.selfFenced = true
	a.mu.Unlock()
	if err := a.save(); err != nil {
		a.log.Error("keeping the self-fence in the state failed", "err", err)
	}
}

// observe keeps the metrics and, at a healthy look, the state a restarted
// agent goes on from.
func (a *agent) observe(c nodeagent.Check, last time.Time) {
	a.log.Debug("looked", "api", c.API, "reached", c.Reached, "peers", c.Peers, "unknown", c.Unknown)
	a.reached.Set(float64(c.Reached))
	a.known.Set(float64(c.Peers))
	if c.Healthy() {
		a.cut.Set(0)
		a.mu.Lock()
		a.since = last
		a.mu.Unlock()
		a.save()
	} else {
		a.cut.Set(bootClock().Sub(last).Seconds())
	}
}

// look renews the agent's Lease (the API server reached), learns the peers
// from the other agents' Leases, and sends them its heartbeat. The node
// has its quorum when it has it among every peer list its Lease may hold.
func (a *agent) look(ctx context.Context) nodeagent.Check {
	// The requests, the Lease and the heartbeats at once: each may take
	// the interval. The reports the renewal writes are on the requests
	// read before.
	read := make(chan struct{})
	go func() { a.readRequests(ctx); close(read) }()
	defer func() { <-read }()
	api := make(chan bool, 1)
	go func() {
		err := a.renew(ctx, nodeagent.StateRunning)
		if err != nil {
			a.log.Debug("renewing the agent's Lease failed", "err", err)
		}
		api <- err == nil
	}()
	a.mu.Lock()
	peers := slices.Clone(a.peers)
	a.mu.Unlock()
	acked := a.hb.Send(ctx, peers)
	var c nodeagent.Check
	c.API = <-api
	a.mu.Lock()
	lists := slices.Clone(a.lists)
	a.mu.Unlock()
	// The list that gives the node the least: counted by itself, or by
	// any other its Lease may hold.
	c.Unknown = len(lists) == 0
	for i, l := range lists {
		if len(l) == 0 {
			// An agent that knows no peer (it started first) has no
			// quorum: it could be any one of a cluster it has not seen.
			c.Unknown = true
		}
		r := 0
		for _, p := range l {
			if acked[p] {
				r++
			}
		}
		if i == 0 || !nodeagent.QuorateAmong(acked, l) {
			c.Reached, c.Peers = r, len(l)
		}
	}
	if c.API {
		a.apiUp.Set(1)
		a.mu.Lock()
		due := len(a.static) == 0 && (!a.learnt || len(a.peers) == 0 || time.Since(a.listed) >= peersRefresh)
		a.mu.Unlock()
		if due {
			a.refreshPeers(ctx)
		}
	} else {
		a.apiUp.Set(0)
	}
	return c
}

// disarm says in the Lease that the agent stopped (nothing guards the
// node any more); only then may the watchdog be disarmed. It tries while
// the watchdog's timeout since the last kick, less an interval, lasts, and
// leaves it armed if the Lease never said so.
func (a *agent) disarm() bool {
	// Never past the watchdog's timeout since the last kick, less an
	// interval: the watchdog must not fire while this tries.
	a.mu.Lock()
	fenced, budget := a.selfFenced, a.t.watchdog-time.Since(a.lastKick)-a.t.interval
	a.mu.Unlock()
	if fenced || budget <= 0 {
		a.log.Warn("stopping with the watchdog armed: no time left to say so in the Lease", "fenced", fenced)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		if err = a.renew(ctx, nodeagent.StateStopped); err == nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		a.log.Warn("the agent's Lease could not say it stopped: the watchdog stays armed", "err", err)
		return false
	}
	// No controller counts the node off on a stopped agent's Lease: the
	// next agent may count from its own start.
	a.mu.Lock()
	a.since, a.open = time.Time{}, false
	a.mu.Unlock()
	_ = a.save()
	return true
}

// published is what the agent says of itself, listing peers.
func (a *agent) published(state string, peers []string) string {
	b, _ := json.Marshal(nodeagent.Published{Boot: a.boot, Incarnation: a.inc, State: state,
		SelfFenceTimeout: a.t.selfFence.Seconds(), WatchdogTimeout: a.t.watchdog.Seconds(), Interval: a.t.interval.Seconds(),
		Peers: peers})
	return string(b)
}

// renew reads the fence requests, then renews the agent's Lease with what
// it publishes and its reports on them: one update of the copy it holds,
// or a read (or a create) first when it holds none or the update
// conflicted. The peer list it sends is kept among those that may stand
// in the Lease before it is sent, and becomes the only one once the
// renewal succeeded.
func (a *agent) renew(ctx context.Context, state string) error {
	leases := a.client.CoordinationV1().Leases(a.o.namespace)
	name := nodeagent.LeasePrefix + a.o.node
	a.mu.Lock()
	l := a.lease
	var peers []string
	for _, p := range a.peers {
		peers = append(peers, p.Name)
	}
	sort.Strings(peers)
	if !slices.ContainsFunc(a.lists, func(x []string) bool { return slices.Equal(x, peers) }) {
		a.lists = append(a.lists, peers)
	}
	a.mu.Unlock()
	if err := a.save(); err != nil {
		// What may stand in the Lease must be on the node first.
		return err
	}
	annotate := func(l *coordinationv1.Lease) {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[nodeagent.AddressAnnotation] = a.o.listen
		l.Annotations[nodeagent.AgentAnnotation] = a.published(state, peers)
		l.Annotations[nodeagent.ReportsAnnotation] = a.reports()
		l.Annotations[unheardAnnotation] = a.unheard()
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[nodeagent.LeaseLabel] = nodeagent.LeaseLabelValue
	}
	now := metav1.NewMicroTime(time.Now())
	secs := int32(max(1, int(a.t.selfFence/time.Second)))
	if l == nil {
		got, err := leases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &a.o.node, LeaseDurationSeconds: &secs, RenewTime: &now}}
			annotate(l)
			if err := a.arm(state); err != nil {
				return err
			}
			got, err = leases.Create(ctx, l, metav1.CreateOptions{})
			return a.renewed(got, peers, err)
		case err != nil:
			return err
		}
		l = got
	}
	l = l.DeepCopy()
	l.Spec.RenewTime, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &now, &a.o.node, &secs
	annotate(l)
	if err := a.arm(state); err != nil {
		return err
	}
	got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	return a.renewed(got, peers, err)
}

// arm starts the countdown before the first write that says the agent
// runs: once sent, it may be on the API server whatever its answer, and a
// controller may count on it. It is kept on the node first.
func (a *agent) arm(state string) error {
	a.mu.Lock()
	was := a.armed
	a.armed = a.armed || state == nodeagent.StateRunning
	a.mu.Unlock()
	if was || state != nodeagent.StateRunning {
		return nil
	}
	return a.save()
}

// renewed keeps the outcome of a renewal that listed peers.
func (a *agent) renewed(got *coordinationv1.Lease, peers []string, err error) error {
	a.mu.Lock()
	if err != nil {
		a.lease = nil // read again next time
		a.mu.Unlock()
		return err
	}
	a.lease, a.lists = got, [][]string{peers}
	a.mu.Unlock()
	_ = a.save()
	return nil
}

// readRequests reads the fence requests standing and keeps when each was
// first seen. A failed read keeps what was known.
func (a *agent) readRequests(ctx context.Context) {
	cm, err := a.client.CoreV1().ConfigMaps(a.o.namespace).Get(ctx, nodeagent.RequestsConfigMap, metav1.GetOptions{})
	var data map[string]string
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return
	default:
		data = cm.Data
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for node, s := range a.requests {
		if nodeagent.RequestID(data[node]) != s.id {
			delete(a.requests, node)
		}
	}
	for node, v := range data {
		id := nodeagent.RequestID(v)
		if _, ok := a.requests[node]; !ok && node != a.o.node && id != "" {
			// A request that went and came back counts from when this
			// run first saw it: what it reports never covers less than
			// a controller took it to.
			if _, ok := a.seenIDs[id]; !ok {
				a.seenIDs[id] = now
			}
			a.requests[node] = seen{id: id, at: a.seenIDs[id]}
		}
	}
	a.requested.Set(float64(len(a.requests)))
}

// reports says, for each request seen, how long since this agent first
// saw it and since it last heard the node, at one moment.
func (a *agent) reports() string {
	// The moment first, then what was heard: a heartbeat that comes in
	// between is not left out of what the report says it covers.
	now := time.Now()
	heard := a.hb.Heard()
	a.mu.Lock()
	out := map[string]nodeagent.Report{}
	for node, s := range a.requests {
		last, ok := heard[node]
		if !ok || last.Before(a.start) {
			last = a.start
		}
		out[node] = nodeagent.Report{Request: s.id, SeenFor: now.Sub(s.at).Seconds(), UnheardFor: now.Sub(last).Seconds()}
	}
	a.mu.Unlock()
	b, _ := json.Marshal(out)
	return string(b)
}

// unheard says how long each known peer's heartbeat has not come (since
// the agent started, for one never heard).
func (a *agent) unheard() string {
	heard := a.hb.Heard()
	a.mu.Lock()
	peers := slices.Clone(a.peers)
	a.mu.Unlock()
	now := time.Now()
	var parts []string
	for _, p := range peers {
		at, ok := heard[p.Name]
		if !ok {
			at = a.start
		}
		parts = append(parts, fmt.Sprintf("%s=%.1f", p.Name, now.Sub(at).Seconds()))
	}
	sort.Strings(parts)
	return strings.Join(slices.Compact(parts), ",")
}

func (a *agent) refreshPeers(ctx context.Context) {
	l, err := a.client.CoordinationV1().Leases(a.o.namespace).List(ctx, metav1.ListOptions{LabelSelector: nodeagent.LeaseLabel + "=" + nodeagent.LeaseLabelValue})
	if err != nil {
		return
	}
	var peers []nodeagent.Peer
	for _, it := range l.Items {
		node, ok := strings.CutPrefix(it.Name, nodeagent.LeasePrefix)
		addr := it.Annotations[nodeagent.AddressAnnotation]
		if !ok || node == a.o.node || addr == "" {
			continue
		}
		if r := it.Spec.RenewTime; r == nil || time.Since(r.Time) > 10*a.t.selfFence+time.Hour {
			// An agent gone for good (its node removed): not a peer.
			continue
		}
		peers = append(peers, nodeagent.Peer{Name: node, Addr: addr})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The list is the API server's: an agent whose Lease is gone, or has
	// not been renewed for long, is no longer counted. The node counts
	// its quorum among a new list only once its Lease lists it.
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	a.peers, a.learnt, a.listed = peers, true, time.Now()
}

// metricsHandler returns /metrics and, with --metrics-secure, puts it
// behind the API server's reviews (internal/authhttp: a bearer token it
// accepts, whose user may get /metrics) and returns the TLS configuration
// to serve it with. The agent runs on the node's own network: plain HTTP
// would show the node's view of its peers to anyone who reaches the node.
func (a *agent) metricsHandler(ctx context.Context) (http.Handler, *tls.Config, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
	if !a.o.metricsSecure {
		return mux, nil, nil
	}
	// A client of its own: the look's client times out after an
	// interval, too short for a review the API server may be slow to
	// make.
	cfg, err := clientConfig(a.o.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-secure: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-secure: %w", err)
	}
	host, _, _ := net.SplitHostPort(a.o.metrics)
	t, err := authhttp.TLSConfig(ctx, a.o.metricsCertDir, host)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-cert-dir: %w", err)
	}
	return authhttp.Wrap(mux, authhttp.Options{Client: cs, Logger: a.log}), t, nil
}

// serve serves h at addr until ctx ends, over TLS when tlsConfig is not
// nil.
func serve(ctx context.Context, addr string, h http.Handler, tlsConfig ...*tls.Config) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if len(tlsConfig) > 0 && tlsConfig[0] != nil {
		l = tls.NewListener(l, tlsConfig[0])
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return nil
}
