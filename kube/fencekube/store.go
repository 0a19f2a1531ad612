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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// Reader, when set, is what Get reads, and Update and Forget when
	// they read the object again: the API server, where the Store's
	// client reads a cache. Give a controller-runtime manager's
	// GetAPIReader() with its GetClient(): List then reads the manager's
	// cache in one call, which costs no request. Without Reader, the
	// client is taken to read the API server, and List reads it page by
	// page.
	Reader client.Reader
}

// ReasonMalformed is the reason of the event about a malformed NodeFence.
const ReasonMalformed = "NodeFenceMalformed"

// RBAC: the NodeFence records, created with their finalizer, read,
// watched, and, for an abandoned fencing, deleted and their finalizer
// removed (a patch); every state change through the status subresource.
// +kubebuilder:rbac:groups=fencekit.io,resources=nodefences,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=fencekit.io,resources=nodefences/status,verbs=update

// Store keeps NodeFence records in NodeFence custom resources, through a
// controller-runtime client of the typed API (package api/v1alpha1; the
// client's scheme must hold it: AddToScheme). It implements
// controller.Store.
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
// did). Get always reads the API server (StoreOptions.Reader). List reads
// the client: a manager's cache, or the API server page by page; a
// malformed object is left out of List (and reported through
// StoreOptions.Events and the log) and its Get returns the error.
//
// A Store is safe for concurrent use.
type Store struct {
	client client.Client
	reader client.Reader
	cached bool
	opts   StoreOptions
	logger *slog.Logger

	mu sync.Mutex
	// versions holds, per node, the spec.retry and status.observedRetry of
	// the last version read or written: Update needs them to write
	// observedRetry, and reads the object again when they are not there.
	versions map[string]storedVersion
	// memo holds the listed objects converted, by name, so that List
	// converts an object once per resourceVersion.
	memo map[string]*memoEntry
	pass uint64
	// reported holds the resourceVersion of the malformed objects already
	// reported, by name.
	reported map[string]string
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
		generation: o.Generation, conditions: slices.Clone(o.Status.Conditions)}
}

type memoEntry struct {
	rv   string
	rec  *flow.NodeFence
	err  error
	pass uint64
}

// NewStore returns a Store of the NodeFence objects c reads and writes.
func NewStore(c client.Client, opts StoreOptions) *Store {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		client:   c,
		reader:   opts.Reader,
		cached:   opts.Reader != nil,
		opts:     opts,
		logger:   logger,
		versions: map[string]storedVersion{},
		memo:     map[string]*memoEntry{},
		reported: map[string]string{},
		written:  map[string]string{},
	}
	if s.reader == nil {
		s.reader = c
	}
	return s
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

// noteWrite remembers o as this Store's last write of its object.
func (s *Store) noteWrite(o *NodeFence) {
	s.mu.Lock()
	s.written[o.Name] = o.ResourceVersion
	s.mu.Unlock()
}

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
func (s *Store) decode(o *NodeFence) (*flow.NodeFence, error) {
	nf, err := Record(o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.versions[o.Name] = storedOf(o)
	s.mu.Unlock()
	return nf, nil
}

// get reads the node's object from the API server.
func (s *Store) get(ctx context.Context, node string) (*NodeFence, error) {
	o := &NodeFence{}
	if err := s.reader.Get(ctx, client.ObjectKey{Name: node}, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Get reads the node's record from the API server. A malformed object is
// an *Error wrapping ErrMalformed that names the field.
func (s *Store) Get(ctx context.Context, node string) (*flow.NodeFence, error) {
	o, err := s.get(ctx, node)
	if err != nil {
		return nil, s.fail(node, OpGet, err)
	}
	return s.decode(o)
}

// List returns the records of every well-formed NodeFence, sorted by node.
// The malformed objects are left out: each is logged and, with
// StoreOptions.Events, reported on its node, once per resourceVersion.
func (s *Store) List(ctx context.Context) ([]*flow.NodeFence, error) {
	var items []NodeFence
	if s.cached {
		// Read, never changed, and converted once per version: the cache's
		// objects need no deep copy (Record copies what it keeps).
		var l NodeFenceList
		if err := s.client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, &Error{Kind: Kind, Op: OpList, Err: apiError(err)}
		}
		items = l.Items
	} else {
		opts := &client.ListOptions{Limit: s.opts.PageSize}
		for page := 0; ; page++ {
			if page >= maxPages {
				return nil, &Error{Kind: Kind, Op: OpList, Err: fmt.Errorf("more than %d pages", maxPages)}
			}
			var l NodeFenceList
			if err := s.client.List(ctx, &l, opts); err != nil {
				return nil, &Error{Kind: Kind, Op: OpList, Err: apiError(err)}
			}
			items = append(items, l.Items...)
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return s.convert(items), nil
}

// maxPages bounds the pages of one list.
const maxPages = 10000

// convert returns the records of the well-formed items, converting each
// object once per resourceVersion, and reports the malformed ones.
func (s *Store) convert(items []NodeFence) []*flow.NodeFence {
	out := make([]*flow.NodeFence, 0, len(items))
	var bad []*NodeFence
	var badErrs []error
	s.mu.Lock()
	s.pass++
	for i := range items {
		o := &items[i]
		name, rv := o.Name, o.ResourceVersion
		e := s.memo[name]
		if e == nil || e.rv != rv {
			e = &memoEntry{rv: rv}
			if e.rec, e.err = Record(o); e.err == nil {
				s.versions[name] = storedOf(o)
			}
			s.memo[name] = e
		}
		e.pass = s.pass
		if e.err != nil {
			bad, badErrs = append(bad, o), append(badErrs, e.err)
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
	for i, o := range bad {
		s.reportMalformed(o, badErrs[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// reportMalformed logs a malformed object and reports it on its node, once
// per resourceVersion.
func (s *Store) reportMalformed(o *NodeFence, err error) {
	name, rv := o.Name, o.ResourceVersion
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
	status := o.Status
	if err := s.client.Create(ctx, o); err != nil {
		return nil, s.fail(nf.Node, OpCreate, err)
	}
	// The status subresource drops the status of a create.
	o.Status = status
	if err := s.client.Status().Update(ctx, o); err != nil {
		return nil, s.fail(nf.Node, OpCreate, fmt.Errorf("writing the status of the new object: %w", err))
	}
	s.noteWrite(o)
	return s.decode(o)
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
	if err := s.client.Status().Update(ctx, o); err != nil {
		if apierrors.IsNotFound(err) {
			s.forgetVersion(nf.Node)
		}
		return nil, s.fail(nf.Node, OpUpdate, err)
	}
	s.noteWrite(o)
	return s.decode(o)
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
	o, err := s.get(ctx, node)
	if err != nil {
		return v, s.fail(node, op, err)
	}
	if got := o.ResourceVersion; got != rv {
		return v, &Error{Kind: Kind, Name: node, Op: op, Err: fmt.Errorf("%w: resourceVersion %s, the record was read at %s", controller.ErrConflict, got, rv)}
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
	o, err := s.get(ctx, node)
	if apierrors.IsNotFound(err) {
		s.forgetVersion(node)
		return nil
	}
	if err != nil {
		return s.fail(node, OpForget, err)
	}
	if rv := o.ResourceVersion; rv != nf.Version {
		return &Error{Kind: Kind, Name: node, Op: OpForget, Err: fmt.Errorf("%w: resourceVersion %s, the record was read at %s", controller.ErrConflict, rv, nf.Version)}
	}
	if o.DeletionTimestamp == nil {
		rv, uid := o.ResourceVersion, o.UID
		pre := client.Preconditions{ResourceVersion: &rv}
		if uid != "" {
			pre.UID = &uid
		}
		err := s.client.Delete(ctx, o, pre)
		if apierrors.IsNotFound(err) {
			s.forgetVersion(node)
			return nil
		}
		if err != nil {
			return s.fail(node, OpForget, err)
		}
		if o, err = s.get(ctx, node); apierrors.IsNotFound(err) {
			s.forgetVersion(node)
			return nil
		} else if err != nil {
			return s.fail(node, OpForget, err)
		}
	}
	if !slices.Contains(o.Finalizers, Finalizer) {
		s.forgetVersion(node)
		return nil
	}
	var rest []string
	for _, f := range o.Finalizers {
		if f != Finalizer {
			rest = append(rest, f)
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": o.ResourceVersion,
		"finalizers":      rest, // null when empty: the list is removed
	}})
	if err != nil {
		return s.fail(node, OpForget, err)
	}
	err = s.client.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch))
	if err != nil && !apierrors.IsNotFound(err) {
		return s.fail(node, OpForget, fmt.Errorf("removing the finalizer %s: %w", Finalizer, err))
	}
	s.forgetVersion(node)
	return nil
}

var _ controller.Store = (*Store)(nil)
