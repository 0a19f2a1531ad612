package fencekube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
)

// StoreOptions tune a Store. The zero value works.
type StoreOptions struct {
	// Logger receives the store's log lines (discarded when nil).
	Logger *slog.Logger
	// Events, when set, receives a warning event (reason
	// NodeFenceMalformed) on the node of every malformed NodeFence that
	// List skips, once per resourceVersion of the object.
	Events controller.Events
	// PageSize is the page size of a List read from the API server (500
	// when zero).
	PageSize int64
}

// ReasonMalformed is the reason of the event about a malformed NodeFence.
const ReasonMalformed = "NodeFenceMalformed"

// Store keeps NodeFence records in NodeFence custom resources, through the
// dynamic client. It implements controller.Store.
//
// Version is the object's resourceVersion, and every write carries it:
// the API server refuses a write made on a stale read (409, reported as
// an error wrapping controller.ErrConflict), so two controllers racing on
// one node cannot both act on the same state. This, not leader election,
// is what prevents a double fencing.
//
// Create creates the object with the Finalizer, then writes its status
// through the status subresource. Update writes the status only, through
// the status subresource; the controller never writes spec after Create.
// Forget removes the Finalizer (deleting the object first when no user
// did). Get always reads from the API server. List reads from an informer
// once Start has been called and the informer has synced, else from the
// API server, page by page; a malformed object is left out of List (and
// reported through StoreOptions.Events and the log) and its Get returns
// the error.
//
// A Store is safe for concurrent use.
type Store struct {
	client dynamic.Interface
	res    dynamic.NamespaceableResourceInterface
	opts   StoreOptions
	logger *slog.Logger
	runner runner

	mu sync.Mutex
	// versions holds, per node, the spec.retry and status.observedRetry of
	// the last version read or written: Update needs them to write
	// observedRetry, and reads the object again when they are not there.
	versions map[string]storedVersion
	// memo holds the informer's objects converted, by name, so that List
	// converts an object once per resourceVersion.
	memo map[string]*memoEntry
	pass uint64
	// reported holds the resourceVersion of the malformed objects already
	// reported, by name.
	reported map[string]string
	// onChange is called with a node's name when its object changes.
	onChange func(node string)
	// written holds, per node, the resourceVersion of this Store's last
	// write of its object (OwnWrite).
	written map[string]string
}

type storedVersion struct {
	rv              string
	retry, observed int64
	generation      int64
	conditions      []metav1.Condition
}

// storedOf returns what Update needs of a stored object.
func storedOf(o *NodeFence) storedVersion {
	return storedVersion{rv: o.ResourceVersion, retry: o.Spec.Retry, observed: o.Status.ObservedRetry,
		generation: o.Generation, conditions: o.Status.Conditions}
}

type memoEntry struct {
	rv   string
	rec  *flow.NodeFence
	err  error
	pass uint64
}

// NewStore returns a Store of the NodeFence objects of client.
func NewStore(client dynamic.Interface, opts StoreOptions) *Store {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{
		client:   client,
		res:      client.Resource(NodeFenceResource),
		opts:     opts,
		logger:   logger,
		versions: map[string]storedVersion{},
		memo:     map[string]*memoEntry{},
		reported: map[string]string{},
		written:  map[string]string{},
	}
}

// OwnWrite reports whether resourceVersion rv of node's NodeFence is this
// Store's own last write of it: a watch event of it tells the writer
// nothing new (it went on from what it wrote), and a controller need not
// look at the node again for it (about a fifth of a fencing's requests
// were such looks, each a read of the object).
func (s *Store) OwnWrite(node, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[node]
	return ok && rv != "" && w == rv
}

// noteWrite remembers u as this Store's last write of its object.
func (s *Store) noteWrite(u *unstructured.Unstructured) {
	s.mu.Lock()
	s.written[u.GetName()] = u.GetResourceVersion()
	s.mu.Unlock()
}

// Start starts the informer that List reads from once it has synced. It
// runs until ctx ends or Stop is called. Calling it again does nothing.
func (s *Store) Start(ctx context.Context) {
	s.runner.start(ctx, func(inf Informer) (Informer, syncer) {
		if inf != nil {
			s.addHandler(inf)
			return inf, inf
		}
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return s.res.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return s.res.Watch(ctx, o)
			},
		}
		own := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, s.client), &unstructured.Unstructured{}, 0, cache.Indexers{})
		_ = own.SetTransform(stripManagedFields)
		s.addHandler(own)
		return own, own
	})
}

// UseInformer has s read the NodeFence objects from inf, an informer of
// unstructured NodeFences its owner runs (a controller-runtime manager's
// cache, asked for an unstructured.Unstructured of NodeFence's group,
// version and kind), instead of starting its own: Start then adds s's
// handler to it and starts nothing, and Stop leaves it running. Call it
// before Start.
func (s *Store) UseInformer(inf cache.SharedIndexInformer) { s.runner.use(inf, inf.GetStore()) }

// UseCache is UseInformer for an informer that gives its objects through
// items rather than a Store. Call it before Start.
func (s *Store) UseCache(inf Informer, items Lister) { s.runner.use(inf, items) }

// addHandler has inf call OnChange's function.
func (s *Store) addHandler(inf Informer) {
	f := s.onChange
	if f == nil {
		return
	}
	name := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			f(m.GetName())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: name, UpdateFunc: func(_, cur any) { name(cur) }, DeleteFunc: name,
	})
}

// OnChange has f called with the node's name, from the informer's
// goroutine, whenever a NodeFence is added, changed or deleted, once the
// informer holds the change. Call it before Start.
func (s *Store) OnChange(f func(node string)) { s.onChange = f }

// HasSynced reports whether the informer has synced: List then reads from
// it.
func (s *Store) HasSynced() bool { return s.runner.hasSynced() }

// WaitForSync waits until the informer has synced or ctx ends.
func (s *Store) WaitForSync(ctx context.Context) error { return s.runner.waitForSync(ctx) }

// Stop stops the informer and waits for it; List reads from the API server
// afterwards.
func (s *Store) Stop() { s.runner.stop() }

// fail returns the *Error of op on node; errors of this package pass as
// they are.
func (s *Store) fail(node, op string, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Kind == Kind {
		return err
	}
	return &Error{Kind: Kind, Name: node, Op: op, Err: apiError(err)}
}

// decode converts an object and remembers its version.
func (s *Store) decode(u *unstructured.Unstructured) (*flow.NodeFence, error) {
	o, err := FromUnstructured(u)
	if err != nil {
		return nil, err
	}
	nf, err := Record(o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.versions[o.Name] = storedOf(o)
	s.mu.Unlock()
	return nf, nil
}

// Get reads the node's record from the API server. A malformed object is
// an *Error wrapping ErrMalformed that names the field.
func (s *Store) Get(ctx context.Context, node string) (*flow.NodeFence, error) {
	u, err := s.res.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, s.fail(node, OpGet, err)
	}
	return s.decode(u)
}

// List returns the records of every well-formed NodeFence, sorted by node,
// from the informer once it has synced, else from the API server. The
// malformed objects are left out: each is logged and, with
// StoreOptions.Events, reported on its node, once per resourceVersion.
func (s *Store) List(ctx context.Context) ([]*flow.NodeFence, error) {
	if inf := s.runner.informer(); inf != nil {
		return s.listCache(inf), nil
	}
	var out []*flow.NodeFence
	opts := metav1.ListOptions{Limit: s.opts.PageSize}
	for page := 0; ; page++ {
		if page >= maxPages {
			return nil, &Error{Kind: Kind, Op: OpList, Err: fmt.Errorf("more than %d pages", maxPages)}
		}
		l, err := s.res.List(ctx, opts)
		if err != nil {
			return nil, &Error{Kind: Kind, Op: OpList, Err: apiError(err)}
		}
		for i := range l.Items {
			nf, err := s.decode(&l.Items[i])
			if err != nil {
				s.reportMalformed(&l.Items[i], err)
				continue
			}
			out = append(out, nf)
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// maxPages bounds the pages of one list.
const maxPages = 10000

func (s *Store) listCache(inf Lister) []*flow.NodeFence {
	items := inf.List()
	out := make([]*flow.NodeFence, 0, len(items))
	var bad []*unstructured.Unstructured
	var badErrs []error
	s.mu.Lock()
	s.pass++
	for _, it := range items {
		u, ok := it.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		name, rv := u.GetName(), u.GetResourceVersion()
		e := s.memo[name]
		if e == nil || e.rv != rv {
			e = &memoEntry{rv: rv}
			if o, err := FromUnstructured(u); err != nil {
				e.err = err
			} else if e.rec, e.err = Record(o); e.err == nil {
				s.versions[name] = storedOf(o)
			}
			s.memo[name] = e
		}
		e.pass = s.pass
		if e.err != nil {
			bad, badErrs = append(bad, u), append(badErrs, e.err)
			continue
		}
		out = append(out, e.rec.Clone())
	}
	if len(s.memo) > len(items) {
		for name, e := range s.memo {
			if e.pass != s.pass {
				delete(s.memo, name)
			}
		}
	}
	s.mu.Unlock()
	for i, u := range bad {
		s.reportMalformed(u, badErrs[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// reportMalformed logs a malformed object and reports it on its node, once
// per resourceVersion.
func (s *Store) reportMalformed(u *unstructured.Unstructured, err error) {
	name, rv := u.GetName(), u.GetResourceVersion()
	s.mu.Lock()
	seen := s.reported[name] == rv
	s.reported[name] = rv
	if len(s.reported) > 10000 {
		clear(s.reported)
	}
	s.mu.Unlock()
	if seen {
		return
	}
	s.logger.Warn("malformed NodeFence left out; the node is not fenced through it until it is fixed or deleted",
		"nodefence", name, "resourceVersion", rv, "error", err)
	if s.opts.Events != nil && name != "" {
		s.opts.Events.Event(name, true, ReasonMalformed, err.Error()+" (the node is not fenced through this NodeFence until it is fixed or deleted)")
	}
}

// encode returns the object of a record the controller hands over, or an
// *Error (OpEncode) when the record would not read back.
func encode(nf *flow.NodeFence) (*NodeFence, error) {
	if nf.Node == "" {
		return nil, &Error{Kind: Kind, Op: OpEncode, Field: "Node", Err: errors.New("record without a node")}
	}
	o := FromRecord(nf)
	if _, err := Record(o); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, &Error{Kind: Kind, Name: nf.Node, Op: OpEncode, Field: e.Field, Err: err}
		}
		return nil, &Error{Kind: Kind, Name: nf.Node, Op: OpEncode, Err: err}
	}
	return o, nil
}

// Create creates the node's NodeFence with the Finalizer, then writes
// nf's status, and returns the record as stored. When the node has one
// already the error wraps controller.ErrConflict; it does too when
// another writer changed the new object before its status was written.
func (s *Store) Create(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	o, err := encode(nf)
	if err != nil {
		return nil, err
	}
	o.ResourceVersion = ""
	o.Finalizers = []string{Finalizer}
	o.Status.ObservedGeneration = 1
	o.Status.Conditions = Conditions(nf, nil, 1, time.Now())
	u, err := ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	created, err := s.res.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, s.fail(nf.Node, OpCreate, err)
	}
	status := u.Object["status"]
	created.Object["status"] = status
	written, err := s.res.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, s.fail(nf.Node, OpCreate, fmt.Errorf("writing the status of the new object: %w", err))
	}
	s.noteWrite(written)
	return s.decode(written)
}

// Update writes nf's status to the node's NodeFence, with resourceVersion
// nf.Version as a precondition, and returns the record as stored. A stale
// Version is an error wrapping controller.ErrConflict; an object that is
// gone, controller.ErrNotFound.
//
// Clear: when the stored spec.retry is above status.observedRetry (the
// record was read with Clear set) and nf.Clear is false (the controller
// acted on it), observedRetry is written as spec.retry.
func (s *Store) Update(ctx context.Context, nf *flow.NodeFence) (*flow.NodeFence, error) {
	o, err := encode(nf)
	if err != nil {
		return nil, err
	}
	if nf.Version == "" {
		return nil, &Error{Kind: Kind, Name: nf.Node, Op: OpUpdate, Field: "metadata.resourceVersion", Err: errors.New("record without a version")}
	}
	v, err := s.version(ctx, nf.Node, nf.Version, OpUpdate)
	if err != nil {
		return nil, err
	}
	o.Spec.Retry = v.retry
	o.Status.ObservedRetry = v.observed
	if !nf.Clear && v.retry > v.observed {
		o.Status.ObservedRetry = v.retry
	}
	o.Status.ObservedGeneration = v.generation
	o.Status.Conditions = Conditions(nf, v.conditions, v.generation, time.Now())
	u, err := ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	written, err := s.res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.forgetVersion(nf.Node)
		}
		return nil, s.fail(nf.Node, OpUpdate, err)
	}
	s.noteWrite(written)
	return s.decode(written)
}

// version returns what Update needs of the stored version rv of the
// node's object: from memory, else read again (an error wrapping
// controller.ErrConflict when the object is at another version now).
func (s *Store) version(ctx context.Context, node, rv, op string) (storedVersion, error) {
	s.mu.Lock()
	v, ok := s.versions[node]
	s.mu.Unlock()
	if ok && v.rv == rv {
		return v, nil
	}
	u, err := s.res.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return v, s.fail(node, op, err)
	}
	if got := u.GetResourceVersion(); got != rv {
		return v, &Error{Kind: Kind, Name: node, Op: op, Err: fmt.Errorf("%w: resourceVersion %s, the record was read at %s", controller.ErrConflict, got, rv)}
	}
	o, err := FromUnstructured(u)
	if err != nil {
		return v, err
	}
	v = storedOf(o)
	s.mu.Lock()
	s.versions[node] = v
	s.mu.Unlock()
	return v, nil
}

func (s *Store) forgetVersion(node string) {
	s.mu.Lock()
	delete(s.versions, node)
	delete(s.written, node)
	s.mu.Unlock()
}

// Forget drops the record of an abandoned fencing: it removes the
// Finalizer from the node's NodeFence, which the API server then deletes.
// A NodeFence that no user deleted is deleted first. Every write carries
// the resourceVersion: when the object changed since nf was read, the
// error wraps controller.ErrConflict and nothing is removed. An object
// that is gone is not an error.
func (s *Store) Forget(ctx context.Context, nf *flow.NodeFence) error {
	node := nf.Node
	if node == "" || nf.Version == "" {
		return &Error{Kind: Kind, Name: node, Op: OpForget, Err: errors.New("record without a node or a version")}
	}
	u, err := s.res.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.forgetVersion(node)
		return nil
	}
	if err != nil {
		return s.fail(node, OpForget, err)
	}
	if rv := u.GetResourceVersion(); rv != nf.Version {
		return &Error{Kind: Kind, Name: node, Op: OpForget, Err: fmt.Errorf("%w: resourceVersion %s, the record was read at %s", controller.ErrConflict, rv, nf.Version)}
	}
	if u.GetDeletionTimestamp() == nil {
		rv, uid := u.GetResourceVersion(), u.GetUID()
		pre := metav1.Preconditions{ResourceVersion: &rv}
		if uid != "" {
			pre.UID = &uid
		}
		err := s.res.Delete(ctx, node, metav1.DeleteOptions{Preconditions: &pre})
		if apierrors.IsNotFound(err) {
			s.forgetVersion(node)
			return nil
		}
		if err != nil {
			return s.fail(node, OpForget, err)
		}
		if u, err = s.res.Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			s.forgetVersion(node)
			return nil
		} else if err != nil {
			return s.fail(node, OpForget, err)
		}
	}
	fin := u.GetFinalizers()
	if !slices.Contains(fin, Finalizer) {
		s.forgetVersion(node)
		return nil
	}
	var rest []string
	for _, f := range fin {
		if f != Finalizer {
			rest = append(rest, f)
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": u.GetResourceVersion(),
		"finalizers":      rest, // null when empty: the list is removed
	}})
	if err != nil {
		return s.fail(node, OpForget, err)
	}
	_, err = s.res.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return s.fail(node, OpForget, fmt.Errorf("removing the finalizer %s: %w", Finalizer, err))
	}
	s.forgetVersion(node)
	return nil
}

var _ controller.Store = (*Store)(nil)
