// Command controller is the fencekit fence controller as a program to run
// in a cluster: it fences the nodes that stay not ready, step by step
// (isolation, power management, recovery), as their fence ConfigMaps say,
// and keeps each node's fencing in a NodeFence custom resource.
//
//	go run ./cmd/fencekit-controller --kubeconfig ~/.kube/config --namespace fencekit-system
//
// It wires the ports of package fence/controller to the Kubernetes
// adapters of package kube/fencekube, on a controller-runtime manager
// (package kube/fencectrl): node health from its Node cache, NodeFence
// records through its typed client, the fence ConfigMaps
// (fence-config-<node>, fence-method-<method>-<node>,
// fence-method-template-<name>) of --namespace, the pod treatment
// (--pod-treatment: the out-of-service taint, or pod deletion), events on
// the Node objects, and leader election on a Lease. The policy gate is
// package policy's (--policy-file, default its defaults: a storm guard,
// one fencing in flight, one control-plane node at a time); --ceph-cluster
// adds the Ceph fence-group gate of package fencegroup, fed by the ceph
// command. --kdump-listen starts a fence_kdump listener (package
// fence/kdump) that holds off the power fencing of a node dumping its
// kernel; the nodes' InternalIP and ExternalIP addresses tell which node a
// message comes from. Every driver is built in: agent, apc, brocade, eaton,
// fake, ipmi, redfish.
//
// deploy/ holds the manifests (kubectl apply -k deploy/): the CRD, the RBAC
// the program needs and no more, and a Deployment of two replicas under
// leader election.
//
// # Flags
//
// Every flag has a default; -h lists them. The usual ones:
//
//	--kubeconfig FILE             empty: $KUBECONFIG, else the in-cluster configuration
//	--namespace NS                the fence ConfigMaps' namespace ($POD_NAMESPACE, else default)
//	--identity NAME               this instance's name ($POD_NAME, else the host name)
//	--leader-elect                true; --leader-election-namespace, --leader-election-name
//	--unhealthy-after 1m          not ready this long: fenced
//	--interval 10s                time between passes; node changes wake the controller earlier
//	--power-delay 5m              isolated and still not ready this long: power management
//	--poll-interval, --max-polls  readiness polls after power management
//	--max-retries, --retry-backoff, --job-timeout
//	--pods-timeout 2m             a power-fenced node stays off until its pods are gone, this long at most
//	--pod-treatment taint|delete
//	--policy-file FILE            package policy's Config, YAML or JSON
//	--kdump-listen :7410          empty: off; --kdump-stale, --kdump-timeout
//	--ceph-cluster NAME           empty: off; --ceph-command, --ceph-conf, --ceph-id, --ceph-keyring
//	--kube-api-qps 50, --kube-api-burst 200  the client's rate limits (a rack fenced at once fits the burst)
//	--metrics-bind-address :8080  Prometheus /metrics (package promfence); empty: off
//	--health-probe-bind-address :8081  /healthz (the leader's loop passes) and /readyz (caches synced); empty: off
//	--log-level info, --log-format json|text
//
// # Exit status
//
// 0 after SIGTERM or SIGINT once the workers stopped (within
// --shutdown-timeout); 2 for a bad flag or policy file, with a message
// naming the flag and the field; 1 for anything else: no cluster
// configuration, an informer that did not sync within --sync-timeout (the
// message says which resource and what the API server answered, usually a
// missing CRD or RBAC rule), a lost lease (the pod restarts and stands
// for election again).
//
// The program collects its garbage sooner than Go's default (GOGC=25
// unless the environment sets GOGC): its resident memory stays near what
// its caches keep.
//
// Logs are slog records on standard error, JSON by default; they never hold
// credentials (the fence configuration's passwords stay in the devices'
// parameters).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// gcPercent is the program's GOGC unless the environment sets one: the
// heap may grow a quarter past what the caches keep before a collection,
// not the whole of it (Go's default, 100). The controller keeps about
// 1.5 KiB a node and allocates little once synced: at 5,000 nodes this
// saved about 7 MiB of resident memory (1.7 KiB a node in all) for 1 to
// 3 ms of CPU a second (BENCHMARKS.md). GOGC=100 restores Go's default.
const gcPercent = 25

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// realMain is the program: args without the program's name. Usage, errors
// and logs go to stderr. It returns the exit status.
func realMain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = o.loadPolicy()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun %s -h for the flags.\n", prog, err, prog)
		return exitUsage
	}
	cfg, err := restConfig(o.Kubeconfig, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFail
	}
	// Once, before any goroutine of client-go: klog's global logger
	// (client-go's logs without a context) and controller-runtime's write
	// as run's logger does.
	global := newLogger(stderr, o.LogFormat, o.LogLevel)
	klog.SetSlogLogger(global)
	ctrllog.SetLogger(logr.FromSlogHandler(global.Handler()))
	if err := run(ctx, cfg, o, stderr); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFail
	}
	return exitOK
}

// restConfig returns the API server's configuration: from the kubeconfig
// file when one is named (by the flag or $KUBECONFIG, a list of files),
// else the in-cluster configuration of the pod's service account.
func restConfig(kubeconfig string, getenv func(string) string) (*rest.Config, error) {
	env := getenv(clientcmd.RecommendedConfigPathEnvVar)
	if kubeconfig == "" && env == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig, Precedence: filepath.SplitList(env)}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		where := kubeconfig
		if where == "" {
			where = "$KUBECONFIG " + env
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", where, err)
	}
	return cfg, nil
}
