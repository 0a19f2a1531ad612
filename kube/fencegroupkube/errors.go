package fencegroupkube

import "github.com/fencekit/fencekit/internal/errfmt"

// The kinds an Error names.
const (
	KindNode                    = "Node"
	KindMachine                 = "Machine"
	KindPodDisruptionBudget     = "PodDisruptionBudget"
	KindMachineDisruptionBudget = "MachineDisruptionBudget"
)

// The operations an Error names.
const (
	// OpList is listing the machines.
	OpList = "list"
	// OpLabel is adding or removing a fence-group label.
	OpLabel = "label"
	// OpRead is reading a field of an object.
	OpRead = "read"
	// OpGet, OpCreate and OpUpdate are reading and writing a budget.
	OpGet    = "get"
	OpCreate = "create"
	OpUpdate = "update"
	// OpVerify is checking what the server stored.
	OpVerify = "verify"
)

// Error is an error of this package: it names the kind of object, the
// object (namespace and name), the operation and the field at fault, and
// wraps the cause (an API error, as errors.Is and apierrors.IsConflict and
// the like see it).
type Error struct {
	// Kind is the object's kind: one of the Kind constants.
	Kind string
	// Namespace and Name name the object; empty Name for a list.
	Namespace, Name string
	// Op is what failed: one of the Op constants.
	Op string
	// Field is the field at fault ("metadata.labels[fencegroup.rook.io/x]",
	// "spec.maxUnavailable"), empty when the error is not about one field.
	Field string
	// Err is the cause.
	Err error
}

// Error returns "fencegroupkube: Kind namespace/name: op field: cause".
func (e *Error) Error() string {
	what := e.Kind
	if e.Namespace != "" || e.Name != "" {
		what += " " + errfmt.Object(e.Namespace, e.Name)
	}
	var b errfmt.Labels
	return b.Start("fencegroupkube: " + what).Part(errfmt.Step(e.Op, e.Field)).End(e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// labelField names a label as a field.
func labelField(key string) string { return "metadata.labels[" + key + "]" }
