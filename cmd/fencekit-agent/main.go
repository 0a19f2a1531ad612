// Command fencekit-agent is the node agent of fencing without a BMC, run on
// every node by a DaemonSet (deploy/agent.yaml) beside the node's hardware
// watchdog:
//
//   - with --sbd-devices, it watches the node's slot on the SBD devices
//     (shared disks or shared files) and obeys their messages, as sbd's
//     watcher does (drivers/sbd.Watcher);
//   - with --self-fence-timeout, it fences the node itself once it has not
//     reached the API server or its quorum of peers (itself and the agents
//     it reaches, more than half of them) for that long, counted from its
//     last look that did: it stops kicking the watchdog, which resets the
//     machine (nodeagent.Guard). It does not while the node reaches the
//     API server or a majority, unless its looks take more than two
//     intervals (an agent starved of CPU).
//
// The API server is reached by renewing the agent's Lease
// (fencekit-agent-NODE in its namespace), which also tells the peers where
// its heartbeats are served, says what the agent runs with (its timings,
// the peers it counts its quorum among, its boot, whether it still guards
// the node) and reports on the fence requests standing for other nodes
// (how long since it saw each, and since it last heard that node): what a
// controller counts a node off on (kube/agentfence). The peers are the
// other agents' Leases (or --peers). Heartbeats are signed, and
// acknowledged, with an HMAC under the agents' shared secret
// (--peer-secret-file). The agent keeps its state in --state-dir (the
// host's /run), so that a restarted agent goes on where the last one
// stopped; a clean stop disarms the watchdog only once its Lease says so.
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
	"os"
	"os/signal"
	"syscall"
	"time"
)

type options struct {
	node, namespace, kubeconfig string
	listen, peers, secretFile   string
	metrics, metricsCertDir     string
	metricsSecure               bool
	selfFence, interval         time.Duration
	watchdog                    string
	watchdogTimeout             time.Duration
	sbdDevices                  string
	logLevel                    string
	stateDir                    string
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
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve --metrics-bind-address over HTTPS, to a bearer token the API server accepts (TokenReview) whose user may get /metrics (SubjectAccessReview, such as the ClusterRole fencekit-metrics-reader of deploy/metrics-reader.yaml); false serves plain HTTP to anyone who reaches the node")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "directory of the metrics server's certificate, tls.crt and tls.key, reloaded when they change; empty: a self-signed certificate made at start")
	fs.DurationVar(&o.selfFence, "self-fence-timeout", 0, "fence the node itself once it has lost the API server and its quorum of peers this long (0: never)")
	fs.DurationVar(&o.interval, "interval", time.Second, "how often the agent looks and kicks the watchdog")
	fs.StringVar(&o.watchdog, "watchdog", "/dev/watchdog", "the watchdog device, or sim:FILE, a simulated one for tests whose state is written to FILE")
	fs.DurationVar(&o.watchdogTimeout, "watchdog-timeout", 15*time.Second, "the watchdog's timeout")
	fs.StringVar(&o.sbdDevices, "sbd-devices", "", "the SBD devices (disks or shared files), comma-separated, whose messages the node obeys")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.stateDir, "state-dir", "/run/fencekit-agent", "where the agent keeps its state for its next run in this boot (the host's /run: gone at the next boot)")
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
	case o.watchdogTimeout <= 0 || o.watchdogTimeout%time.Second != 0:
		return bad("watchdog-timeout", fmt.Sprintf("%v: want whole seconds, as a watchdog device counts them", o.watchdogTimeout))
	case o.interval < 10*time.Millisecond || 3*o.interval > o.watchdogTimeout:
		return bad("interval", fmt.Sprintf("%v: want at least 10ms (each interval reads the API server and the peers) and at most a third of the watchdog's timeout (%v), so that a late kick (a look may take an interval) never resets a healthy node", o.interval, o.watchdogTimeout))
	case o.selfFence > 0 && o.selfFence < 3*o.interval:
		return bad("self-fence-timeout", fmt.Sprintf("%v: want at least three intervals (%v)", o.selfFence, 3*o.interval))
	case o.selfFence > 0 && o.listen == "":
		return bad("listen", "required with --self-fence-timeout: the peers' heartbeats")
	case o.selfFence > 0 && o.secretFile == "":
		return bad("peer-secret-file", "required with --self-fence-timeout: heartbeats without it could keep a cut-off node from fencing itself")
	case o.selfFence > 0 && o.namespace == "":
		return bad("namespace", "required: the agents' Leases and the fence requests are there")
	case o.metricsCertDir != "" && !o.metricsSecure:
		return bad("metrics-cert-dir", "a certificate without --metrics-secure")
	case o.selfFence > 0 && o.stateDir == "":
		return bad("state-dir", "required with --self-fence-timeout: a restarted agent must go on from its state, not start its countdown again")
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
