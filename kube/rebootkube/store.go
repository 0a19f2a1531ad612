package rebootkube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/internal/kubeobj"
)

// Store reads hosts and writes the changes a decision makes. Hosts and
// Typed implement it; a user with another kind of client can implement it
// with AnnotationRemovalPatch and StatusPatch. Errors are *Error values.
type Store interface {
	// Get reads the host namespace/name.
	Get(ctx context.Context, namespace, name string) (*Host, error)
	// RemoveAnnotations removes the annotations keys from h's object, each
	// only if it still holds the value it has in h.Annotations, and returns
	// the host as written. No other annotation is touched. When one of the
	// keys changed or went away, nothing is removed and the error wraps
	// ErrConflict.
	RemoveAnnotations(ctx context.Context, h *Host, keys []string) (*Host, error)
	// WriteStatus writes u to h's object and returns the host as written.
	// With precondition, the write carries h.ResourceVersion and fails with
	// an error wrapping ErrConflict when the object changed since h was
	// read; without, it applies to the object as it is. A field the server
	// did not store as written is an error.
	WriteStatus(ctx context.Context, h *Host, u StatusUpdate, precondition bool) (*Host, error)
}

// StatusUpdate is a change to the reboot fields of a host's status. A nil
// field is left as it is.
type StatusUpdate struct {
	// PendingRebootSince is written, or cleared when it is the zero time.
	PendingRebootSince *time.Time
	// LastPoweredOn is written, or cleared when it is the zero time.
	LastPoweredOn *time.Time
	// PoweredOn is written to the mapping's PoweredOn record, if it has one.
	PoweredOn *bool
	// PowerFailed sets (true) or clears (false) the power failure mark, if
	// the mapping has one. It is only cleared when it is set: another kind
	// of error in the same field is left alone.
	PowerFailed *bool
	// PowerError is the message written beside a power failure mark.
	PowerError string
}

// maxErrorMessage bounds the power failure message written to the status.
const maxErrorMessage = 1024

// AnnotationRemovalPatch returns the JSON patch (RFC 6902) that removes the
// annotations keys, each only if it still holds its value in annotations:
// for each key, a "test" of the value then a "remove", with the key escaped
// as RFC 6901 says. Applied to an object where one of them changed or went
// away, the patch fails as a whole. A key missing from annotations is an
// error.
func AnnotationRemovalPatch(annotations map[string]string, keys []string) ([]byte, error) {
	type op struct {
		Op    string  `json:"op"`
		Path  string  `json:"path"`
		Value *string `json:"value,omitempty"`
	}
	ops := make([]op, 0, 2*len(keys))
	for _, k := range keys {
		v, ok := annotations[k]
		if !ok {
			return nil, fmt.Errorf("annotation %s is not on the object", k)
		}
		p := "/metadata/annotations/" + EscapeJSONPointer(k)
		ops = append(ops, op{Op: "test", Path: p, Value: &v}, op{Op: "remove", Path: p})
	}
	return json.Marshal(ops)
}

// EscapeJSONPointer escapes one reference token of a JSON pointer (RFC
// 6901): "~" becomes "~0" and "/" becomes "~1".
func EscapeJSONPointer(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// StatusPatch returns the JSON merge patch (RFC 7386) that writes u to a
// host read with mapping m, or nil when u changes nothing the mapping has.
// A non-empty resourceVersion is put in the patch's metadata, where the API
// server takes it as a precondition.
func StatusPatch(m *Mapping, h *Host, u StatusUpdate, resourceVersion string) ([]byte, error) {
	data, _, err := statusPatch(m, h, u, resourceVersion)
	return data, err
}

// statusPatch is StatusPatch that also returns the paths written.
func statusPatch(m *Mapping, h *Host, u StatusUpdate, resourceVersion string) ([]byte, []Path, error) {
	patch := map[string]any{}
	var paths []Path
	set := func(p Path, v any) {
		if len(p) == 0 {
			return
		}
		paths = append(paths, p)
		cur := patch
		for _, name := range p[:len(p)-1] {
			next, ok := cur[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[name] = next
			}
			cur = next
		}
		cur[p[len(p)-1]] = v
	}
	timeValue := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return formatTime(t)
	}
	if u.PendingRebootSince != nil {
		set(m.PendingRebootSince, timeValue(*u.PendingRebootSince))
	}
	if u.LastPoweredOn != nil {
		set(m.LastPoweredOn, timeValue(*u.LastPoweredOn))
	}
	if u.PoweredOn != nil {
		set(m.PoweredOn, *u.PoweredOn)
	}
	if u.PowerFailed != nil && len(m.ErrorType) > 0 {
		switch {
		case *u.PowerFailed:
			set(m.ErrorType, m.PowerErrorType)
			set(m.ErrorMessage, clipMessage(u.PowerError))
		case h.LastPowerFailed:
			set(m.ErrorType, nil)
			set(m.ErrorMessage, nil)
		}
	}
	if len(paths) == 0 {
		return nil, nil, nil
	}
	if resourceVersion != "" {
		patch["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	data, err := json.Marshal(patch)
	return data, paths, err
}

func clipMessage(s string) string {
	if len(s) > maxErrorMessage {
		s = s[:maxErrorMessage] + "..."
	}
	return strings.ToValidUTF8(s, "")
}

// errNotStored is the cause of a status write the server did not store.
var errNotStored = errors.New("the server did not store the value written")

// objectClient is what a store needs of a client, in JSON form.
type objectClient interface {
	get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	// patch patches the object, or its subresource sub when not empty.
	patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, sub string) (*unstructured.Unstructured, error)
}

// store implements Store on an objectClient.
type store struct {
	c                 objectClient
	m                 *Mapping
	statusSubresource bool
}

func (s *store) Get(ctx context.Context, namespace, name string) (*Host, error) {
	if err := s.m.Validate(s.statusSubresource); err != nil {
		return nil, &Error{Namespace: namespace, Name: name, Op: OpGet, Err: err}
	}
	obj, err := s.c.get(ctx, namespace, name)
	if err != nil {
		return nil, &Error{Namespace: namespace, Name: name, Op: OpGet, Err: err}
	}
	return ReadHost(obj, s.m)
}

func (s *store) RemoveAnnotations(ctx context.Context, h *Host, keys []string) (*Host, error) {
	if len(keys) == 0 {
		return h, nil
	}
	fail := func(field string, err error) (*Host, error) {
		return nil, &Error{Namespace: h.Namespace, Name: h.Name, Op: OpRemoveAnnotations, Field: field, Err: err}
	}
	data, err := AnnotationRemovalPatch(h.Annotations, keys)
	if err != nil {
		return fail(annotationsField(keys), err)
	}
	obj, err := s.c.patch(ctx, h.Namespace, h.Name, types.JSONPatchType, data, "")
	if err == nil {
		return ReadHost(obj, s.m)
	}
	if apierrors.IsConflict(err) {
		return fail(annotationsField(keys), conflict(err))
	}
	if apierrors.IsNotFound(err) || ctx.Err() != nil {
		return fail(annotationsField(keys), err)
	}
	// A test that failed is reported by API servers as 422 (and by other
	// implementations in their own ways): find out by reading the
	// annotations again.
	cur, gerr := s.c.get(ctx, h.Namespace, h.Name)
	if gerr != nil {
		return fail(annotationsField(keys), err)
	}
	now := cur.GetAnnotations()
	for _, k := range keys {
		if v, ok := now[k]; !ok || v != h.Annotations[k] {
			what := "changed"
			if !ok {
				what = "removed"
			}
			return fail(annotationField(k), conflict(fmt.Errorf("annotation %s by another client; nothing removed (%w)", what, err)))
		}
	}
	return fail(annotationsField(keys), err)
}

func (s *store) WriteStatus(ctx context.Context, h *Host, u StatusUpdate, precondition bool) (*Host, error) {
	fail := func(field string, err error) (*Host, error) {
		return nil, &Error{Namespace: h.Namespace, Name: h.Name, Op: OpWriteStatus, Field: field, Err: err}
	}
	rv := ""
	if precondition {
		if rv = h.ResourceVersion; rv == "" {
			return fail("metadata.resourceVersion", errors.New("no resourceVersion to write with"))
		}
	}
	data, paths, err := statusPatch(s.m, h, u, rv)
	if err != nil || data == nil {
		if err != nil {
			return fail("", err)
		}
		return h, nil
	}
	field := joinPaths(paths)
	sub := ""
	if s.statusSubresource {
		sub = "status"
	}
	obj, err := s.c.patch(ctx, h.Namespace, h.Name, types.MergePatchType, data, sub)
	if err != nil {
		if apierrors.IsConflict(err) {
			return fail(field, conflict(err))
		}
		if s.statusSubresource && apierrors.IsNotFound(err) && ctx.Err() == nil {
			if _, gerr := s.c.get(ctx, h.Namespace, h.Name); gerr == nil {
				err = fmt.Errorf("%w (the object exists: the resource may have no status subresource)", err)
			}
		}
		return fail(field, err)
	}
	nh, err := ReadHost(obj, s.m)
	if err != nil {
		return nil, err
	}
	if p := notStored(s.m, h, nh, u); p != nil {
		hint := ""
		if !s.statusSubresource && len(p) > 0 && p[0] == "status" {
			hint = " (the resource may have a status subresource, which must be written through)"
		}
		return fail(p.String(), fmt.Errorf("%w%s", errNotStored, hint))
	}
	return nh, nil
}

// notStored returns the first field of u that nh (read back after the
// write on h) does not hold as written, or nil.
func notStored(m *Mapping, h, nh *Host, u StatusUpdate) Path {
	sameTime := func(a, b time.Time) bool {
		if a.IsZero() || b.IsZero() {
			return a.IsZero() == b.IsZero()
		}
		return formatTime(a) == formatTime(b)
	}
	switch {
	case u.PendingRebootSince != nil && !sameTime(*u.PendingRebootSince, nh.PendingRebootSince):
		return m.PendingRebootSince
	case u.LastPoweredOn != nil && !sameTime(*u.LastPoweredOn, nh.LastPoweredOn):
		return m.LastPoweredOn
	case u.PoweredOn != nil && len(m.PoweredOn) > 0 && (!nh.PoweredOnRecorded || nh.PoweredOn != *u.PoweredOn):
		return m.PoweredOn
	case u.PowerFailed != nil && len(m.ErrorType) > 0 && (*u.PowerFailed || h.LastPowerFailed) && nh.LastPowerFailed != *u.PowerFailed:
		return m.ErrorType
	}
	return nil
}

func joinPaths(paths []Path) string {
	s := make([]string, len(paths))
	for i, p := range paths {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Hosts is the Store of a controller-runtime client: hosts are objects of
// Kind, read and patched as unstructured objects, read with Mapping. The
// client must read the API server, not a cache: a decision made on a stale
// object would be refused by the writes' preconditions and retried. A
// manager's client serves (it reads unstructured objects from the API
// server unless told to cache them), as does one of client.New, or a fake
// client in a host's tests.
type Hosts struct {
	// Client reads and patches the hosts.
	Client client.Client
	// Kind is the hosts' kind, such as BareMetalHostKind.
	Kind schema.GroupVersionKind
	// Mapping says where the reboot fields are.
	Mapping Mapping
	// StatusSubresource tells that the resource has a status subresource:
	// status fields are then written through it (the server ignores them
	// in a write of the object itself), and Mapping's written fields must
	// all be under "status".
	StatusSubresource bool
}

// NewMetal3 returns the Store of metal3's BareMetalHosts: BareMetalHostKind,
// Metal3Mapping, with a status subresource.
func NewMetal3(c client.Client) *Hosts {
	return &Hosts{Client: c, Kind: BareMetalHostKind, Mapping: Metal3Mapping(), StatusSubresource: true}
}

func (hs *Hosts) store() *store {
	return &store{c: objects{hs.Client, hs.Kind}, m: &hs.Mapping, statusSubresource: hs.StatusSubresource}
}

// Get reads the host namespace/name.
func (hs *Hosts) Get(ctx context.Context, namespace, name string) (*Host, error) {
	return hs.store().Get(ctx, namespace, name)
}

// RemoveAnnotations removes the annotations keys, each only if it still
// holds the value it has in h.Annotations, with AnnotationRemovalPatch.
func (hs *Hosts) RemoveAnnotations(ctx context.Context, h *Host, keys []string) (*Host, error) {
	return hs.store().RemoveAnnotations(ctx, h, keys)
}

// WriteStatus writes u with StatusPatch, through the status subresource
// when StatusSubresource is set.
func (hs *Hosts) WriteStatus(ctx context.Context, h *Host, u StatusUpdate, precondition bool) (*Host, error) {
	return hs.store().WriteStatus(ctx, h, u, precondition)
}

// mergePatch writes a JSON merge patch to the host namespace/name itself.
func (hs *Hosts) mergePatch(ctx context.Context, namespace, name string, data []byte) error {
	_, err := hs.store().c.patch(ctx, namespace, name, types.MergePatchType, data, "")
	return err
}

// objects is an objectClient of one kind on a controller-runtime client.
type objects struct {
	c    client.Client
	kind schema.GroupVersionKind
}

func (c objects) object(namespace, name string) *unstructured.Unstructured {
	return kubeobj.Object(c.kind, namespace, name)
}

func (c objects) get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	obj := c.object(namespace, name)
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (c objects) patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, sub string) (*unstructured.Unstructured, error) {
	obj, p := c.object(namespace, name), client.RawPatch(pt, data)
	var err error
	if sub == "" {
		err = c.c.Patch(ctx, obj, p)
	} else {
		err = c.c.SubResource(sub).Patch(ctx, obj, p)
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// TypedClient is what Typed needs of a typed client of one namespace: the
// Get and Patch of a generated clientset's resource interface (such as
// what clientset.Metal3V1alpha1().BareMetalHosts(namespace) returns).
type TypedClient[T any] interface {
	// Get reads an object.
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	// Patch patches an object, or its subresource.
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// Typed is the Store of a typed client, for users whose hosts are Go
// types. T is a pointer to the type, which must convert to its JSON form
// (runtime.DefaultUnstructuredConverter does the conversion); Mapping's
// paths name members of that form, as for Hosts. The writes are the same
// patches as Hosts'.
type Typed[T any] struct {
	// Client returns the typed client of a namespace.
	Client func(namespace string) TypedClient[T]
	// Mapping says where the reboot fields are.
	Mapping Mapping
	// StatusSubresource tells that the resource has a status subresource,
	// as for Hosts.
	StatusSubresource bool
}

func (t *Typed[T]) store() *store {
	return &store{c: typedClient[T]{t.Client}, m: &t.Mapping, statusSubresource: t.StatusSubresource}
}

// Get reads the host namespace/name.
func (t *Typed[T]) Get(ctx context.Context, namespace, name string) (*Host, error) {
	return t.store().Get(ctx, namespace, name)
}

// RemoveAnnotations removes the annotations keys, each only if it still
// holds the value it has in h.Annotations, with AnnotationRemovalPatch.
func (t *Typed[T]) RemoveAnnotations(ctx context.Context, h *Host, keys []string) (*Host, error) {
	return t.store().RemoveAnnotations(ctx, h, keys)
}

// WriteStatus writes u with StatusPatch, through the status subresource
// when StatusSubresource is set.
func (t *Typed[T]) WriteStatus(ctx context.Context, h *Host, u StatusUpdate, precondition bool) (*Host, error) {
	return t.store().WriteStatus(ctx, h, u, precondition)
}

type typedClient[T any] struct {
	client func(namespace string) TypedClient[T]
}

func (c typedClient[T]) get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := c.client(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toUnstructured(obj)
}

func (c typedClient[T]) patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, sub string) (*unstructured.Unstructured, error) {
	var subresources []string
	if sub != "" {
		subresources = []string{sub}
	}
	obj, err := c.client(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return nil, err
	}
	return toUnstructured(obj)
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T to its JSON form: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
