package fencekube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/controller"
)

// AnnotationAdmissions is the annotation of the admissions Lease that holds
// the ledger: a JSON object of node names and the RFC 3339 times their
// fencing steps were admitted.
const AnnotationAdmissions = "fencekit.io/admissions"

// AnnotationLastStorm is the annotation of the admissions Lease that holds
// the ledger's LastStorm: when a controller's storm guard last saw a storm
// (RFC 3339), so that a new leader honours its cooldown.
const AnnotationLastStorm = "fencekit.io/last-storm"

// DefaultAdmissionsLease is the name of the admissions Lease.
const DefaultAdmissionsLease = "fencekit-admissions"

// maxLedger bounds the nodes a ledger may hold (far above any fencing
// limit); a larger one is malformed.
const maxLedger = 10000

// RBAC, in the lease's namespace: the admissions Lease (fencekit-admissions,
// the fencings admitted, shared by the replicas so that the policy's
// limits hold across them) and the leader's lease beside it
// (cmd/fencekit-controller's --leader-election-name): created, read and
// updated. Change the lease's name here too when you change
// --leader-election-name.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fencekit-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fencekit-system,resources=leases,resourceNames=fencekit-controller;fencekit-admissions,verbs=get;update

// Admissions keeps the controllers' admission ledger (controller.Ledger) in
// the annotation AnnotationAdmissions of a Lease, read fresh from the API
// server and written with its resourceVersion: of two controllers that
// admit a fencing at once, one writes first, and the other reads the
// ledger again and asks its gates with the first one's admission counted.
// It implements controller.Admissions. The Lease is only a small object
// every controller can update; nobody holds it.
type Admissions struct {
	client          client.Client
	namespace, name string
}

// NewAdmissions returns the ledger kept in the Lease namespace/name (name
// DefaultAdmissionsLease when empty), which c reads from the API server
// (not a cache: the ledger is read fresh before every write).
func NewAdmissions(c client.Client, namespace, name string) *Admissions {
	if name == "" {
		name = DefaultAdmissionsLease
	}
	return &Admissions{client: c, namespace: namespace, name: name}
}

func (a *Admissions) fail(op string, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		err = fmt.Errorf("%w: %w", controller.ErrConflict, err)
	}
	return &Error{Kind: "Lease", Name: a.namespace + "/" + a.name, Op: op, Field: "metadata.annotations[" + AnnotationAdmissions + "]", Err: err}
}

// Ledger reads the ledger; an empty one when the Lease does not exist yet.
func (a *Admissions) Ledger(ctx context.Context) (controller.Ledger, error) {
	l, err := a.get(ctx)
	if apierrors.IsNotFound(err) {
		return controller.Ledger{}, nil
	}
	if err != nil {
		return controller.Ledger{}, a.fail(OpGet, err)
	}
	out := controller.Ledger{Version: l.ResourceVersion, Admitted: map[string]time.Time{}}
	if raw := l.Annotations[AnnotationLastStorm]; raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return controller.Ledger{}, &Error{Kind: "Lease", Name: a.namespace + "/" + a.name, Op: OpDecode,
				Field: "metadata.annotations[" + AnnotationLastStorm + "]", Err: malformed("%q is not an RFC 3339 time", raw)}
		}
		out.LastStorm = t.UTC()
	}
	raw, ok := l.Annotations[AnnotationAdmissions]
	if !ok || raw == "" {
		return out, nil
	}
	var m map[string]time.Time
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return controller.Ledger{}, a.fail(OpDecode, malformed("not a JSON object of node names and times: %v", err))
	}
	if len(m) > maxLedger {
		return controller.Ledger{}, a.fail(OpDecode, malformed("%d nodes, more than %d", len(m), maxLedger))
	}
	for n, t := range m {
		out.Admitted[n] = t.UTC()
	}
	return out, nil
}

// SetLedger writes the ledger over the version l.Version (creating the
// Lease when it is ""); an error wrapping controller.ErrConflict when
// another controller wrote it since.
func (a *Admissions) SetLedger(ctx context.Context, l controller.Ledger) (controller.Ledger, error) {
	m := make(map[string]time.Time, len(l.Admitted))
	for _, n := range slices.Sorted(maps.Keys(l.Admitted)) {
		m[n] = l.Admitted[n].UTC()
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return controller.Ledger{}, a.fail(OpUpdate, err)
	}
	annotations := map[string]string{AnnotationAdmissions: string(raw)}
	if !l.LastStorm.IsZero() {
		annotations[AnnotationLastStorm] = l.LastStorm.UTC().Format(time.RFC3339Nano)
	}
	var out *coordinationv1.Lease
	if l.Version == "" {
		out = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: a.name, Namespace: a.namespace,
			Labels:      map[string]string{"app.kubernetes.io/name": "fencekit-controller"},
			Annotations: annotations,
		}}
		if err := a.client.Create(ctx, out); err != nil {
			return controller.Ledger{}, a.fail(OpCreate, err)
		}
	} else {
		cur, err := a.get(ctx)
		if err != nil {
			return controller.Ledger{}, a.fail(OpGet, err)
		}
		if cur.ResourceVersion != l.Version {
			return controller.Ledger{}, a.fail(OpUpdate, fmt.Errorf("%w: resourceVersion %s, read %s", controller.ErrConflict, cur.ResourceVersion, l.Version))
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		maps.Copy(cur.Annotations, annotations)
		if err := a.client.Update(ctx, cur); err != nil {
			return controller.Ledger{}, a.fail(OpUpdate, err)
		}
		out = cur
	}
	return controller.Ledger{Admitted: maps.Clone(m), LastStorm: l.LastStorm.UTC(), Version: out.ResourceVersion}, nil
}

// get reads the Lease.
func (a *Admissions) get(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.name}, l); err != nil {
		return nil, err
	}
	return l, nil
}

var _ controller.Admissions = (*Admissions)(nil)
