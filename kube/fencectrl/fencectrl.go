// Package fencectrl runs fencekit's controllers under a controller-runtime
// manager: on the manager's cache (its informers, not a second set), its
// clients, its event recorder and its leader election, as reconcilers with
// a work queue each.
//
//   - Reconciler is the fence controller (package fence/controller): one
//     reconcile per node, MaxConcurrentReconciles nodes at once, woken by
//     the node's Ready changes, its NodeFence and the fence ConfigMaps (and,
//     with Options.Remediation, the NodeFenceRemediations that ask for
//     it), and again when a timer of its fencing is due.
//   - With Options.Remediation, fencekube.Remediations reconciles the
//     NodeFenceRemediations (one reconcile per remediation), its status
//     following its node's NodeFence.
//   - RebootReconciler is the metal3 reboot reconciler
//     (kube/rebootkube.Reconciler): one reconcile per host object.
//   - FenceGroupRunnable runs the Ceph fence-group labeler
//     (kube/fencegroupkube.Reconciler) on the leader.
//
// Give the manager CacheOptions(namespace) (or merge them into yours): they
// keep its cache of Nodes small (each a fencekube.NodeSummary, not a Node:
// read Nodes with the manager's APIReader) and its ConfigMaps and Secrets
// to the controller's namespace.
package fencectrl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fence/healthcheck"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/kube/networkfence"
	"github.com/fencekit/fencekit/kube/nodelease"
	"github.com/fencekit/fencekit/policy"
	"github.com/fencekit/fencekit/teardown"
)

// Name is the name of the fence controller in the manager (its metrics,
// its logs) and of its event recorder.
const Name = "fencekit"

// CacheOptions returns the cache options the fence controller wants of a
// manager whose controller reads its ConfigMaps and Secrets in namespace:
// Nodes kept to what the controller reads (fencekube.SummarizeNode: the
// cache holds a *fencekube.NodeSummary for each Node, so that a client's
// Get or List of Nodes through this cache fails; read them with the
// manager's APIReader), ConfigMaps and Secrets cached in namespace only.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Node{}:      {Transform: fencekube.SummarizeNode},
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {}}, Transform: fencekube.StripConfigMap},
		&corev1.Secret{}:    {Namespaces: map[string]cache.Config{namespace: {}}, Transform: fencekube.StripSecret},
	}}
}

// Options configure the fence controller of New.
type Options struct {
	// Namespace holds the fence ConfigMaps, the Secrets they name and,
	// unless AdmissionsNamespace is set, the admissions Lease. Required.
	Namespace string
	// AdmissionsNamespace holds the Lease of the admitted fencings
	// (fencekube.DefaultAdmissionsLease) that every replica shares; ""
	// means Namespace.
	AdmissionsNamespace string
	// Controller tunes the controller (identity, UnhealthyAfter, the
	// flow). Its MaxWorkers is the reconciler's MaxConcurrentReconciles.
	Controller controller.Options
	// Gate admits or refuses fencings; nil means policy.Default(). The
	// controller adds two gates after it: policy.Excluded (a node labelled
	// fencekit.io/exclude-from-fencing, or with Node Health Check's
	// exclude label, is not fenced) and policy.Paused over the pause
	// requests of Namespace (fence-pause-NAME ConfigMaps).
	Gate policy.Gate
	// Maintenance says when a node is under maintenance and not fenced
	// (policy.UnderMaintenance, added after the gates above, with the
	// NodeMaintenance objects of medik8s' node-maintenance-operator and
	// the node lifecycle conditions of fencekube.LifecycleConditions); nil
	// means policy.DefaultConfig's: a NodeMaintenance naming the node, or
	// one of those conditions True.
	Maintenance *policy.MaintenanceConfig
	// DetectOnly adds policy.DetectOnly last: detection, the gates, the
	// records, events and metrics as usual, but every fencing the gates
	// admit is refused with what would have started; nothing is switched
	// and no pod released (a person's confirmation is refused too).
	DetectOnly bool
	// ObserveGate, when set, wraps the whole gate (metrics of the
	// refusals by gate, such as promfence.Metrics.Gate).
	ObserveGate func(policy.Gate) policy.Gate
	// Pods is the pod treatment; nil means the out-of-service taint with
	// the pods force-deleted after it (fencekube.TaintPods, ForceDelete).
	Pods controller.Pods
	// Registry opens the devices; nil means fence.DefaultRegistry.
	Registry *fence.Registry
	// Secrets reads the credentials methods name
	// (password_secret=NAME/KEY) from the Secrets of Namespace.
	Secrets bool
	// Remediation fences only the nodes that NodeFenceRemediations ask for
	// (Node Health Check, Cluster API), in RemediationNamespace ("" every
	// namespace; give the manager's cache WithRemediationNamespace too, so
	// that it reads them there only); the Ready timer is off.
	Remediation          bool
	RemediationNamespace string
	// Observer sees every attempt of every method (metrics).
	Observer fence.Observer
	// Logger receives the controller's logs; nil discards them.
	Logger *slog.Logger
	// Client is what the ports read and write the API server through
	// (Nodes and their taints, pods, the admissions Lease, the
	// ConfigMaps before the cache has synced); nil means a client on the
	// manager's configuration, HTTP client, scheme and mapper, reading
	// the API server. Not the manager's own client: its cache holds
	// NodeSummaries, not Nodes (CacheOptions). A host's tests give a
	// controller-runtime fake client here.
	Client client.WithWatch
	// DeviceChecks, when set, checks every method of every configured
	// node on a schedule (fence/healthcheck) while this instance leads:
	// the condition FenceDevicesReady on each Node, an event on the node
	// at each change, and DeviceReporter (metrics, such as
	// promfence.Metrics.Devices) told of every check. Nothing is switched.
	DeviceChecks   *healthcheck.Options
	DeviceReporter healthcheck.Reporter
	// NodeLease, when set, keeps one actor per node (kube/nodelease):
	// every fencing takes the node's Lease in medik8s's convention (the
	// namespace medik8s-leases, node-NAME) before its first step, renews it
	// while its record is open and deletes it once the node has recovered;
	// a fencing is refused (the gate node-lease, last of the gates) while
	// another actor (Node Health Check, the node-maintenance operator)
	// holds the node. With Remediation, the lease of the Node Health Check
	// that asked is shared (its Shared, when nil). nil leaves the leases
	// alone.
	NodeLease *nodelease.Options
	// Etcd, when set, is the cluster's etcd: a control-plane node whose
	// etcd member is healthy is not fenced while taking that member down
	// would leave fewer healthy voting members than a quorum (the gate
	// policy.EtcdQuorum, after the maintenance gate; its members matched
	// to nodes by name or address, teardown.MemberOnNode). nil: no such
	// gate (policy.Default still admits one control-plane node at a time).
	Etcd teardown.Etcd
	// StorageAddresses tells the addresses the storage sees of a node, for
	// a storage isolation whose plug is fence.PlugNodeAddresses; nil
	// means CSI-Addons' CSIAddonsNodes, read through the manager's
	// APIReader (networkfence.Clients: none without CSI-Addons, and the
	// Node's InternalIP addresses are used).
	StorageAddresses controller.StorageAddresses
}

// Reconciler is the fence controller as a controller-runtime reconciler:
// a reconcile looks at one node (the request's name) as a pass of
// controller.Controller.Run would and works on it, and asks to be called
// again when a timer of the node's fencing is due.
type Reconciler struct {
	// Controller is the fence controller, on the manager's cache.
	Controller *controller.Controller
	// Store, Health and Config are its ports, for whoever wants to read
	// them (a status page, a test).
	Store  *fencekube.Store
	Health *fencekube.Health
	Config *fencekube.ConfigSource
	// Remediations is set with Options.Remediation.
	Remediations *fencekube.Remediations
	// Checker runs the device health checks (Options.DeviceChecks).
	Checker *healthcheck.Checker
	// Leases is set with Controller.LeaseGrace: the node leases, read by
	// Health.
	Leases *fencekube.Leases
	// NodeLeases is set with Options.NodeLease: the leases that keep one
	// actor per node.
	NodeLeases *nodelease.Manager

	maxConcurrent int
	wake          chan event.TypedGenericEvent[string]
	secrets       *fencekube.Secrets
	cache         cache.Cache
	namespace     string

	bindMu sync.Mutex
	bound  chan struct{} // closed once the adapters read the cache
}

// informer returns the manager cache's informer of obj, as client-go's
// SharedIndexInformer (the one controller-runtime's cache holds).
func informer(ctx context.Context, c cache.Cache, obj client.Object) (toolscache.SharedIndexInformer, error) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the manager's cache gives a %T, not a client-go SharedIndexInformer", inf)
	}
	return sii, nil
}

// New builds the fence controller over mgr: its cache's informers for
// Nodes, NodeFences, ConfigMaps (and Secrets), its client configuration,
// and its event recorder (GetEventRecorder(Name)). Add it to the manager
// with SetupWithManager.
func New(ctx context.Context, mgr manager.Manager, o Options) (*Reconciler, error) {
	if o.Namespace == "" {
		return nil, errors.New("fencectrl: Options.Namespace is required")
	}
	if gvk := v1alpha1.GroupVersion.WithKind(v1alpha1.NodeFenceKind); !mgr.GetScheme().Recognizes(gvk) {
		return nil, fmt.Errorf("fencectrl: the manager's scheme has no %s: add v1alpha1.AddToScheme to it", gvk)
	}
	// The clients share the manager's HTTP client: its transport, its
	// connections and its configuration's rate limit.
	cfg, hc := mgr.GetConfig(), mgr.GetHTTPClient()
	api := o.Client
	if api == nil {
		c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: hc, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return nil, fmt.Errorf("fencectrl: %w", err)
		}
		api = c
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := mgr.GetCache()

	events := &fencekube.RecorderEvents{Recorder: mgr.GetEventRecorder(Name), Logger: logger}
	r := &Reconciler{wake: make(chan event.TypedGenericEvent[string], 1024), cache: c, namespace: o.Namespace, bound: make(chan struct{})}
	r.Health = fencekube.NewHealth()
	if o.Controller.LeaseGrace > 0 {
		// Every node renews its lease every 10 s: a watch event a second
		// per ten nodes, read as protobuf (decoding JSON took most of the
		// controller's CPU at 1,000 nodes).
		pcfg := rest.CopyConfig(cfg)
		pcfg.ContentType = runtime.ContentTypeProtobuf
		pcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		pclient, err := kubernetes.NewForConfigAndClient(pcfg, hc)
		if err != nil {
			return nil, fmt.Errorf("fencectrl: %w", err)
		}
		r.Leases = fencekube.NewLeases(pclient)
		r.Health.UseLeases(r.Leases)
	}
	// Written through the manager's client, listed from its cache, read
	// fresh from the API server.
	r.Store = fencekube.NewStore(mgr.GetClient(), fencekube.StoreOptions{Logger: logger, Events: events, Reader: mgr.GetAPIReader()})
	copts := fencekube.ConfigOptions{Registry: o.Registry}
	if o.Secrets {
		r.secrets = fencekube.NewSecrets(mgr.GetClient(), o.Namespace) // the cache's
		copts.Secrets = r.secrets
	}
	r.Config = fencekube.NewConfigSource(api, o.Namespace, copts)

	gate := o.Gate
	if gate == nil {
		gate = policy.Default()
	}
	maint := policy.DefaultConfig().Maintenance
	if o.Maintenance != nil {
		maint = *o.Maintenance
	}
	// Under maintenance: a NodeMaintenance names the node, or one of its
	// node lifecycle conditions (KEP-5683) is True.
	nms := &fencekube.NodeMaintenances{Client: mgr.GetAPIReader()}
	maintenances := func(ctx context.Context) ([]policy.Maintenance, error) {
		ms, err := nms.List(ctx)
		if err != nil {
			return nil, err
		}
		return append(ms, r.Health.Lifecycle()...), nil
	}
	gate = policy.All(gate, policy.Excluded{}, policy.Paused(r.Config.Pauses), policy.UnderMaintenance(maint, maintenances))
	if o.Etcd != nil {
		gate = policy.All(gate, policy.EtcdQuorum(teardown.EtcdMembersOf(o.Etcd, func(node string) []string {
			n, _ := r.Health.Node(node)
			return n.Addresses
		}, 0)))
	}
	if o.DetectOnly {
		gate = policy.All(gate, policy.DetectOnly())
		if o.Controller.RefuseConfirmations == "" {
			o.Controller.RefuseConfirmations = "detect-only mode: no pod is released, on a person's word either"
		}
	}
	if o.NodeLease != nil {
		lo := *o.NodeLease
		if lo.Shared == nil && o.Remediation {
			lo.Shared = func(node string) []string { return r.Remediations.Holders(node) }
		}
		if lo.Logger == nil {
			lo.Logger = logger
		}
		m, err := nodelease.New(api, lo)
		if err != nil {
			return nil, fmt.Errorf("fencectrl: %w", err)
		}
		r.NodeLeases = m
		// Last: the lease is taken only for a fencing every other gate
		// admits (and never in detect-only mode).
		gate = policy.All(gate, m.Gate())
	}
	if o.ObserveGate != nil {
		gate = o.ObserveGate(gate)
	}
	pods := o.Pods
	if pods == nil {
		pods = &fencekube.TaintPods{Client: api, Logger: logger, ForceDelete: true, LeaseFresh: o.Controller.LeaseGrace}
	}
	if tp, ok := pods.(*fencekube.TaintPods); ok && r.Leases != nil && tp.Renewed == nil {
		// Judged on the controller's clock, as the detection is.
		tp.Renewed = r.Leases.Renewed
	}
	r.Controller = &controller.Controller{
		Health: r.Health, Store: r.Store, Config: r.Config, Pods: pods, Events: events, Gate: gate,
		Admissions: fencekube.NewAdmissions(api, cmp.Or(o.AdmissionsNamespace, o.Namespace), fencekube.DefaultAdmissionsLease),
		Registry:   o.Registry, Observer: o.Observer, Logger: logger, Options: o.Controller,
		// A person's confirmation is acted on only once the API server's
		// own record says who made it, and that they may.
		ConfirmCheck: (&fencekube.ConfirmationProof{Reader: mgr.GetAPIReader(), Client: api}).Check,
		// A watch that saw the node's pods go wakes it at once.
		WakeNode: r.enqueue,
		// A storage isolation blocklists the addresses the storage sees.
		StorageAddresses: o.StorageAddresses,
	}
	if r.Controller.StorageAddresses == nil {
		r.Controller.StorageAddresses = &networkfence.Clients{Reader: mgr.GetAPIReader()}
	}
	if o.DeviceChecks != nil {
		if err := o.DeviceChecks.Validate(); err != nil {
			return nil, err
		}
		var rep healthcheck.Reporter = &fencekube.DeviceConditions{Client: api, Events: events, Logger: logger,
			Current: func(node string) (corev1.NodeCondition, bool) {
				return r.Health.Condition(node, fencekube.DeviceConditionType)
			}}
		if o.DeviceReporter != nil {
			rep = healthcheck.Reporters(rep, o.DeviceReporter)
		}
		r.Checker = &healthcheck.Checker{Config: r.Config, Health: r.Health, Registry: o.Registry, Reporter: rep,
			Logger: logger, Options: *o.DeviceChecks}
	}
	if o.Remediation {
		r.Remediations = fencekube.NewRemediations(mgr.GetClient(), fencekube.RemediationOptions{
			Namespace: o.RemediationNamespace, Store: r.Store, Health: r.Health, Logger: logger, Reader: mgr.GetAPIReader(),
			Events: mgr.GetEventRecorder(Name)})
		r.Remediations.OnChange(func(node string) {
			// A remediation withdrawn: a switch under way stops now,
			// not at the next reconcile (the node's worker runs it).
			r.Controller.Withdraw(node)
			r.enqueue(node)
		})
		r.Controller.Requests = r.Remediations
	}
	r.maxConcurrent = o.Controller.MaxWorkers
	if r.maxConcurrent <= 0 {
		r.maxConcurrent = 16
	}
	return r, nil
}

// bind gives the adapters the manager cache's informers and waits for them
// to sync (at once after the controller's own watches synced: the same
// informers). It runs at the first reconcile, or the first pass of the
// backstop, never before the manager starts: an informer asked for before
// the start would hold the manager's start until it syncs, for ever when
// RBAC forbids the read, where the controller's watches give up after
// their CacheSyncTimeout and name the resource.
func (r *Reconciler) bind(ctx context.Context) error {
	if r.cache == nil {
		return nil // built without New: its Controller's ports are the caller's
	}
	r.bindMu.Lock()
	defer r.bindMu.Unlock()
	select {
	case <-r.bound:
		return nil
	default:
	}
	c := r.cache
	nodes, err := informer(ctx, c, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("fencectrl: Node informer: %w", err)
	}
	fences, err := informer(ctx, c, &v1alpha1.NodeFence{})
	if err != nil {
		return fmt.Errorf("fencectrl: NodeFence informer: %w", err)
	}
	// The ConfigMaps and Secrets of one namespace (CacheOptions): the
	// cache's informer of them has no Store of its own, its reader lists
	// them.
	cms, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("fencectrl: ConfigMap informer: %w", err)
	}
	r.Health.UseInformer(nodes)
	r.Config.UseCache(cms, configMaps{reader: c, namespace: r.namespace})
	// (The Secrets are read through the manager's client, from its
	// cache.)
	syncs := []interface {
		WaitForSync(context.Context) error
	}{r.Health, informerSync{fences}, r.Config}
	for _, a := range syncs {
		if err := a.WaitForSync(ctx); err != nil {
			return err
		}
	}
	close(r.bound)
	return nil
}

// Bound is closed once the adapters (Store, Health, Config) read the
// manager's cache: after the first reconcile or the first pass of the
// backstop.
func (r *Reconciler) Bound() <-chan struct{} { return r.bound }

// informerSync waits for one of the manager's informers (which the
// manager runs: Start starts nothing).
type informerSync struct {
	inf toolscache.SharedIndexInformer
}

func (informerSync) Start(context.Context) {}

func (s informerSync) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.inf.HasSynced) {
		return fmt.Errorf("fencectrl: NodeFences not synced: %w", context.Cause(ctx))
	}
	return nil
}

// enqueue asks for a reconcile of node, from outside the manager's
// watches (a remediation that changed).
func (r *Reconciler) enqueue(node string) {
	select {
	case r.wake <- event.TypedGenericEvent[string]{Object: node}:
	default: // full: a resync will come
	}
}

// Reconcile works on the node req names (controller.Controller.Reconcile).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.bind(ctx); err != nil {
		return reconcile.Result{}, err
	}
	after, err := r.Controller.Reconcile(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// ownWrite reports whether o is the NodeFence as this controller's Store
// last wrote it (fencekube.Store.OwnWrite).
func (r *Reconciler) ownWrite(o client.Object) bool {
	return r.Store != nil && o != nil && r.Store.OwnWrite(o.GetName(), o.GetResourceVersion())
}

// SetupWithManager adds the reconciler to mgr, with its watches: Nodes
// (created, deleted, their Ready condition changed), NodeFences, the fence
// ConfigMaps of the namespace (fence-config-<node> wakes its node; a
// method or a template, every node with a record), and the remediations.
// The adapters' informers are the manager's; with Options.Remediation, the
// remediations' reconciler runs beside it. As cluster-api's reconcilers
// take them, options tune the controllers: the fence controller's
// MaxConcurrentReconciles, when zero, is New's Options.Controller.MaxWorkers
// (16 by default); the remediations' is always 2.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, options crcontroller.Options) error {
	if options.MaxConcurrentReconciles <= 0 {
		options.MaxConcurrentReconciles = r.maxConcurrent
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return fencekube.NodeReadyChanged(e.ObjectOld, e.ObjectNew)
			},
		})).
		// A NodeFence changed by this controller's own write is not
		// looked at again for it: the worker that wrote went on from
		// what it wrote, and a look would read the object once more.
		Watches(&v1alpha1.NodeFence{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return !r.ownWrite(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool { return !r.ownWrite(e.ObjectNew) },
		})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.configMapNodes)).
		WatchesRawSource(source.Channel(r.wake, handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, node string) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: node}}}
		}))).
		WithOptions(options)
	if r.secrets != nil {
		// Read, not mapped: the watch makes the controller's start wait
		// for the Secrets (and fail, naming them, when it may not read
		// them).
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return nil }))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	// The backstop: every interval, the nodes a pass would work on are
	// queued, so that nothing waits for an event that was missed (and the
	// controller's LastPass tells a liveness probe that it looks).
	if err := mgr.Add(leaderRunnable(r.backstop)); err != nil {
		return err
	}
	if r.Leases != nil {
		// The node leases, read while this instance leads: a lease that
		// turns stale (or is renewed again) wakes its node at once.
		grace := r.Controller.Options.LeaseGrace
		if err := mgr.Add(leaderRunnable(func(ctx context.Context) error {
			if err := r.bind(ctx); err != nil {
				return nil
			}
			r.Leases.Start(ctx)
			r.Leases.Watch(ctx, grace, 0, r.enqueue)
			return nil
		})); err != nil {
			return err
		}
	}
	if r.NodeLeases != nil {
		// The node leases fencekit holds, renewed while their node's
		// record is open and deleted once it is closed, by the leader.
		if err := mgr.Add(leaderRunnable(func(ctx context.Context) error {
			if err := r.bind(ctx); err != nil {
				return nil
			}
			return r.NodeLeases.Run(ctx, r.leasedNodes)
		})); err != nil {
			return err
		}
	}
	if r.Checker != nil {
		if err := mgr.Add(leaderRunnable(func(ctx context.Context) error {
			if err := r.bind(ctx); err != nil {
				return nil
			}
			return r.Checker.Run(ctx)
		})); err != nil {
			return err
		}
	}
	if r.Remediations != nil {
		// The remediations, keyed by remediation; a NodeFence that
		// changed wakes its node's, whose status follows the record.
		// Each waits for the adapters to read the cache: a node not yet
		// seen would read as one that does not exist.
		rems := r.Remediations
		return ctrl.NewControllerManagedBy(mgr).
			Named(Name+"-remediation").
			For(&v1alpha1.NodeFenceRemediation{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return rems.Watched(o.GetNamespace())
			}))).
			Watches(&v1alpha1.NodeFence{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
				return rems.ForNode(o.GetName())
			})).
			WithOptions(remediationOptions(options, rems.Resync())).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				if err := r.bind(ctx); err != nil {
					return reconcile.Result{}, err
				}
				return rems.Reconcile(ctx, req)
			}))
	}
	return nil
}

// remediationOptions are the remediations' controller's: options, with two
// reconciles at once (a remediation's work is a few reads and a write) and,
// unless options has a rate limiter, a failed remediation retried with an
// exponential backoff of at most resync, as its informer's resync bounded
// it before.
func remediationOptions(options crcontroller.Options, resync time.Duration) crcontroller.Options {
	options.MaxConcurrentReconciles = 2
	if options.RateLimiter == nil {
		options.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, resync)
	}
	return options
}

// WithRemediationNamespace returns opts with the cache of
// NodeFenceRemediations kept to namespace (Options.RemediationNamespace),
// so that the controller needs to read them there only; an empty namespace
// leaves opts as they are (every namespace).
func WithRemediationNamespace(opts cache.Options, namespace string) cache.Options {
	if namespace == "" {
		return opts
	}
	by := maps.Clone(opts.ByObject)
	if by == nil {
		by = map[client.Object]cache.ByObject{}
	}
	by[&v1alpha1.NodeFenceRemediation{}] = cache.ByObject{Namespaces: map[string]cache.Config{namespace: {}}}
	opts.ByObject = by
	return opts
}

// backstop queues the nodes with work every Options.Interval of the
// controller until ctx ends.
func (r *Reconciler) backstop(ctx context.Context) error {
	if err := r.bind(ctx); err != nil {
		return nil // the manager stops (the controller's start failed)
	}
	t := time.NewTicker(r.Controller.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		nodes, err := r.Controller.Pending(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.Controller.Logger.Warn("fence controller pass failed", "err", err)
			}
			continue
		}
		for _, n := range nodes {
			select {
			case r.wake <- event.TypedGenericEvent[string]{Object: n}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// configMapNodes maps a fence ConfigMap to the nodes whose fencing it may
// change.
func (r *Reconciler) configMapNodes(ctx context.Context, o client.Object) []reconcile.Request {
	const prefix = "fence-config-"
	if !strings.HasPrefix(o.GetName(), "fence-") {
		return nil
	}
	if node, ok := strings.CutPrefix(o.GetName(), prefix); ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: node}}}
	}
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(recs))
	for _, rec := range recs {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: rec.Node}})
	}
	return out
}

// configMaps lists the ConfigMaps of one namespace from the manager's cache
// (fencekube.Lister): the cache's informer of a few namespaces has no Store
// of its own.
type configMaps struct {
	reader    client.Reader
	namespace string
}

func (l configMaps) List() []any {
	var cl corev1.ConfigMapList
	if err := l.reader.List(context.Background(), &cl, client.InNamespace(l.namespace)); err != nil {
		return nil
	}
	out := make([]any, len(cl.Items))
	for i := range cl.Items {
		out[i] = &cl.Items[i]
	}
	return out
}

func (l configMaps) GetByKey(key string) (any, bool, error) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	cm := &corev1.ConfigMap{}
	if err := l.reader.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return cm, true, nil
}

// leasedNodes returns the nodes whose fencing holds their node lease: a
// record that is not closed, past the admission of its first step.
func (r *Reconciler) leasedNodes(ctx context.Context) (map[string]bool, error) {
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(recs))
	for _, nf := range recs {
		waiting := nf.Status == flow.StatusNew && len(nf.Jobs) == 0 && !nf.Fenced() && !nf.Isolated && nf.Retries == 0 &&
			nf.Released == flow.ReleaseNone
		if !nf.Closed() && !waiting {
			out[nf.Node] = true
		}
	}
	return out, nil
}

// leaderRunnable is a manager.Runnable that runs on the leader only.
type leaderRunnable func(ctx context.Context) error

func (f leaderRunnable) Start(ctx context.Context) error { return f(ctx) }
func (leaderRunnable) NeedLeaderElection() bool          { return true }

var (
	_ reconcile.Reconciler           = (*Reconciler)(nil)
	_ manager.LeaderElectionRunnable = leaderRunnable(nil)
)
