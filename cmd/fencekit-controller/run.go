package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/policy"
	"github.com/fencekit/fencekit/promfence"
)

// runInfo is what run started, for tests.
type runInfo struct {
	Controller *controller.Controller
	// KdumpAddr is the fence_kdump listener's address, nil when it is off.
	KdumpAddr net.Addr
	// Book is the kdump address book, nil when kdump is off.
	Book *kdump.AddressBook
	// MetricsAddr and ProbeAddr are the /metrics and probe listeners'
	// addresses, nil when off.
	MetricsAddr, ProbeAddr net.Addr
}

// newLogger returns the program's logger: JSON or text records on w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, ho))
	}
	return slog.New(slog.NewJSONHandler(w, ho))
}

// run is the controller program once its options are read: it builds the
// ports of fence/controller over the API server cfg points at (node health,
// the NodeFence store, the fence ConfigMaps of o.Namespace, the pod
// treatment, events, the policy gate, the kdump listener), waits for their
// first read, then runs the controller, under the lease when
// o.LeaderElect is set, until ctx ends. Logs go to logOut.
//
// It returns nil when ctx ended (a signal) and the workers stopped within
// o.ShutdownTimeout; an error when the start failed (an informer that
// does not sync names the resource and the API server's answer, usually a
// missing CRD or RBAC rule), when the lease was lost (the process should
// exit and start again), or when the workers did not stop in time.
func run(ctx context.Context, cfg *rest.Config, o options, logOut io.Writer) error {
	logger := newLogger(logOut, o.LogFormat, o.LogLevel)
	// client-go logs (watches, leader election) through the klog logger of
	// its context: the same handler. (realMain sends klog's global logger
	// there too, for the rest.)
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(logger.Handler()))

	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = prog
	}
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	logger.Info("fencekit controller starting", "identity", o.Identity, "namespace", o.Namespace,
		"leaderElect", o.LeaderElect, "podTreatment", o.PodTreatment, "unhealthyAfter", o.UnhealthyAfter.String(),
		"interval", o.Interval.String(), "powerDelay", o.PowerDelay.String(), "kdumpListen", o.KdumpListen,
		"cephCluster", o.CephCluster)

	// Everything started below stops when run returns.
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()

	gate, err := buildGate(ctx, o, logger, &bg)
	if err != nil {
		return err
	}

	events := fencekube.NewEvents(client, fencekube.EventsOptions{Host: o.Identity, Logger: logger})
	defer events.Shutdown()
	health := fencekube.NewHealth(client)
	store := fencekube.NewStore(dyn, fencekube.StoreOptions{Logger: logger, Events: events})
	// The credentials methods name instead of holding them
	// (password_secret=NAME/KEY), from the Secrets of the namespace.
	var secrets *fencekube.Secrets
	configOpts := fencekube.ConfigOptions{}
	if o.Secrets {
		secrets = fencekube.NewSecrets(client, o.Namespace)
		configOpts.Secrets = secrets
	}
	// The drivers the methods may name: those registered at init, and bmh,
	// which fences a metal3 BareMetalHost through its operator with this
	// program's client.
	drivers, err := driverRegistry(dyn)
	if err != nil {
		return err
	}
	configOpts.Registry = drivers
	config := fencekube.NewConfigSource(client, o.Namespace, configOpts)

	var pods controller.Pods
	switch o.PodTreatment {
	case "delete":
		pods = &fencekube.DeletePods{Client: client, Logger: logger}
	default:
		pods = &fencekube.TaintPods{Client: client, Logger: logger}
	}

	ctl := &controller.Controller{
		Health: health, Store: store, Config: config, Pods: pods, Events: events, Gate: gate,
		// The fencings admitted, shared with every other replica through a
		// Lease beside the leader's: the gates count them all, even while
		// two replicas act at once (a lease handover).
		Admissions: fencekube.NewAdmissions(client, o.LeaderElectionNamespace, fencekube.DefaultAdmissionsLease),
		Registry:   drivers,
		Logger:     logger,
		Options: controller.Options{
			Identity: o.Identity, UnhealthyAfter: o.UnhealthyAfter, Interval: o.Interval,
			Flow: o.flow(), MaxWorkers: o.MaxWorkers,
		},
	}
	info := runInfo{Controller: ctl}
	// With --remediation, the nodes to fence are those NodeFenceRemediation
	// objects ask for: the controller's own Ready timer starts nothing.
	var rems *fencekube.Remediations
	if o.Remediation {
		rems = fencekube.NewRemediations(dyn, fencekube.RemediationOptions{
			Namespace: o.RemediationNamespace, Store: store, Health: health, Logger: logger})
		rems.OnChange(func(string) { ctl.Wake() })
		ctl.Requests = rems
	}
	// Metrics: attempts and durations (the controller's Observer), gate
	// refusals, nodes by step and status; probes: the leader's loop alive,
	// the caches synced.
	reg := prometheus.NewRegistry()
	metrics := promfence.New(reg, promfence.Options{})
	ctl.Observer = metrics
	if ctl.Gate != nil {
		ctl.Gate = metrics.Gate(ctl.Gate)
	}
	metrics.WatchRecords(store.List)
	prb := &probes{ctl: ctl, interval: o.Interval}
	if info.MetricsAddr, err = serve(ctx, o.MetricsBindAddress, "--metrics-bind-address", metricsHandler(reg), logger); err != nil {
		return err
	}
	if info.ProbeAddr, err = serve(ctx, o.ProbeBindAddress, "--health-probe-bind-address", probeHandler(prb), logger); err != nil {
		return err
	}
	// The controller is woken by Health's handler, once the informer it
	// reads the nodes from holds a change.
	health.OnChange(ctl.Wake)
	nodes := &nodeWatch{client: client, logger: logger}

	if o.KdumpListen != "" {
		book := &kdump.AddressBook{}
		l, err := kdump.Listen(ctx, o.KdumpListen, kdump.Options{
			Resolve: book.Resolve, Stale: o.KdumpStale, Timeout: o.KdumpTimeout, Logger: logger})
		if err != nil {
			return fmt.Errorf("--kdump-listen: %w", err)
		}
		defer l.Close()
		ctl.Kdump, nodes.book = kdumpHold{l}, book
		info.KdumpAddr, info.Book = l.Addr(), book
		// One Node informer for Health and the address book, run by
		// nodes (Health then starts none of its own).
		nodes.inf = fencekube.NewNodeInformer(client, slimNode)
		health.UseInformer(nodes.inf)
	}

	health.Start(ctx)
	store.Start(ctx)
	config.Start(ctx)
	defer health.Stop()
	defer store.Stop()
	defer config.Stop()
	syncers := []syncer{
		{"Nodes", health.WaitForSync, func(ctx context.Context) error {
			_, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
		{"NodeFences (fencekit.io)", store.WaitForSync, func(ctx context.Context) error {
			_, err := dyn.Resource(fencekube.NodeFenceResource).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
		{"ConfigMaps in namespace " + o.Namespace, config.WaitForSync, func(ctx context.Context) error {
			_, err := client.CoreV1().ConfigMaps(o.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	}
	if rems != nil {
		rems.Start(ctx)
		where := "every namespace"
		if o.RemediationNamespace != "" {
			where = "namespace " + o.RemediationNamespace
		}
		syncers = append(syncers, syncer{"NodeFenceRemediations (fencekit.io) in " + where + " (--remediation)", rems.WaitForSync, func(ctx context.Context) error {
			_, err := dyn.Resource(fencekube.RemediationResource).Namespace(o.RemediationNamespace).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}})
	}
	if secrets != nil {
		secrets.Start(ctx)
		defer secrets.Stop()
		syncers = append(syncers, syncer{"Secrets in namespace " + o.Namespace + " (--secrets)", secrets.WaitForSync, func(ctx context.Context) error {
			_, err := client.CoreV1().Secrets(o.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}})
	}
	// The address book of the kdump listener follows the Nodes through
	// the informer Health reads: one watch of the nodes, not two.
	if nodes.book != nil {
		synced, err := nodes.start(ctx)
		if err != nil {
			return err
		}
		defer func() { cancel(); nodes.wait() }()
		syncers = append(syncers, syncer{"Nodes (addresses)", func(ctx context.Context) error {
			if !cache.WaitFor(ctx, "", synced) {
				return ctx.Err()
			}
			return nil
		}, nil})
	}
	if err := waitForSync(ctx, o.SyncTimeout, syncers); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if _, err := config.Config(ctx); err != nil {
		// Not fatal: the nodes whose configuration is needed are not
		// fenced, with an event, until the ConfigMaps are fixed.
		logger.Warn("the fence configuration does not parse; nothing that needs it is fenced until it is fixed", "namespace", o.Namespace, "error", err)
	}
	logger.Info("caches synced")
	prb.synced.Store(true)

	var stuck error
	work := func(ctx context.Context) {
		prb.leading.Store(time.Now().UnixNano())
		defer prb.leading.Store(0)
		if rems != nil {
			rctx, rcancel := context.WithCancel(ctx)
			rdone := make(chan struct{})
			go func() { defer close(rdone); rems.Run(rctx, 2) }()
			defer func() { rcancel(); <-rdone }()
		}
		if o.started != nil {
			o.started(info)
		}
		stuck = runController(ctx, ctl, o.ShutdownTimeout, logger)
	}
	if !o.LeaderElect {
		logger.Warn("leader election is off: every replica works on every node (the NodeFence store still keeps two from fencing a node twice)")
		work(ctx)
		return stuck
	}
	err = fencekube.RunLeader(ctx, client, fencekube.LeaderOptions{
		Namespace: o.LeaderElectionNamespace, Name: o.LeaderElectionName, Identity: o.Identity,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		OnNewLeader: func(id string) {
			if id != o.Identity {
				logger.Info("another instance leads", "leader", id)
			}
		},
		Logger: logger,
	}, work)
	switch {
	case stuck != nil:
		return stuck
	case ctx.Err() != nil && !errors.Is(err, fencekube.ErrLeadershipLost):
		return nil
	}
	return err
}

// runController runs the controller until ctx ends, then waits for its
// workers at most timeout. A worker in a fence job stops when the job's
// device I/O sees the context end; its record says the job ran, and the
// next leader takes it over (at once with the same identity, else after
// --job-timeout).
func runController(ctx context.Context, ctl *controller.Controller, timeout time.Duration, logger *slog.Logger) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctl.Run(ctx)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	logger.Info("stopping: waiting for the workers", "timeout", timeout.String())
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		logger.Info("workers stopped")
		return nil
	case <-t.C:
		return fmt.Errorf("the workers did not stop within --shutdown-timeout %v; their records resume at the next start", timeout)
	}
}

// syncer is an informer to wait for: its name, its WaitForSync, and a
// probe that reads the resource once, to tell why it did not sync.
type syncer struct {
	what  string
	wait  func(context.Context) error
	probe func(context.Context) error
}

// waitForSync waits for every informer, all within timeout. One that does
// not sync is named, with the API server's answer to a plain read of its
// resource (forbidden, not found) when there is one.
func waitForSync(ctx context.Context, timeout time.Duration, ss []syncer) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, s := range ss {
		if err := s.wait(wctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			msg := fmt.Sprintf("%s not read within --sync-timeout %v", s.what, timeout)
			if s.probe != nil {
				pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
				perr := s.probe(pctx)
				pcancel()
				if perr != nil {
					return fmt.Errorf("%s: %w (is the CRD installed and the RBAC of deploy/rbac.yaml applied?)", msg, perr)
				}
			}
			return fmt.Errorf("%s: %w", msg, err)
		}
	}
	return nil
}

// buildGate returns the policy gate, logged: the policy of o.Policy, then
// the Ceph fence-group gate when o.CephCluster is set, whose health
// refreshes in the background (in bg) until ctx ends.
func buildGate(ctx context.Context, o options, logger *slog.Logger, bg *sync.WaitGroup) (policy.Gate, error) {
	g, err := o.Policy.Gate()
	if err != nil {
		return nil, fmt.Errorf("--policy-file: %w", err)
	}
	if o.CephCluster == "" {
		return policy.Logged(g, logger), nil
	}
	h, err := fencegroup.NewHealth(o.CephCluster, &fencegroup.CLI{
		Path: o.CephCommand, Conf: o.CephConf, ID: o.CephID, Keyring: o.CephKeyring,
	}, fencegroup.HealthOptions{Interval: o.CephInterval, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("--ceph-cluster: %w", err)
	}
	fg, err := fencegroup.NewGate(o.CephCluster, h, fencegroup.GateOptions{})
	if err != nil {
		return nil, fmt.Errorf("--ceph-cluster: %w", err)
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		_ = h.Run(ctx)
	}()
	return policy.Logged(policy.All(g, fg), logger), nil
}
