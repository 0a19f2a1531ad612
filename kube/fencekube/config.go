package fencekube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
)

// configPrefix starts the name of every ConfigMap of the fence
// configuration: fence-config-<node>, fence-method-<method>-<node>,
// fence-method-template-<name>.
const configPrefix = "fence-"

// ConfigOptions tune a ConfigSource. The zero value works.
type ConfigOptions struct {
	// TTL is how long a configuration listed through the client (until an
	// informer is given and has synced) is used again before the
	// ConfigMaps are listed anew: 5 s when zero, none when negative.
	TTL time.Duration
	// Now is the clock of the TTL (time.Now when nil).
	Now func() time.Time
	// Registry holds the drivers the configuration is checked against
	// (config.ParseFor): unknown keys, missing parameters, values a
	// driver refuses. fence.DefaultRegistry when nil.
	Registry *fence.Registry
	// Secrets, when set, gives the Secrets that methods name instead of
	// holding their credentials (password_secret=NAME/KEY; see
	// config.SecretSuffix), read when a method is opened. Without it, such
	// a method fails to open, with an error naming its ConfigMap and key.
	Secrets config.SecretSource
}

// RBAC, in the controller's namespace: the fence ConfigMaps, from an
// informer.
// +kubebuilder:rbac:groups="",namespace=fencekit-system,resources=configmaps,verbs=list;watch

// ConfigSource gives the fence configuration held in the node-fencing
// design's ConfigMaps (fence-config-*, fence-method-*,
// fence-method-template-*) of one namespace, parsed and checked against
// the drivers with config.ParseFor. It implements
// controller.ConfigSource.
//
// Once it has been given a ConfigMap informer (UseInformer, UseCache: a
// controller-runtime manager's cache) and that has synced, Config parses
// the informer's ConfigMaps, again only after one of them changed; before,
// it lists them through its client and keeps the result for
// ConfigOptions.TTL. A parse error is returned as config.Parse
// returned it (every error names the ConfigMap and the key); it is kept as
// the configuration is, so a bad ConfigMap is not parsed again until the
// ConfigMaps change.
type ConfigSource struct {
	client    client.Reader
	namespace string
	opts      ConfigOptions
	src       source

	mu sync.Mutex
	// gen counts the changes the informer saw; parsed is the gen of cfg
	// and err. listed is when cfg and err were read from the API server.
	gen, parsed uint64
	fromCache   bool
	listed      time.Time
	cfg         *config.Config
	err         error
}

// NewConfigSource returns the ConfigSource of the fence ConfigMaps of
// namespace, which c lists until an informer is given.
func NewConfigSource(c client.Reader, namespace string, opts ConfigOptions) *ConfigSource {
	if opts.TTL == 0 {
		opts.TTL = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &ConfigSource{client: c, namespace: namespace, opts: opts}
}

// UseInformer has c read the ConfigMaps from inf, a ConfigMap informer its
// owner runs (a controller-runtime manager's cache, which may hold other
// namespaces' too: c reads only its own namespace's), with a handler that
// tells c when one changed. StripConfigMap is a transform for it. A second
// call does nothing.
func (c *ConfigSource) UseInformer(inf cache.SharedIndexInformer) { c.UseCache(inf, inf.GetStore()) }

// UseCache is UseInformer for an informer that gives its objects through
// items rather than a Store (a controller-runtime cache's, whose informer
// of a few namespaces has none).
func (c *ConfigSource) UseCache(inf Informer, items Lister) {
	if c.src.hasGiven() {
		return
	}
	c.src.use(items, c.addHandler(inf))
}

// addHandler has inf count the changes of the fence ConfigMaps; it returns
// what tells the handler synced.
func (c *ConfigSource) addHandler(inf Informer) syncer {
	changed := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && (cm.Namespace != c.namespace || !strings.HasPrefix(cm.Name, configPrefix)) {
			return
		}
		c.mu.Lock()
		c.gen++
		c.mu.Unlock()
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed, // a tombstone counts as a change
	})
	if err != nil {
		return neverSynced{}
	}
	return reg
}

// StripConfigMap keeps only the names of the ConfigMaps that are not part
// of the fence configuration.
func StripConfigMap(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm.ManagedFields = nil
		if !strings.HasPrefix(cm.Name, configPrefix) {
			cm.Data, cm.BinaryData, cm.Annotations = nil, nil, nil
		}
	}
	return obj, nil
}

// HasSynced reports whether the informer has synced.
func (c *ConfigSource) HasSynced() bool { return c.src.hasSynced() }

// WaitForSync waits until an informer was given and has synced, or ctx
// ends.
func (c *ConfigSource) WaitForSync(ctx context.Context) error { return c.src.waitForSync(ctx) }

// Config returns the parsed configuration. The ConfigMaps are parsed with
// config.ParseFor: with errors, the Config still holds the nodes
// whose configuration is valid, and the error is returned beside it, so that
// one broken ConfigMap stops only the fencing of the nodes it concerns. An
// error listing the ConfigMaps is an *Error (OpConfig), with no Config.
func (c *ConfigSource) Config(ctx context.Context) (*config.Config, error) {
	if inf := c.src.informer(); inf != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fromCache && c.parsed == c.gen {
			return c.cfg, c.err
		}
		gen := c.gen // read before listing: a change during the parse is seen next time
		var cms []config.ConfigMap
		for _, it := range inf.List() {
			if cm, ok := it.(*corev1.ConfigMap); ok && cm.Namespace == c.namespace && strings.HasPrefix(cm.Name, configPrefix) {
				cms = append(cms, toFence(cm))
			}
		}
		c.cfg, c.err = c.parse(cms)
		c.parsed, c.fromCache = gen, true
		return c.cfg, c.err
	}

	c.mu.Lock()
	if !c.fromCache && !c.listed.IsZero() && c.opts.TTL > 0 && c.opts.Now().Sub(c.listed) < c.opts.TTL {
		cfg, err := c.cfg, c.err
		c.mu.Unlock()
		return cfg, err
	}
	c.mu.Unlock()
	cms, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	cfg, perr := c.parse(cms)
	c.mu.Lock()
	c.cfg, c.err, c.fromCache, c.listed = cfg, perr, false, c.opts.Now()
	c.mu.Unlock()
	return cfg, perr
}

func (c *ConfigSource) list(ctx context.Context) ([]config.ConfigMap, error) {
	var out []config.ConfigMap
	err := listConfigMaps(ctx, c.client, c.namespace, func(cm *corev1.ConfigMap) {
		if strings.HasPrefix(cm.Name, configPrefix) {
			out = append(out, toFence(cm))
		}
	})
	if err != nil {
		return nil, &Error{Kind: "ConfigMap", Name: c.namespace + "/" + configPrefix + "*", Op: OpConfig, Err: err}
	}
	return out, nil
}

// listConfigMaps calls each with every ConfigMap of namespace, read page by
// page.
func listConfigMaps(ctx context.Context, c client.Reader, namespace string, each func(*corev1.ConfigMap)) error {
	opts := &client.ListOptions{Namespace: namespace, Limit: 500}
	for page := 0; ; page++ {
		if page >= maxPages {
			return fmt.Errorf("more than %d pages", maxPages)
		}
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, opts); err != nil {
			return err
		}
		for i := range l.Items {
			each(&l.Items[i])
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// parse sorts the ConfigMaps by name, so that the errors come in the same
// order whatever the order of the list, parses and checks them, and gives
// the Config the Secrets to read.
func (c *ConfigSource) parse(cms []config.ConfigMap) (*config.Config, error) {
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })
	cfg, err := config.ParseFor(cms, c.opts.Registry)
	if cfg != nil && c.opts.Secrets != nil {
		cfg = cfg.WithSecrets(c.opts.Secrets)
	}
	return cfg, err
}

func toFence(cm *corev1.ConfigMap) config.ConfigMap {
	return config.ConfigMap{Name: cm.Name, Namespace: cm.Namespace, Data: cm.Data}
}

var _ controller.ConfigSource = (*ConfigSource)(nil)
