// Command fencekit-agent is the node agent of fencing without a BMC, run on
// every node by a DaemonSet (deploy/agent.yaml) beside the node's hardware
// watchdog:
//
//   - with --sbd-devices, it watches the node's slot on the SBD devices
//     (shared disks or shared files) and obeys their messages, as sbd's
//     watcher does (drivers/sbd.Watcher);
//   - with --self-fence-timeout, it fences the node itself once it has lost
//     the API server and its quorum of peers (itself and the agents it
//     reaches, no more than half of them) for that long: it stops kicking
//     the watchdog, which resets the machine (nodeagent.Guard). It never
//     does so while the node reaches the API server or a majority.
//
// The API server is reached by renewing the agent's Lease
// (fencekit-agent-NODE in its namespace), which also tells the peers where
// its heartbeats are served; the peers are the other agents' Leases (or
// --peers). Heartbeats are acknowledged with an HMAC under the agents'
// shared secret (--peer-secret-file).
//
//	fencekit-agent --node=$(NODE_NAME) --namespace=fencekit-system \
//	  --self-fence-timeout=60s --watchdog=/dev/watchdog --watchdog-timeout=15s \
//	  --listen=$(NODE_IP):9740 --peer-secret-file=/etc/fencekit-agent/secret
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/nodeagent"
)

// Annotations and labels of the agents' Leases.
const (
	leasePrefix       = "fencekit-agent-"
	leaseLabel        = "app.kubernetes.io/name"
	leaseLabelValue   = "fencekit-agent"
	addressAnnotation = "fencekit.io/heartbeat-address"
	// unheardAnnotation says, at each renewal, how long (in seconds, by
	// the agent's monotonic clock) each peer's heartbeat has not come:
	// "node-b=0.4,node-c=31.0", for an operator looking at a partition.
	unheardAnnotation = "fencekit.io/unheard"
)

// peersRefresh is how often the peers are read again from their Leases
// (at every look while none is known).
const peersRefresh = 10 * time.Second

// exitSelfFenced is the exit status once the node fenced itself and the
// agent was asked to stop (its watchdog left armed).
const exitSelfFenced = 3

type options struct {
	node, namespace, kubeconfig string
	listen, peers, secretFile   string
	metrics                     string
	selfFence, interval         time.Duration
	watchdog                    string
	watchdogTimeout             time.Duration
	sbdDevices                  string
	logLevel                    string
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("fencekit-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.node, "node", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the agents' namespace, where their Leases are (default $POD_NAMESPACE)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the in-cluster configuration)")
	fs.StringVar(&o.listen, "listen", "", "address the peers' heartbeats are served at (host:port, the node's address)")
	fs.StringVar(&o.peers, "peers", "", "the peers, NODE=HOST:PORT,... (default: the other agents' Leases)")
	fs.StringVar(&o.secretFile, "peer-secret-file", "", "file holding the agents' shared secret (at least 16 bytes)")
	fs.StringVar(&o.metrics, "metrics-bind-address", "", "address of /metrics (empty: none)")
	fs.DurationVar(&o.selfFence, "self-fence-timeout", 0, "fence the node itself once it has lost the API server and its quorum of peers this long (0: never)")
	fs.DurationVar(&o.interval, "interval", time.Second, "how often the agent looks and kicks the watchdog")
	fs.StringVar(&o.watchdog, "watchdog", "/dev/watchdog", "the watchdog device, or sim:FILE, a simulated one for tests whose state is written to FILE")
	fs.DurationVar(&o.watchdogTimeout, "watchdog-timeout", 15*time.Second, "the watchdog's timeout")
	fs.StringVar(&o.sbdDevices, "sbd-devices", "", "the SBD devices (disks or shared files), comma-separated, whose messages the node obeys")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	bad := func(flag, why string) (*options, error) { return nil, fmt.Errorf("--%s: %s", flag, why) }
	switch {
	case fs.NArg() > 0:
		return bad(fs.Arg(0), "not a flag")
	case o.node == "":
		return bad("node", "required (or $NODE_NAME)")
	case o.selfFence == 0 && o.sbdDevices == "":
		return bad("self-fence-timeout", "the agent has nothing to do: give it --self-fence-timeout, --sbd-devices or both")
	case o.selfFence < 0:
		return bad("self-fence-timeout", "negative")
	case o.interval <= 0 || o.interval > o.watchdogTimeout/2:
		return bad("interval", fmt.Sprintf("%v: want more than 0 and at most half the watchdog's timeout (%v), so that a late kick never resets a healthy node", o.interval, o.watchdogTimeout))
	case o.selfFence > 0 && o.selfFence < 3*o.interval:
		return bad("self-fence-timeout", fmt.Sprintf("%v: want at least three intervals (%v)", o.selfFence, 3*o.interval))
	case o.selfFence > 0 && o.listen == "":
		return bad("listen", "required with --self-fence-timeout: the peers' heartbeats")
	case o.selfFence > 0 && o.secretFile == "":
		return bad("peer-secret-file", "required with --self-fence-timeout: heartbeats without it could keep a cut-off node from fencing itself")
	case o.selfFence > 0 && o.peers == "" && o.namespace == "":
		return bad("namespace", "required to find the peers (or --peers)")
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run runs the agent until ctx ends; it returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencekit-agent: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "fencekit-agent: --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})).With("node", o.node)
	a, err := newAgent(o, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	return a.run(ctx)
}

type agent struct {
	o      *options
	log    *slog.Logger
	client kubernetes.Interface
	hb     *nodeagent.Heartbeats
	hw     nodeagent.Watchdog
	static []nodeagent.Peer

	mu     sync.Mutex
	peers  []nodeagent.Peer // the last ones known
	start  time.Time
	lease  *coordinationv1.Lease // the Lease as last written
	learnt bool                  // the peers were read from the API server once
	listed time.Time             // when they were last read

	apiUp, reached, known, cut, fenced prometheus.Gauge
	kicks                              prometheus.Counter
	reg                                *prometheus.Registry
}

func newAgent(o *options, log *slog.Logger) (*agent, error) {
	a := &agent{o: o, log: log, reg: prometheus.NewRegistry(), start: time.Now()}
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
	if o.selfFence > 0 {
		secret, err := os.ReadFile(o.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--peer-secret-file: %w", err)
		}
		secret = []byte(strings.TrimSpace(string(secret)))
		if len(secret) < 16 {
			return nil, fmt.Errorf("--peer-secret-file %s: %w", o.secretFile, nodeagent.ErrWeakSecret)
		}
		a.hb = &nodeagent.Heartbeats{Node: o.node, Secret: secret, Client: &http.Client{Timeout: o.interval}}
		cfg, err := clientConfig(o.kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg.Timeout = o.interval
		// A renewal every interval, the peers listed now and then: never
		// held up by the client's own rate limit.
		cfg.QPS, cfg.Burst = 20, 40
		if a.client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	var err error
	if path, ok := strings.CutPrefix(o.watchdog, "sim:"); ok {
		a.hw = nodeagent.NewSimWatchdog(o.watchdogTimeout, path)
	} else if a.hw, err = sbd.OpenLinuxWatchdog(o.watchdog, o.watchdogTimeout); err != nil {
		return nil, fmt.Errorf("--watchdog: %w", err)
	}
	a.hw = countingWatchdog{a.hw, a.kicks}
	return a, nil
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
}

func (w countingWatchdog) Kick() error {
	err := w.Watchdog.Kick()
	if err == nil {
		w.kicks.Inc()
	}
	return err
}

func (a *agent) run(ctx context.Context) int {
	o := a.o
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
		if err := serve(ctx, o.metrics, mux); err != nil {
			a.log.Error("metrics", "err", err)
			return 1
		}
	}
	var guards []func(context.Context, nodeagent.Watchdog) error
	if o.selfFence > 0 {
		if err := serve(ctx, o.listen, a.hb); err != nil {
			a.log.Error("heartbeats", "err", err)
			return 1
		}
		guards = append(guards, func(ctx context.Context, wd nodeagent.Watchdog) error {
			g := &nodeagent.Guard{Look: a.look, Watchdog: wd, Logger: a.log,
				Options: nodeagent.Options{Timeout: o.selfFence, Interval: o.interval},
				Observe: func(c nodeagent.Check, since time.Time) {
					a.log.Debug("looked", "api", c.API, "reached", c.Reached, "peers", c.Peers, "unknown", c.Unknown)
					a.reached.Set(float64(c.Reached))
					a.known.Set(float64(c.Peers))
					if since.IsZero() {
						a.cut.Set(0)
					} else {
						a.cut.Set(time.Since(since).Seconds())
					}
				}}
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
	a.log.Info("fencekit agent started", "selfFenceTimeout", o.selfFence, "sbdDevices", o.sbdDevices, "interval", o.interval, "watchdogTimeout", o.watchdogTimeout)
	for range guards {
		err := <-errs
		switch {
		case errors.Is(err, nodeagent.ErrSelfFenced):
			a.fenced.Set(1)
			a.log.Error("the node fenced itself: its watchdog resets it", "err", err)
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

// look renews the agent's Lease (the API server reached), learns the peers
// from the other agents' Leases, and sends them its heartbeat.
func (a *agent) look(ctx context.Context) nodeagent.Check {
	// The Lease and the heartbeats at once: each may take the interval.
	var c nodeagent.Check
	api := make(chan bool, 1)
	go func() {
		err := a.renew(ctx)
		if err != nil {
			a.log.Debug("renewing the agent's Lease failed", "err", err)
		}
		api <- err == nil
	}()
	peers := a.static
	if len(peers) == 0 {
		a.mu.Lock()
		// An agent that knows no peer yet (it started first, or has not
		// reached the API server) has no quorum: it could be any one of a
		// cluster it has not seen.
		peers, c.Unknown = a.peers, !a.learnt || len(a.peers) == 0
		a.mu.Unlock()
	}
	c.Peers = len(peers)
	c.Reached = a.hb.Send(ctx, peers)
	c.API = <-api
	if c.API {
		a.apiUp.Set(1)
		a.mu.Lock()
		due := len(a.static) == 0 && (len(a.peers) == 0 || time.Since(a.listed) >= peersRefresh)
		a.mu.Unlock()
		if due {
			a.refreshPeers(ctx)
		}
	} else {
		a.apiUp.Set(0)
	}
	return c
}

// renew renews the agent's Lease: one update of the copy it holds, or a
// read (or a create) first when it holds none or the update conflicted.
func (a *agent) renew(ctx context.Context) error {
	leases := a.client.CoordinationV1().Leases(a.o.namespace)
	name := leasePrefix + a.o.node
	now := metav1.NewMicroTime(time.Now())
	secs := int32(max(1, int(a.o.selfFence/time.Second)))
	a.mu.Lock()
	l := a.lease
	a.mu.Unlock()
	if l == nil {
		got, err := leases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			got, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{leaseLabel: leaseLabelValue},
					Annotations: map[string]string{addressAnnotation: a.o.listen}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &a.o.node, LeaseDurationSeconds: &secs, RenewTime: &now},
			}, metav1.CreateOptions{})
			if err == nil {
				a.keep(got)
			}
			return err
		case err != nil:
			return err
		}
		l = got
	}
	l = l.DeepCopy()
	l.Spec.RenewTime, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &now, &a.o.node, &secs
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[addressAnnotation] = a.o.listen
	l.Annotations[unheardAnnotation] = a.unheard()
	got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		a.keep(nil) // read again next time
		return err
	}
	a.keep(got)
	return nil
}

func (a *agent) keep(l *coordinationv1.Lease) {
	a.mu.Lock()
	a.lease = l
	a.mu.Unlock()
}

// unheard says how long each known peer's heartbeat has not come (since
// the agent started, for one never heard).
func (a *agent) unheard() string {
	heard := a.hb.Heard()
	a.mu.Lock()
	peers := append(slices.Clone(a.static), a.peers...)
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
	l, err := a.client.CoordinationV1().Leases(a.o.namespace).List(ctx, metav1.ListOptions{LabelSelector: leaseLabel + "=" + leaseLabelValue})
	if err != nil {
		return
	}
	var peers []nodeagent.Peer
	for _, it := range l.Items {
		node, ok := strings.CutPrefix(it.Name, leasePrefix)
		addr := it.Annotations[addressAnnotation]
		if !ok || node == a.o.node || addr == "" {
			continue
		}
		if r := it.Spec.RenewTime; r == nil || time.Since(r.Time) > 10*a.o.selfFence+time.Hour {
			// An agent gone for good (its node removed): not a peer.
			continue
		}
		peers = append(peers, nodeagent.Peer{Name: node, Addr: addr})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The list only grows (an address may change): a peer gone from the
	// API server still counts in the quorum, so that the agent never
	// takes fewer peers for a majority than it once knew.
	for _, old := range a.peers {
		if !slices.ContainsFunc(peers, func(p nodeagent.Peer) bool { return p.Name == old.Name }) {
			peers = append(peers, old)
		}
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	a.peers, a.learnt, a.listed = peers, true, time.Now()
}

// serve serves h at addr until ctx ends.
func serve(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
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
