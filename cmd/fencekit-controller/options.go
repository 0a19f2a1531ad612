package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/kube/nodelease"
	"github.com/fencekit/fencekit/policy"
)

// prog names the program in messages.
const prog = "fencekit-controller"

// The environment variables the program reads, set in a pod through the
// downward API (deploy/deployment.yaml).
const (
	envPodName      = "POD_NAME"
	envPodNamespace = "POD_NAMESPACE"
)

// options are the program's settings, from its flags.
type options struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, else the
	// in-cluster configuration.
	Kubeconfig string
	// Namespace holds the fence ConfigMaps.
	Namespace string
	// Secrets has the credentials that methods name
	// (password_secret=NAME/KEY) read from the Secrets of Namespace.
	Secrets bool
	// Identity names this instance in leader election and in the jobs it
	// starts.
	Identity string

	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionName      string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration

	// Remediation: fence only the nodes that NodeFenceRemediation objects
	// ask for (Node Health Check, Cluster API), in
	// RemediationNamespace ("" every namespace); the Ready timer
	// (UnhealthyAfter) is off.
	Remediation          bool
	RemediationNamespace string
	// DetectOnly: every fencing is refused once the gates admit it, with
	// what would have started (fencectrl.Options.DetectOnly).
	DetectOnly bool
	// EtcdEndpoints, when set, are the client URLs of the cluster's etcd,
	// read for the etcd-quorum gate (fencectrl.Options.Etcd) with the
	// client certificate EtcdCertFile/EtcdKeyFile and the CA EtcdCAFile.
	EtcdEndpoints                         []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// NodeLease keeps one actor per node (fencectrl.Options.NodeLease),
	// with the leases in NodeLeaseNamespace, NodeLeaseDuration long.
	NodeLease          bool
	NodeLeaseNamespace string
	NodeLeaseDuration  time.Duration

	UnhealthyAfter time.Duration
	// LeaseGrace detects a dead node from its lease (0: off);
	// LeaseRenewInterval is the kubelets' renewal interval it is checked
	// against.
	LeaseGrace         time.Duration
	LeaseRenewInterval time.Duration
	Interval           time.Duration
	PowerDelay         time.Duration
	PollInterval       time.Duration
	MaxPolls           int
	MaxRetries         int
	RetryBackoff       time.Duration
	JobTimeout         time.Duration
	PodsTimeout        time.Duration
	MinOff             time.Duration
	HealthyDelay       time.Duration
	MaxWorkers         int
	// DeviceCheckInterval, DeviceCheckConcurrency and DeviceCheckRate
	// schedule the device health checks (0 interval: none).
	DeviceCheckInterval    time.Duration
	DeviceCheckConcurrency int
	DeviceCheckRate        float64

	// MetricsBindAddress serves /metrics (Prometheus) and
	// ProbeBindAddress /healthz and /readyz; empty turns either off.
	MetricsBindAddress string
	ProbeBindAddress   string
	// MetricsSecure serves /metrics and the profiles over TLS to those
	// the API server says may get them (internal/authhttp), with the
	// certificate of MetricsCertDir (a self-signed one when empty).
	MetricsSecure  bool
	MetricsCertDir string
	// WebhookBindAddress serves the configuration webhook
	// (kube/configwebhook) over TLS with the certificate of
	// WebhookCertDir (self-signed when empty); empty turns it off.
	WebhookBindAddress, WebhookCertDir string
	// Profiling serves Go's profiles (/debug/pprof/) beside /metrics.
	Profiling bool

	// KubeAPIQPS and KubeAPIBurst bound the client's requests to the API
	// server. A fencing makes about a dozen requests in a second; the
	// burst lets a rack of nodes be fenced at once without waiting on the
	// client's own rate limiter, while the steady state makes almost none.
	KubeAPIQPS   float64
	KubeAPIBurst int

	// PodTreatment is "taint", "taint-only" or "delete".
	PodTreatment string
	// ForceDetach is what kube-controller-manager does with the volumes
	// of a node unhealthy for 6 minutes: "auto" (read from its pods in
	// kube-system), "enabled" or "disabled" (declared).
	ForceDetach string
	// PolicyFile is the policy.Config file; empty means the defaults.
	PolicyFile string
	// Policy is the policy read from PolicyFile (loadPolicy).
	Policy policy.Config

	// KdumpListen is the fence_kdump listener's UDP address; empty turns
	// it off.
	KdumpListen  string
	KdumpStale   time.Duration
	KdumpTimeout time.Duration
	// KdumpReleasePods releases a dumping node's pods before its device
	// fence (flow.Options.ReleaseOnDump).
	KdumpReleasePods bool

	// CephCluster, when set, adds the Ceph fence-group gate of that
	// cluster (package fencegroup), fed by the ceph command.
	CephCluster  string
	CephCommand  string
	CephConf     string
	CephID       string
	CephKeyring  string
	CephInterval time.Duration

	LogLevel  slog.Level
	LogFormat string

	// SyncTimeout bounds the wait for the informers' first sync.
	SyncTimeout time.Duration
	// ShutdownTimeout bounds the wait for the workers once asked to stop.
	ShutdownTimeout time.Duration

	// started, when set, is called once everything is started and this
	// instance leads (tests look at what run built).
	started func(runInfo)
}

// newFlagSet returns the program's flags, bound to o, with defaults read
// from getenv.
func newFlagSet(o *options, getenv func(string) string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(out)
	ns := getenv(envPodNamespace)
	if ns == "" {
		ns = "default"
	}
	id := getenv(envPodName)
	if id == "" {
		id, _ = os.Hostname()
	}
	defaults := flow.Options{}.Defaults()

	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, else the in-cluster configuration")
	fs.StringVar(&o.Namespace, "namespace", ns, "namespace of the fence ConfigMaps (fence-config-*, fence-method-*) and of the lease; the default is $"+envPodNamespace+" when set")
	fs.BoolVar(&o.Secrets, "secrets", true, "read the credentials that methods name instead of holding them (password_secret=NAME/KEY) from the Secrets of --namespace; needs get, list and watch on Secrets there (deploy/rbac.yaml)")
	fs.StringVar(&o.Identity, "identity", id, "name of this instance in leader election and in the jobs it starts; the default is $"+envPodName+" when set, else the host name")

	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "run only while holding the lease (one busy replica); the NodeFence store keeps replicas from fencing a node twice either way")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the lease; empty: --namespace")
	fs.StringVar(&o.LeaderElectionName, "leader-election-name", "fencekit-controller", "name of the lease")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a lease lasts without renewal")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up leading")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "time between attempts to take or renew the lease")

	fs.DurationVar(&o.UnhealthyAfter, "unhealthy-after", time.Minute, "how long a node must be not ready before it is fenced (without --remediation)")
	fs.DurationVar(&o.LeaseGrace, "lease-grace", 0, "detect a dead node from its kubelet's Lease in kube-node-lease: a node whose lease has not been renewed for this long is fenced at once, without waiting for the controller manager to mark it not ready (0: off, the Ready condition alone). A node whose kubelet stalls longer than it is fenced though it runs; at least 1.5 times --lease-renew-interval")
	fs.DurationVar(&o.LeaseRenewInterval, "lease-renew-interval", 10*time.Second, "how often the kubelets renew their leases (the kubelet's default: 10 s), which --lease-grace must leave room for")
	fs.BoolVar(&o.DetectOnly, "detect-only", false, "detect and decide as usual, but switch no device and release no pod: each record says what would have started (a first deployment's trial)")
	fs.Func("etcd-endpoints", "the client URLs of the cluster's etcd, comma-separated (https://10.0.0.1:2379,...): a control-plane node whose etcd member is healthy is not fenced while that would leave fewer healthy voting members than a quorum (the gate etcd-quorum); empty: not read", func(v string) error {
		o.EtcdEndpoints = nil
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				o.EtcdEndpoints = append(o.EtcdEndpoints, e)
			}
		}
		return nil
	})
	fs.StringVar(&o.EtcdCAFile, "etcd-ca-file", "", "the CA that signed etcd's serving certificates (kubeadm: /etc/kubernetes/pki/etcd/ca.crt)")
	fs.StringVar(&o.EtcdCertFile, "etcd-cert-file", "", "the client certificate to read etcd with (kubeadm: /etc/kubernetes/pki/etcd/healthcheck-client.crt)")
	fs.StringVar(&o.EtcdKeyFile, "etcd-key-file", "", "the client certificate's key (kubeadm: /etc/kubernetes/pki/etcd/healthcheck-client.key)")
	fs.BoolVar(&o.NodeLease, "node-lease", true, "one actor per node: hold the node's Lease in medik8s's convention (node-NAME in --node-lease-namespace, as Node Health Check and the node-maintenance operator take it) from a fencing's admission to the node's recovery, and refuse to fence a node another actor holds; needs deploy/node-lease.yaml")
	fs.StringVar(&o.NodeLeaseNamespace, "node-lease-namespace", nodelease.DefaultNamespace, "the namespace of the node leases (the medik8s operators' LEASE_NAMESPACE)")
	fs.DurationVar(&o.NodeLeaseDuration, "node-lease-duration", nodelease.DefaultDuration, "the length of the node leases fencekit takes, renewed every third of it: how long a controller that died keeps the others off the node")
	fs.BoolVar(&o.Remediation, "remediation", false, "fence only the nodes that NodeFenceRemediation objects ask for (created by Node Health Check or Cluster API's MachineHealthCheck from a NodeFenceRemediationTemplate), never by the controller's own Ready timer, so that two remediators never act on one node")
	fs.StringVar(&o.RemediationNamespace, "remediation-namespace", "", "namespace of the NodeFenceRemediation objects, for --remediation; empty (the default): every namespace, since Node Health Check creates them in its template's namespace and Cluster API in the Machines' (deploy/rbac.yaml's ClusterRole allows it); a remediation elsewhere is never seen")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "time between the controller's passes (node changes wake it earlier)")
	fs.DurationVar(&o.PowerDelay, "power-delay", defaults.PowerDelay, "how long an isolated node may stay not ready before power management")
	fs.DurationVar(&o.PollInterval, "poll-interval", defaults.PollInterval, "how often a power-fenced node is checked for readiness")
	fs.IntVar(&o.MaxPolls, "max-polls", defaults.MaxPolls, "polls of a power-fenced node before its fencing errors")
	fs.IntVar(&o.MaxRetries, "max-retries", defaults.MaxRetries, "retries of a step that errored before the fencing is Failed (0: none)")
	fs.DurationVar(&o.RetryBackoff, "retry-backoff", defaults.RetryBackoff, "wait before the first retry of a step, doubled after each")
	fs.DurationVar(&o.JobTimeout, "job-timeout", defaults.JobTimeout, "bound of one method run; another instance's unfinished job is taken over after it")
	fs.DurationVar(&o.HealthyDelay, "healthy-delay", defaults.HealthyDelay, "how long a recovered node must have been ready before it takes pods again (the taint fencekit.io/fencing:NoSchedule, put on at the fencing's admission, removed): a node that flaps takes no pods in between (0: at once; negative, such as -1s: only once a person marks it healthy, kubectl fence healthy NODE)")
	fs.DurationVar(&o.MinOff, "min-off", defaults.MinOff, "the least time a reboot's devices stay off, from the fence, before they are switched on again (0: no hold)")
	fs.DurationVar(&o.PodsTimeout, "pods-timeout", defaults.PodsTimeout, "how long a power-fenced node stays off, its pods released, waiting for them to be gone before it is switched on again")
	fs.IntVar(&o.MaxWorkers, "max-workers", 16, "nodes worked on at once")
	fs.DurationVar(&o.DeviceCheckInterval, "device-check-interval", 10*time.Minute, "time between two health checks of each fence method of each node (its machine's identity and its plug's status, nothing switched), spread over the interval; the result is the Node condition FenceDevicesReady and fencekit_device_up (0: no checks; 10s to 24h)")
	fs.IntVar(&o.DeviceCheckConcurrency, "device-check-concurrency", 16, "device health checks run at once (1 to 1000)")
	fs.Float64Var(&o.DeviceCheckRate, "device-check-rate", 20, "device health checks started per second, at most (0.01 to 1000)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "", "address of the Prometheus /metrics endpoint, such as :8080 (empty: off)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve --metrics-bind-address over HTTPS, to a bearer token the API server accepts (TokenReview) whose user may get the path (SubjectAccessReview of the non-resource URL, such as the ClusterRole fencekit-metrics-reader of deploy/rbac.yaml); false serves plain HTTP to anyone who reaches it")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "directory of the metrics server's certificate, tls.crt and tls.key (a cert-manager Secret mounted), reloaded when they change; empty: a self-signed certificate made at start")
	fs.StringVar(&o.WebhookBindAddress, "webhook-bind-address", "", "address of the validating webhook that refuses a fence ConfigMap write adding an error, such as :9443 (deploy/config-webhook.yaml; empty: off)")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "directory of the webhook's certificate, tls.crt and tls.key (cert-manager's Secret mounted), reloaded when they change; empty: self-signed")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's runtime profiles (/debug/pprof/: heap, CPU, goroutines) on --metrics-bind-address, as the Kubernetes components' --profiling does, behind the same authentication (--metrics-secure): a reader needs get on /debug/pprof/*; they show no credentials, but the goroutine dumps name nodes and devices")
	fs.StringVar(&o.ProbeBindAddress, "health-probe-bind-address", "", "address of /healthz (liveness: the leader's loop passes) and /readyz (caches synced), such as :8081 (empty: off)")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", 50, "requests per second to the API server, sustained")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 200, "requests to the API server in a burst (a rack of nodes fenced at once)")

	fs.StringVar(&o.ForceDetach, "force-detach-on-timeout", "auto", "whether kube-controller-manager force-detaches the volumes of a node unhealthy for 6 minutes once their pods are gone: auto (read its command line from its pods in kube-system), enabled (its default) or disabled (it runs with --disable-force-detach-on-timeout, as fencekit's guarantees need); said at start and as fencekit_force_detach_on_timeout")
	fs.StringVar(&o.PodTreatment, "pod-treatment", "taint", "pod treatment after a verified fence: taint (after a power fence, the node's pods force-deleted at once, so that their StatefulSets need not wait for the pod garbage collector, then the out-of-service taint once they are replaced), taint-only (the taint; the pod garbage collector deletes the pods, every 20 s) or delete (force-delete the node's pods, no taint)")
	fs.StringVar(&o.PolicyFile, "policy-file", "", "fencing policy file, YAML or JSON (package policy's Config); empty: the defaults")

	fs.StringVar(&o.KdumpListen, "kdump-listen", "", "UDP address of the fence_kdump listener, such as :7410 (empty: off)")
	fs.DurationVar(&o.KdumpStale, "kdump-stale", kdump.DefaultStale, "a node stops dumping this long after its last fence_kdump message")
	fs.DurationVar(&o.KdumpTimeout, "kdump-timeout", kdump.DefaultTimeout, "bound of the hold a dump puts on power fencing")
	fs.BoolVar(&o.KdumpReleasePods, "kdump-release-pods", false, "release a node's pods (the pod treatment) as soon as it is known to dump its kernel, once the policy admits it, instead of after the device fence that follows the dump; fence_kdump messages are not authenticated, so leave it off unless only the nodes can send from their addresses")

	fs.StringVar(&o.CephCluster, "ceph-cluster", "", "name of a Ceph cluster whose fence group gates fencing (fencegroup.rook.io/<name> labels; empty: off)")
	fs.StringVar(&o.CephCommand, "ceph-command", "ceph", "the ceph command, for --ceph-cluster")
	fs.StringVar(&o.CephConf, "ceph-conf", "", "ceph --conf, for --ceph-cluster")
	fs.StringVar(&o.CephID, "ceph-id", "", "ceph --id (client name without \"client.\"), for --ceph-cluster")
	fs.StringVar(&o.CephKeyring, "ceph-keyring", "", "ceph --keyring file, for --ceph-cluster")
	fs.DurationVar(&o.CephInterval, "ceph-interval", fencegroup.DefaultInterval, "how often the Ceph status is read, for --ceph-cluster")

	fs.TextVar(&o.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", "json", "log format: json or text")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", 2*time.Minute, "bound of the wait for the first read of nodes, NodeFences and ConfigMaps")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "bound of the wait for the workers on SIGTERM")

	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\nThe fencekit fence controller: fences the nodes that stay not ready, as their fence ConfigMaps say.\n\nFlags:\n", prog)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags reads the options from args (the program's name excluded)
// and checks them. It does not read the policy file (loadPolicy does).
// The error is flag.ErrHelp for -h, else names every bad flag.
func parseFlags(args []string, getenv func(string) string, out io.Writer) (options, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var o options
	fs := newFlagSet(&o, getenv, out)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (every setting is a --flag)", fs.Arg(0))
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Namespace
	}
	return o, o.validate()
}

// validate checks every option and returns the errors of every bad one,
// each naming its flag.
func (o *options) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	label := func(flag, v string) {
		if v == "" {
			bad(flag, "empty")
			return
		}
		if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			bad(flag, "%q is not a valid namespace name: %s", v, strings.Join(msgs, "; "))
		}
	}
	positive := func(flag string, d time.Duration) {
		if d <= 0 {
			bad(flag, "%v: want a positive duration, such as 30s", d)
		}
	}
	// between bounds a period the controller waits on, or that others
	// keep: 1ns is a busy loop, not a period.
	between := func(flag string, d, lo, hi time.Duration) {
		if d < lo || d > hi {
			bad(flag, "%v: want %v to %v", d, lo, hi)
		}
	}

	label("namespace", o.Namespace)
	if strings.TrimSpace(o.Identity) == "" {
		bad("identity", "empty (set it, or $%s)", envPodName)
	}
	if o.LeaderElect {
		label("leader-election-namespace", o.LeaderElectionNamespace)
		if msgs := validation.IsDNS1123Subdomain(o.LeaderElectionName); len(msgs) > 0 {
			bad("leader-election-name", "%q is not a valid lease name: %s", o.LeaderElectionName, strings.Join(msgs, "; "))
		}
		between("leader-election-retry-period", o.RetryPeriod, 100*time.Millisecond, time.Minute)
		switch {
		case o.RenewDeadline <= time.Duration(1.2*float64(o.RetryPeriod)):
			bad("leader-election-renew-deadline", "%v must exceed 1.2 times --leader-election-retry-period (%v)", o.RenewDeadline, o.RetryPeriod)
		case o.LeaseDuration <= o.RenewDeadline:
			bad("leader-election-lease-duration", "%v must exceed --leader-election-renew-deadline (%v)", o.LeaseDuration, o.RenewDeadline)
		}
	}
	positive("unhealthy-after", o.UnhealthyAfter)
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		bad("metrics-cert-dir", "a certificate without --metrics-secure")
	}
	if o.WebhookCertDir != "" && o.WebhookBindAddress == "" {
		bad("webhook-cert-dir", "a certificate without --webhook-bind-address")
	}
	if o.Profiling && !o.MetricsSecure {
		bad("profiling", "the profiles are served only behind authentication (--metrics-secure)")
	}
	for _, e := range o.EtcdEndpoints {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("etcd-endpoints", "%q is not an http or https URL", e)
		}
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		bad("etcd-cert-file", "--etcd-cert-file and --etcd-key-file go together")
	}
	if len(o.EtcdEndpoints) == 0 && (o.EtcdCAFile != "" || o.EtcdCertFile != "") {
		bad("etcd-endpoints", "the etcd certificates are given without --etcd-endpoints")
	}
	if o.NodeLease {
		between("node-lease-duration", o.NodeLeaseDuration, 3*time.Second, time.Hour)
		if msgs := validation.IsDNS1123Label(o.NodeLeaseNamespace); len(msgs) > 0 {
			bad("node-lease-namespace", "%q is not a valid namespace: %s", o.NodeLeaseNamespace, strings.Join(msgs, "; "))
		}
	}
	// The kubelet renews its lease at least every second; a shorter value
	// would let a --lease-grace of a second or two past the check below.
	between("lease-renew-interval", o.LeaseRenewInterval, time.Second, 10*time.Minute)
	switch {
	case o.LeaseGrace < 0:
		bad("lease-grace", "%v is negative (want 0, off, or a duration)", o.LeaseGrace)
	case o.LeaseGrace > 0 && o.LeaseRenewInterval > 0 && o.LeaseGrace*2 < o.LeaseRenewInterval*3:
		bad("lease-grace", "%v is shorter than one and a half lease renewals (--lease-renew-interval %v): a single late renewal would fence a running node; want at least %v",
			o.LeaseGrace, o.LeaseRenewInterval, o.LeaseRenewInterval*3/2)
	}
	between("interval", o.Interval, 100*time.Millisecond, time.Hour)
	positive("power-delay", o.PowerDelay)
	between("poll-interval", o.PollInterval, 100*time.Millisecond, time.Hour)
	positive("retry-backoff", o.RetryBackoff)
	positive("job-timeout", o.JobTimeout)
	positive("pods-timeout", o.PodsTimeout)
	if o.HealthyDelay > 24*time.Hour {
		bad("healthy-delay", "%v: want 0 (at once) to 24h, or negative (until a person marks the node healthy)", o.HealthyDelay)
	}
	if o.MinOff < 0 || o.MinOff > time.Hour {
		bad("min-off", "%v: want 0 (no hold) to 1h", o.MinOff)
	}
	if o.MaxPolls < 1 {
		bad("max-polls", "%d: want 1 or more", o.MaxPolls)
	}
	if o.MaxRetries < 0 {
		bad("max-retries", "%d: want 0 or more", o.MaxRetries)
	}
	if o.DeviceCheckInterval != 0 && (o.DeviceCheckInterval < 10*time.Second || o.DeviceCheckInterval > 24*time.Hour) {
		bad("device-check-interval", "%v: want 0 (no checks) or 10s to 24h", o.DeviceCheckInterval)
	}
	if o.DeviceCheckConcurrency < 1 || o.DeviceCheckConcurrency > 1000 {
		bad("device-check-concurrency", "%d: want 1 to 1000", o.DeviceCheckConcurrency)
	}
	if !(o.DeviceCheckRate >= 0.01 && o.DeviceCheckRate <= 1000) {
		bad("device-check-rate", "%v: want 0.01 (one check every 100 s) to 1000", o.DeviceCheckRate)
	}
	if o.MaxWorkers < 1 {
		bad("max-workers", "%d: want 1 or more", o.MaxWorkers)
	}
	if !(o.KubeAPIQPS >= 1 && o.KubeAPIQPS <= 100000) {
		bad("kube-api-qps", "%v: want 1 to 100000 requests a second", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		bad("kube-api-burst", "%d: want 1 or more", o.KubeAPIBurst)
	}
	switch o.ForceDetach {
	case "auto", "enabled", "disabled":
	default:
		bad("force-detach-on-timeout", "%q: want auto, enabled or disabled", o.ForceDetach)
	}
	switch o.PodTreatment {
	case "taint", "taint-only", "delete":
	default:
		bad("pod-treatment", "%q: want taint, taint-only or delete", o.PodTreatment)
	}
	if o.KdumpListen != "" {
		if _, port, err := net.SplitHostPort(o.KdumpListen); err != nil {
			bad("kdump-listen", "%q: want host:port or :port, such as :7410 (%v)", o.KdumpListen, err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			bad("kdump-listen", "%q: port %q is not a number from 0 to 65535", o.KdumpListen, port)
		}
		positive("kdump-stale", o.KdumpStale)
		positive("kdump-timeout", o.KdumpTimeout)
	} else if o.KdumpReleasePods {
		bad("kdump-release-pods", "needs --kdump-listen: without the listener no dump is ever seen")
	}
	if o.CephCluster != "" {
		if err := fencegroup.ValidateCluster(o.CephCluster); err != nil {
			bad("ceph-cluster", "%v", err)
		}
		if strings.TrimSpace(o.CephCommand) == "" {
			bad("ceph-command", "empty")
		}
		positive("ceph-interval", o.CephInterval)
	}
	switch o.LogFormat {
	case "json", "text":
	default:
		bad("log-format", "%q: want json or text", o.LogFormat)
	}
	positive("sync-timeout", o.SyncTimeout)
	positive("shutdown-timeout", o.ShutdownTimeout)
	return errors.Join(errs...)
}

// loadPolicy reads o.PolicyFile into o.Policy (policy.DefaultConfig when
// there is none). The error names the file, and the field at fault.
func (o *options) loadPolicy() error {
	if o.PolicyFile == "" {
		o.Policy = policy.DefaultConfig()
		return nil
	}
	data, err := os.ReadFile(o.PolicyFile)
	if err != nil {
		return fmt.Errorf("--policy-file: %w", err)
	}
	c, err := policy.ParseConfig(data)
	if err != nil {
		return fmt.Errorf("--policy-file %s: %w", o.PolicyFile, err)
	}
	o.Policy = c
	return nil
}

// flow returns the NodeFence flow options. --max-retries 0 means no retry
// (flow.Options takes a negative count for that).
func (o *options) flow() flow.Options {
	f := flow.Options{
		PowerDelay: o.PowerDelay, PollInterval: o.PollInterval, MaxPolls: o.MaxPolls,
		MaxRetries: o.MaxRetries, RetryBackoff: o.RetryBackoff, JobTimeout: o.JobTimeout,
		PodsTimeout: o.PodsTimeout, ReleaseOnDump: o.KdumpReleasePods, MinOff: o.MinOff,
		HealthyDelay: o.HealthyDelay,
	}
	if f.MinOff == 0 {
		f.MinOff = -1 // --min-off=0: none (flow.Options takes a negative hold for that)
	}
	if f.MaxRetries == 0 {
		f.MaxRetries = -1
	}
	return f
}
