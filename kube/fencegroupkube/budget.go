package fencegroupkube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/internal/kubeobj"
)

// BudgetWriter writes a cluster's budget where the host application wants
// it. PodDisruptionBudget and MachineDisruptionBudget implement it. Errors
// are *Error values.
type BudgetWriter interface {
	// WriteBudget makes the budget object of cluster allow b.MaxUnavailable
	// unavailable members of its fence group. It is idempotent: an object
	// that already says so is not written.
	WriteBudget(ctx context.Context, cluster string, b fencegroup.Budget) error
}

// ReasonAnnotation is the annotation in which the writers record why the
// budget is what it is (Budget.Reason), for operators.
const ReasonAnnotation = "fencegroup.fencekit.io/reason"

// maxReason bounds the reason written in ReasonAnnotation.
const maxReason = 1024

// writeRetrying runs a read-modify-write of a budget object again while
// another client's write makes it conflict (or creates the object first),
// with client-go's retry.DefaultRetry (five tries, 10 ms and up); after
// the last, the conflict is returned.
func writeRetrying(write func() error) error {
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, write)
}

// BudgetName returns the default name of cluster's budget object:
// "fencegroup-<cluster>", in lower case with '_' as '-', valid as an object
// name.
func BudgetName(cluster string) string {
	return "fencegroup-" + strings.ReplaceAll(strings.ToLower(cluster), "_", "-")
}

// GroupSelector returns the selector of cluster's fence group: every object
// carrying the label fencegroup.Label(cluster), whatever its value.
func GroupSelector(cluster string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: fencegroup.Label(cluster), Operator: metav1.LabelSelectorOpExists,
	}}}
}

// target is the kind, namespace, name, selector and reason of one budget
// write.
type target struct {
	kind, namespace, name string
	selector              *metav1.LabelSelector
	reason                string
}

func newTarget(kind, namespace, name, cluster string, sel *metav1.LabelSelector, b fencegroup.Budget) (target, error) {
	if err := fencegroup.ValidateCluster(cluster); err != nil {
		return target{}, &Error{Kind: kind, Namespace: namespace, Name: name, Op: OpUpdate, Err: err}
	}
	if name == "" {
		name = BudgetName(cluster)
	}
	fail := func(field string, err error) (target, error) {
		return target{}, &Error{Kind: kind, Namespace: namespace, Name: name, Op: OpUpdate, Field: field, Err: err}
	}
	if namespace == "" {
		return fail("metadata.namespace", errors.New("no namespace given"))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fail("metadata.name", errors.New(strings.Join(errs, "; ")))
	}
	if b.MaxUnavailable < 0 || b.MaxUnavailable > 1<<30 {
		return fail("spec.maxUnavailable", fmt.Errorf("invalid value %d", b.MaxUnavailable))
	}
	if sel == nil {
		sel = GroupSelector(cluster)
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return fail("spec.selector", err)
	}
	reason := b.Reason
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + "..."
	}
	return target{kind: kind, namespace: namespace, name: name, selector: sel, reason: reason}, nil
}

// writeBudget makes t's object say what apply writes: it reads the object
// (a new T, with its kind), creates it when there is none (with the
// managed-by label) or updates it when apply changed it, then reads it
// again into a new T and checks with stored that the server stored what
// was written (a client decodes a write's answer into the object sent,
// where a field the server dropped could survive); it is tried again while
// another client's write conflicts (writeRetrying).
func writeBudget[T client.Object](ctx context.Context, c client.Client, t target, newObj func() T, apply func(T) (bool, error), stored func(T) bool) error {
	fail := func(op, field string, err error) error {
		return &Error{Kind: t.kind, Namespace: t.namespace, Name: t.name, Op: op, Field: field, Err: err}
	}
	key := client.ObjectKey{Namespace: t.namespace, Name: t.name}
	verify := func() error {
		got := newObj()
		if err := c.Get(ctx, key, got); err != nil {
			return fail(OpVerify, "", err)
		}
		if !stored(got) {
			return fail(OpVerify, "spec.maxUnavailable", errNotStored)
		}
		return nil
	}
	return writeRetrying(func() error {
		cur := newObj()
		err := c.Get(ctx, key, cur)
		if apierrors.IsNotFound(err) {
			obj := newObj()
			obj.SetNamespace(t.namespace)
			obj.SetName(t.name)
			obj.SetLabels(map[string]string{managedByLabel: managedBy})
			if _, err := apply(obj); err != nil {
				return fail(OpCreate, "spec", err)
			}
			if err := c.Create(ctx, obj); err != nil {
				return fail(OpCreate, "", err)
			}
			return verify()
		}
		if err != nil {
			return fail(OpGet, "", err)
		}
		changed, err := apply(cur)
		if err != nil {
			return fail(OpRead, "spec", err)
		}
		if !changed {
			return nil
		}
		if err := c.Update(ctx, cur); err != nil {
			return fail(OpUpdate, "spec.maxUnavailable", err)
		}
		return verify()
	})
}

// PodDisruptionBudget writes the budget as a policy/v1 PodDisruptionBudget,
// as Rook does today: maxUnavailable is the budget, the selector picks the
// pods it protects.
type PodDisruptionBudget struct {
	// Client reads and writes the budget: a client that reads the API
	// server (client.New), so that what it compares is what the server
	// holds.
	Client client.Client
	// Namespace is the budget's namespace. Required.
	Namespace string
	// Name is the budget's name; empty means BudgetName(cluster).
	Name string
	// Selector picks the pods. Nil means GroupSelector(cluster), for pods
	// carrying the fence-group label; with Rook's OSD pods, use
	// app=rook-ceph-osd instead.
	Selector *metav1.LabelSelector
}

// WriteBudget creates or updates the PodDisruptionBudget.
func (p *PodDisruptionBudget) WriteBudget(ctx context.Context, cluster string, b fencegroup.Budget) error {
	t, err := newTarget(KindPodDisruptionBudget, p.Namespace, p.Name, cluster, p.Selector, b)
	if err != nil {
		return err
	}
	want := intstr.FromInt32(int32(b.MaxUnavailable))
	apply := func(pdb *policyv1.PodDisruptionBudget) (bool, error) {
		changed := pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != want || pdb.Spec.MinAvailable != nil ||
			!sameSelector(pdb.Spec.Selector, t.selector) || pdb.Annotations[ReasonAnnotation] != t.reason
		pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable = &want, nil
		pdb.Spec.Selector = t.selector.DeepCopy()
		if pdb.Annotations == nil {
			pdb.Annotations = map[string]string{}
		}
		pdb.Annotations[ReasonAnnotation] = t.reason
		return changed, nil
	}
	stored := func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && *pdb.Spec.MaxUnavailable == want
	}
	return writeBudget(ctx, p.Client, t, func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} }, apply, stored)
}

// MachineDisruptionBudgetKind is healthchecking.openshift.io/v1alpha1
// MachineDisruptionBudget, the kind of the design.
var MachineDisruptionBudgetKind = schema.GroupVersionKind{
	Group: "healthchecking.openshift.io", Version: "v1alpha1", Kind: "MachineDisruptionBudget",
}

// MachineDisruptionBudget writes the budget as a MachineDisruptionBudget
// (the design's: spec.maxUnavailable and spec.selector over the Machines
// carrying the fence-group label), read and written as an unstructured
// object.
type MachineDisruptionBudget struct {
	// Client reads and writes the budget, as PodDisruptionBudget.Client
	// (client.New).
	Client client.Client
	// Kind is the budgets' kind; zero means MachineDisruptionBudgetKind.
	Kind schema.GroupVersionKind
	// Namespace is the budget's namespace, the Machines' (such as
	// "openshift-machine-api"). Required.
	Namespace string
	// Name is the budget's name; empty means BudgetName(cluster).
	Name string
	// Selector picks the Machines. Nil means GroupSelector(cluster).
	Selector *metav1.LabelSelector
}

// WriteBudget creates or updates the MachineDisruptionBudget.
func (m *MachineDisruptionBudget) WriteBudget(ctx context.Context, cluster string, b fencegroup.Budget) error {
	t, err := newTarget(KindMachineDisruptionBudget, m.Namespace, m.Name, cluster, m.Selector, b)
	if err != nil {
		return err
	}
	gvk := m.Kind
	if gvk.Empty() {
		gvk = MachineDisruptionBudgetKind
	}
	sel, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.selector)
	if err != nil {
		return &Error{Kind: t.kind, Namespace: t.namespace, Name: t.name, Op: OpUpdate, Field: "spec.selector", Err: err}
	}
	want := int64(b.MaxUnavailable)
	apply := func(obj *unstructured.Unstructured) (bool, error) {
		cur, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "maxUnavailable")
		if err != nil {
			return false, err
		}
		var curSel *metav1.LabelSelector
		if m, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selector"); ok {
			curSel = &metav1.LabelSelector{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(m, curSel) != nil {
				curSel = nil
			}
		}
		_, hasMin, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "minAvailable")
		changed := !found || !sameInt(cur, want) || hasMin || !sameSelector(curSel, t.selector) ||
			obj.GetAnnotations()[ReasonAnnotation] != t.reason
		if err := unstructured.SetNestedField(obj.Object, want, "spec", "maxUnavailable"); err != nil {
			return false, err
		}
		if err := unstructured.SetNestedField(obj.Object, runtime.DeepCopyJSON(sel), "spec", "selector"); err != nil {
			return false, err
		}
		unstructured.RemoveNestedField(obj.Object, "spec", "minAvailable")
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[ReasonAnnotation] = t.reason
		obj.SetAnnotations(a)
		return changed, nil
	}
	stored := func(obj *unstructured.Unstructured) bool {
		got, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "maxUnavailable")
		return found && sameInt(got, want)
	}
	newObj := func() *unstructured.Unstructured { return kubeobj.Object(gvk, "", "") }
	return writeBudget(ctx, m.Client, t, newObj, apply, stored)
}

// sameSelector reports whether two selectors select the same objects, as
// their canonical forms say.
func sameSelector(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	sa, err := metav1.LabelSelectorAsSelector(a)
	if err != nil {
		return false
	}
	sb, err := metav1.LabelSelectorAsSelector(b)
	return err == nil && sa.String() == sb.String()
}

// sameInt reports whether a JSON number read from an object is want.
func sameInt(v any, want int64) bool {
	switch n := v.(type) {
	case int64:
		return n == want
	case int:
		return int64(n) == want
	case int32:
		return int64(n) == want
	case float64:
		return n == float64(want)
	}
	return false
}

// The label the writers put on the budget objects they create.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "fencekit-fencegroup"
)

var (
	// errNotStored is the cause of a write the server did not store as
	// written.
	errNotStored = errors.New("the server did not store the value written")
)

var (
	_ BudgetWriter = (*PodDisruptionBudget)(nil)
	_ BudgetWriter = (*MachineDisruptionBudget)(nil)
)
