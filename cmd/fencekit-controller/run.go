package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/internal/authhttp"
	"github.com/fencekit/fencekit/kube/configwebhook"
	"github.com/fencekit/fencekit/kube/fencectrl"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/healthcheck"
	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/kube/nodelease"
	"github.com/fencekit/fencekit/policy"
	"github.com/fencekit/fencekit/promfence"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/etcdv3"
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
	// WebhookAddr is the configuration webhook's address, nil when off;
	// WebhookCA the PEM of its self-signed certificate (nil with
	// --webhook-cert-dir), for a ValidatingWebhookConfiguration's caBundle.
	WebhookAddr net.Addr
	WebhookCA   []byte
}

// newLogger returns the program's logger: JSON or text records on w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, ho))
	}
	return slog.New(slog.NewJSONHandler(w, ho))
}

// run is the controller program once its options are read: a
// controller-runtime manager over the API server cfg points at (its cache,
// its leader election, its event recorder), with the fence controller of
// kube/fencectrl on it (node health, the NodeFence store, the fence
// ConfigMaps of o.Namespace, the pod treatment, the policy gate, the kdump
// listener), until ctx ends. Logs go to logOut. The program serves its own
// /metrics and probes (the manager's are off).
//
// It returns nil when ctx ended (a signal) and the workers stopped within
// o.ShutdownTimeout; an error when the start failed (a cache that does not
// sync names the resource and the API server's answer, usually a missing
// CRD or RBAC rule), when the lease was lost (the process should exit and
// start again), or when the workers did not stop in time.
func run(ctx context.Context, cfg *rest.Config, o options, logOut io.Writer) error {
	logger := newLogger(logOut, o.LogFormat, o.LogLevel)
	// client-go and controller-runtime log through the same handler.
	lr := logr.FromSlogHandler(logger.Handler())
	ctx = klog.NewContext(ctx, lr)

	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = prog
	}
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	logger.Info("fencekit controller starting", "identity", o.Identity, "namespace", o.Namespace,
		"leaderElect", o.LeaderElect, "podTreatment", o.PodTreatment, "unhealthyAfter", o.UnhealthyAfter.String(),
		"interval", o.Interval.String(), "powerDelay", o.PowerDelay.String(), "kdumpListen", o.KdumpListen,
		"cephCluster", o.CephCluster)

	if o.Remediation {
		if o.RemediationNamespace == "" {
			logger.Info("remediations: NodeFenceRemediations are read in every namespace")
		} else {
			logger.Warn("remediations: NodeFenceRemediations are read in one namespace only: one created elsewhere (from a template of another namespace, for a Machine of another namespace) is never seen, and its checker waits",
				"namespace", o.RemediationNamespace)
		}
	}

	// Everything started below stops when run returns.
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()

	gate, err := buildGate(ctx, o, logger, &bg)
	if err != nil {
		return err
	}
	mgr, err := newManager(ctx, cfg, o, lr, logger)
	if err != nil {
		return err
	}
	hc := mgr.GetHTTPClient()
	// The ports' client, and the drivers' and the start's: on the
	// manager's scheme and HTTP client, reading the API server (the
	// manager's cache holds node summaries).
	api, err := crclient.NewWithWatch(cfg, crclient.Options{HTTPClient: hc, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// The drivers the methods may name: those registered at init, and
	// those that work through this program's clients: bmh (a metal3
	// BareMetalHost through its operator), networkfence (CSI-Addons'
	// NetworkFence) and nodeagent (the node agents' word).
	drivers, err := driverRegistry(api)
	if err != nil {
		return err
	}
	var pods controller.Pods
	switch o.PodTreatment {
	case "delete":
		pods = &fencekube.DeletePods{Client: api, Logger: logger}
	default:
		// The pods force-deleted at once (the node is verified off), then
		// the taint once their StatefulSets replaced them
		// (--pod-treatment=taint-only leaves them to the pod garbage
		// collector).
		pods = &fencekube.TaintPods{Client: api, Logger: logger, ForceDelete: o.PodTreatment != "taint-only", LeaseFresh: o.LeaseGrace}
	}
	// Metrics: attempts and durations (the controller's Observer), gate
	// refusals, nodes by step and status; probes: the leader's loop alive,
	// the caches synced.
	etcd, err := o.etcd(logger)
	if err != nil {
		return err
	}
	if etcd != nil {
		defer etcd.Close()
	}
	reg := prometheus.NewRegistry()
	metrics := promfence.New(reg, promfence.Options{})
	r, err := fencectrl.New(ctx, mgr, fencectrl.Options{
		Namespace: o.Namespace, Client: api,
		// The fencings admitted, shared with every other replica through a
		// Lease beside the leader's: the gates count them all, even while
		// two replicas act at once (a lease handover).
		AdmissionsNamespace: o.LeaderElectionNamespace,
		Controller: controller.Options{
			Identity: o.Identity, UnhealthyAfter: o.UnhealthyAfter, Interval: o.Interval, LeaseGrace: o.LeaseGrace,
			Flow: o.flow(), MaxWorkers: o.MaxWorkers,
		},
		Gate: gate, ObserveGate: metrics.Gate, DetectOnly: o.DetectOnly, Pods: pods, Registry: drivers,
		Maintenance: &o.Policy.Maintenance,
		// The credentials methods name instead of holding them
		// (password_secret=NAME/KEY), from the Secrets of the namespace.
		Secrets: o.Secrets,
		// With --remediation, the nodes to fence are those
		// NodeFenceRemediation objects ask for: the controller's own Ready
		// timer starts nothing.
		Remediation: o.Remediation, RemediationNamespace: o.RemediationNamespace,
		Observer: metrics, Logger: logger,
		DeviceChecks: o.deviceChecks(), DeviceReporter: metrics.Devices(),
		NodeLease: o.nodeLease(logger),
		Etcd:      etcdOrNil(etcd),
	})
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(ctx, mgr, crcontroller.Options{}); err != nil {
		return err
	}
	ctl := r.Controller
	info := runInfo{Controller: ctl}
	metrics.WatchRecords(r.Store.List)
	prb := &probes{ctl: ctl, interval: o.Interval}
	mh, mtls, err := o.metricsServer(ctx, cfg, hc, metricsHandler(reg, o.Profiling), logger)
	if err != nil {
		return err
	}
	if info.MetricsAddr, err = serve(ctx, o.MetricsBindAddress, "--metrics-bind-address", mh, logger, mtls); err != nil {
		return err
	}
	// The configuration webhook, on every replica (the API server calls
	// any of them), reading the ConfigMaps from the API server.
	if o.WebhookBindAddress != "" {
		host, _, _ := net.SplitHostPort(o.WebhookBindAddress)
		wtls, err := authhttp.TLSConfig(ctx, o.WebhookCertDir, host)
		if err != nil {
			return fmt.Errorf("--webhook-cert-dir: %w", err)
		}
		if len(wtls.Certificates) > 0 {
			info.WebhookCA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: wtls.Certificates[0].Certificate[0]})
		}
		mux := http.NewServeMux()
		mux.Handle(configwebhook.Path, &configwebhook.Handler{Reader: api, Namespace: o.Namespace, Registry: drivers, Logger: logger})
		if info.WebhookAddr, err = serve(ctx, o.WebhookBindAddress, "--webhook-bind-address", mux, logger, wtls); err != nil {
			return err
		}
	}
	if info.ProbeAddr, err = serve(ctx, o.ProbeBindAddress, "--health-probe-bind-address", probeHandler(prb), logger); err != nil {
		return err
	}

	// The caches the controller waits for, each with a plain read of its
	// resource that tells why it did not sync (when the manager gives up
	// after --sync-timeout).
	syncers := []syncer{
		{"Nodes", func(ctx context.Context) error {
			return api.List(ctx, &corev1.NodeList{}, crclient.Limit(1))
		}},
		{"NodeFences (fencekit.io)", func(ctx context.Context) error {
			return api.List(ctx, &v1alpha1.NodeFenceList{}, crclient.Limit(1))
		}},
		{"ConfigMaps in namespace " + o.Namespace, func(ctx context.Context) error {
			return api.List(ctx, &corev1.ConfigMapList{}, crclient.InNamespace(o.Namespace), crclient.Limit(1))
		}},
	}
	if o.Secrets {
		syncers = append(syncers, syncer{"Secrets in namespace " + o.Namespace + " (--secrets)", func(ctx context.Context) error {
			return api.List(ctx, &corev1.SecretList{}, crclient.InNamespace(o.Namespace), crclient.Limit(1))
		}})
	}

	var book *kdump.AddressBook
	if o.KdumpListen != "" {
		book = &kdump.AddressBook{}
		l, err := kdump.Listen(ctx, o.KdumpListen, kdump.Options{
			Resolve: book.Resolve, Stale: o.KdumpStale, Timeout: o.KdumpTimeout, Logger: logger})
		if err != nil {
			return fmt.Errorf("--kdump-listen: %w", err)
		}
		defer l.Close()
		ctl.Kdump = kdumpHold{l}
		info.KdumpAddr, info.Book = l.Addr(), book
	}

	// Ready once the manager's caches hold their first list (on every
	// replica).
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			prb.synced.Store(true)
		}
		return nil
	}))
	if err != nil {
		return err
	}
	// Leading: once the controller reads its caches, the configuration is
	// checked, the kdump address book follows the nodes, the probe's
	// clock starts, and a test learns the run began.
	err = mgr.Add(leading(func(ctx context.Context) error {
		select {
		case <-r.Bound():
		case <-ctx.Done():
			return nil
		}
		if book != nil {
			// The address book follows the Nodes of the manager's cache
			// (their summaries keep their addresses): one watch of the
			// nodes.
			inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Node{})
			if err != nil {
				return fmt.Errorf("node informer: %w", err)
			}
			sii, ok := inf.(cache.SharedIndexInformer)
			if !ok {
				return fmt.Errorf("node informer: the manager's cache gives a %T", inf)
			}
			nodes := &nodeWatch{inf: sii, book: book, logger: logger}
			done, err := nodes.start()
			if err != nil {
				return err
			}
			if !cache.WaitFor(ctx, "", done) {
				return nil
			}
		}
		if _, err := r.Config.Config(ctx); err != nil {
			// Not fatal: the nodes whose configuration is needed are not
			// fenced, with an event, until the ConfigMaps are fixed.
			logger.Warn("the fence configuration does not parse; nothing that needs it is fenced until it is fixed", "namespace", o.Namespace, "error", err)
		}
		logger.Info("caches synced")
		// The first lists were decoded whole (every Node, NodeFence and
		// ConfigMap) before the caches cut them: give that memory back to
		// the system now, rather than over minutes, so that the resident
		// memory is what the caches keep (at 5,000 nodes, tens of MiB).
		debug.FreeOSMemory()
		prb.synced.Store(true) // the leader's caches: ready, whatever the other runnable's timing
		prb.leading.Store(time.Now().UnixNano())
		defer prb.leading.Store(0)
		if o.started != nil {
			o.started(info)
		}
		<-ctx.Done()
		logger.Info("stopping: waiting for the workers", "timeout", o.ShutdownTimeout.String())
		return nil
	}))
	if err != nil {
		return err
	}
	if o.DetectOnly {
		logger.Warn("detect-only mode: no device is switched and no pod released; each NodeFence says what would have started")
	}
	if o.LeaseGrace > 0 && o.LeaseGrace < 2*o.LeaseRenewInterval {
		logger.Warn("--lease-grace is shorter than two lease renewals: two late renewals in a row fence a running node",
			"leaseGrace", o.LeaseGrace.String(), "leaseRenewInterval", o.LeaseRenewInterval.String())
	}
	sayForceDetach(ctx, o, api, metrics, logger)
	if !o.LeaderElect {
		logger.Warn("leader election is off: every replica works on every node (the NodeFence store still keeps two from fencing a node twice)")
	}

	err = mgr.Start(ctx)
	switch {
	case err == nil:
		logger.Info("workers stopped")
		return nil
	case strings.Contains(err.Error(), "within grace period"):
		return fmt.Errorf("the workers did not stop within --shutdown-timeout %v; their records resume at the next start", o.ShutdownTimeout)
	case strings.Contains(err.Error(), "leader election lost"):
		return errLeadershipLost
	case strings.Contains(err.Error(), "caches to sync") || strings.Contains(err.Error(), "cache to be synced"):
		if diag := diagnoseSync(ctx, o.SyncTimeout, syncers); diag != nil {
			return diag
		}
		return fmt.Errorf("not read within --sync-timeout %v: %w", o.SyncTimeout, err)
	case ctx.Err() != nil:
		return nil
	}
	return err
}

// errLeadershipLost is run's error when the lease was lost: the process
// exits, and starts again as a replica that waits.
var errLeadershipLost = errors.New("leadership lost: another instance may lead now; exiting")

// newManager returns the controller-runtime manager of the program: its
// scheme (the built-in types and fencekit.io's), its cache (Nodes cut to
// what the controller reads, fencekube.NodeSummary, ConfigMaps and Secrets of o.Namespace only),
// its leader election under o.Identity, its shutdown timeout, and no
// metrics or probe listener of its own.
func newManager(ctx context.Context, cfg *rest.Config, o options, lr logr.Logger, logger *slog.Logger) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	copts := fencectrl.CacheOptions(o.Namespace)
	if o.Remediation {
		copts = fencectrl.WithRemediationNamespace(copts, o.RemediationNamespace)
	}
	mo := manager.Options{
		Scheme: scheme, Cache: copts, Logger: lr,
		BaseContext:             func() context.Context { return ctx },
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "",
		GracefulShutdownTimeout: &o.ShutdownTimeout,
		Controller: ctrlconfig.Controller{
			CacheSyncTimeout: o.SyncTimeout,
			// One process may run the program more than once (tests).
			SkipNameValidation: ptr(true),
		},
	}
	if o.LeaderElect {
		// The lease is held under o.Identity (controller-runtime's own
		// lock would name the host and a random suffix), through a client
		// of its own, so that a busy controller never starves its renewals.
		lcfg := rest.CopyConfig(cfg)
		lcfg.UserAgent = cfg.UserAgent + "/leader-election"
		lc, err := kubernetes.NewForConfig(lcfg)
		if err != nil {
			return nil, fmt.Errorf("leader election client: %w", err)
		}
		lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectionNamespace, o.LeaderElectionName,
			lc.CoreV1(), lc.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.Identity})
		if err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
		mo.LeaderElection = true
		mo.LeaderElectionID, mo.LeaderElectionNamespace = o.LeaderElectionName, o.LeaderElectionNamespace
		mo.LeaderElectionResourceLockInterface = &watchedLock{Interface: lock, logger: logger}
		mo.LeaseDuration, mo.RenewDeadline, mo.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
		mo.LeaderElectionReleaseOnCancel = true
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	return mgr, nil
}

func ptr[T any](v T) *T { return &v }

// watchedLock is the leader lock, logging the holder when another instance
// leads.
type watchedLock struct {
	resourcelock.Interface
	logger *slog.Logger
	mu     sync.Mutex
	last   string
}

func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec != nil {
		l.mu.Lock()
		changed := rec.HolderIdentity != l.last
		l.last = rec.HolderIdentity
		l.mu.Unlock()
		if changed && rec.HolderIdentity != "" && rec.HolderIdentity != l.Identity() {
			l.logger.Info("another instance leads", "leader", rec.HolderIdentity)
		}
	}
	return rec, raw, err
}

// leading is a manager.Runnable that runs on the leader only.
type leading func(ctx context.Context) error

func (f leading) Start(ctx context.Context) error { return f(ctx) }
func (leading) NeedLeaderElection() bool          { return true }

// syncer is a cache the controller waits for: its name, and a probe that
// reads the resource once, to tell why it did not sync.
type syncer struct {
	what  string
	probe func(context.Context) error
}

// diagnoseSync reads every resource of ss once and names the first that
// the API server refuses, with its answer (forbidden, not found); nil
// when every read succeeds.
func diagnoseSync(ctx context.Context, timeout time.Duration, ss []syncer) error {
	for _, s := range ss {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := s.probe(pctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s not read within --sync-timeout %v: %w (is the CRD installed and the RBAC of deploy/rbac.yaml applied?)", s.what, timeout, err)
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

// sayForceDetach tells at start whether kube-controller-manager
// force-detaches the volumes of a node unhealthy for 6 minutes
// (--force-detach-on-timeout; auto reads its pods), in the log and in
// fencekit_force_detach_on_timeout.
func sayForceDetach(ctx context.Context, o options, client crclient.Reader, m *promfence.Metrics, logger *slog.Logger) {
	state, how := fencekube.ForceDetachUnknown, ""
	if o.ForceDetach == "auto" {
		var err error
		if state, how, err = fencekube.DetectForceDetach(ctx, client); err != nil {
			how = err.Error()
		}
	} else {
		state, how = fencekube.ForceDetach(o.ForceDetach), "declared by --force-detach-on-timeout"
	}
	m.ForceDetach(string(state))
	switch state {
	case fencekube.ForceDetachDisabled:
		logger.Info("kube-controller-manager keeps the volumes of an unhealthy node attached until it is fenced", "forceDetachOnTimeout", string(state), "how", how)
	case fencekube.ForceDetachEnabled:
		logger.Warn("kube-controller-manager force-detaches the volumes of a node unhealthy for 6 minutes once their pods are gone, without proof that the node is off: run it with --disable-force-detach-on-timeout (docs/operating.md: production checklist)",
			"forceDetachOnTimeout", string(state), "how", how)
	default:
		logger.Warn("whether kube-controller-manager force-detaches the volumes of a node unhealthy for 6 minutes is not known: declare it with --force-detach-on-timeout=disabled once it runs with --disable-force-detach-on-timeout (docs/operating.md: production checklist)",
			"forceDetachOnTimeout", string(state), "how", how)
	}
}

// deviceChecks returns the device health checks' options, nil for none.
func (o options) deviceChecks() *healthcheck.Options {
	if o.DeviceCheckInterval == 0 {
		return nil
	}
	return &healthcheck.Options{Interval: o.DeviceCheckInterval, Concurrency: o.DeviceCheckConcurrency, Rate: o.DeviceCheckRate}
}

// nodeLease returns the node leases' options, nil with --node-lease=false.
func (o *options) nodeLease(logger *slog.Logger) *nodelease.Options {
	if !o.NodeLease {
		return nil
	}
	return &nodelease.Options{Namespace: o.NodeLeaseNamespace, Duration: o.NodeLeaseDuration, Logger: logger}
}

// etcd connects to the cluster's etcd for the quorum gate; nil without
// --etcd-endpoints.
func (o *options) etcd(logger *slog.Logger) (*etcdv3.Cluster, error) {
	if len(o.EtcdEndpoints) == 0 {
		return nil, nil
	}
	opts := etcdv3.Options{Logger: logger.With("component", "etcd")}
	if o.EtcdCAFile != "" || o.EtcdCertFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.EtcdCAFile != "" {
			pem, err := os.ReadFile(o.EtcdCAFile)
			if err != nil {
				return nil, fmt.Errorf("--etcd-ca-file: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--etcd-ca-file: %s holds no PEM certificate", o.EtcdCAFile)
			}
		}
		if o.EtcdCertFile != "" {
			cert, err := tls.LoadX509KeyPair(o.EtcdCertFile, o.EtcdKeyFile)
			if err != nil {
				return nil, fmt.Errorf("--etcd-cert-file, --etcd-key-file: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts.TLS = cfg
	}
	c, err := etcdv3.New(o.EtcdEndpoints, opts)
	if err != nil {
		return nil, fmt.Errorf("--etcd-endpoints: %w", err)
	}
	return c, nil
}

// etcdOrNil is c as a teardown.Etcd, nil (not a nil pointer in an
// interface) when c is nil.
func etcdOrNil(c *etcdv3.Cluster) teardown.Etcd {
	if c == nil {
		return nil
	}
	return c
}

// metricsServer puts h behind the reviews of authhttp and returns the TLS
// configuration to serve it with, with --metrics-secure; h and nil
// otherwise.
func (o *options) metricsServer(ctx context.Context, cfg *rest.Config, hc *http.Client, h http.Handler, logger *slog.Logger) (http.Handler, *tls.Config, error) {
	if !o.MetricsSecure || o.MetricsBindAddress == "" {
		return h, nil, nil
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-secure: %w", err)
	}
	host, _, _ := net.SplitHostPort(o.MetricsBindAddress)
	t, err := authhttp.TLSConfig(ctx, o.MetricsCertDir, host)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-cert-dir: %w", err)
	}
	return authhttp.Wrap(h, authhttp.Options{Client: cs, Logger: logger}), t, nil
}
