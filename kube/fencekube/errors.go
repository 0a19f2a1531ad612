package fencekube

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// ErrMalformed reports a NodeFence object that does not convert to a
// record: an unknown step or status, spec.node that is not the object's
// name, a negative count (the CRD's schema refuses a field of the wrong
// type, or a time that is not RFC 3339 with six digits of fraction).
// Nothing is guessed from such an object: the store returns this error
// (wrapped in an *Error naming the object and the field) and the node is
// not fenced through it until a user fixes or deletes it. Check it with
// errors.Is.
var ErrMalformed = errors.New("malformed NodeFence")

// The operations an Error names.
const (
	// OpDecode is converting an object to a record.
	OpDecode = "decode"
	// OpEncode is converting a record to an object (a record the
	// controller handed over that cannot be written).
	OpEncode = "encode"
	// OpGet, OpList, OpCreate, OpUpdate and OpForget are the Store's
	// methods.
	OpGet    = "get"
	OpList   = "list"
	OpCreate = "create"
	OpUpdate = "update"
	OpForget = "forget"
	// OpConfig is reading the fence ConfigMaps.
	OpConfig = "config"
	// OpTaint and OpUntaint are adding and removing the out-of-service
	// taint.
	OpTaint   = "taint"
	OpUntaint = "untaint"
	// OpDeletePods is listing and force-deleting a node's pods.
	OpDeletePods = "delete-pods"
	// OpListPods is listing a node's pods and volume attachments, to tell
	// whether the released ones are gone.
	OpListPods = "list-pods"
	// OpSecret is reading a Secret a fence configuration names.
	OpSecret = "secret"
)

// Error is an error of this package: it names the object (its kind and
// name), the operation and, where there is one, the field at fault, and
// wraps the cause. It never holds credentials: API errors are the
// server's, configuration errors the fence core's (which never quotes a
// secret parameter).
type Error struct {
	// Kind is the kind of the object: "NodeFence", "Node", "ConfigMap",
	// "Lease".
	Kind string
	// Name names the object ("worker-3", or "namespace/name" for a
	// namespaced object); "" when the error is not about one object.
	Name string
	// Op is what failed: one of the Op constants.
	Op string
	// Field is the field at fault, as a path into the object's JSON form
	// ("spec.node", "status.jobs[2].started"); "" when the error is not
	// about one field.
	Field string
	// Err is the cause. It wraps ErrMalformed for a malformed object,
	// controller.ErrConflict for a write that lost a race, and
	// controller.ErrNotFound for a record that does not exist.
	Err error
}

// Error returns "fencekube: Kind name: op field: cause".
func (e *Error) Error() string {
	what := e.Name
	if e.Kind != "" && e.Name != "" {
		what = e.Kind + " " + e.Name
	} else if e.Kind != "" {
		what = e.Kind
	}
	var b errfmt.Labels
	return b.Start("fencekube: " + what).Part(errfmt.Step(e.Op, e.Field)).End(e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// malformed returns the cause of a malformed field.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// apiError maps an API error to the controller's sentinels: a 409 wraps
// controller.ErrConflict, a 404 controller.ErrNotFound. Other errors are
// returned as they are.
func apiError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", controller.ErrConflict, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", controller.ErrNotFound, err)
	}
	return err
}
