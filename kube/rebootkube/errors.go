package rebootkube

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// ErrConflict reports that the object changed between the read a decision
// was made on and a write (or a power on) that depended on it: a tested
// annotation changed or went away, or a resourceVersion precondition
// failed. Nothing was written by the failed step and no power operation
// followed it. It is retryable: read the object again and decide again.
// Check it with errors.Is.
var ErrConflict = errors.New("the object changed since it was read; reconcile again")

// ErrPowerOffDisabled means a power off was decided for a host that may not
// be powered off (Host.DisablePowerOff): the Reconciler does not switch it,
// and the reboot annotations that asked stay unserved.
var ErrPowerOffDisabled = errors.New("the host may not be powered off (its disablePowerOff is set): not switched off")

// The operations an Error names.
const (
	// OpGet is reading the object.
	OpGet = "get"
	// OpRead is reading a field of the object.
	OpRead = "read"
	// OpRemoveAnnotations is step 1: removing reboot annotations (or,
	// for a Client, its keyed annotation).
	OpRemoveAnnotations = "remove-annotations"
	// OpRequest is a Client writing a reboot annotation.
	OpRequest = "request"
	// OpWriteStatus is writing status fields (steps 2 and 5).
	OpWriteStatus = "write-status"
	// OpCheck is the read again before a power on (step 3).
	OpCheck = "check"
	// OpMethod is finding the host's fence method.
	OpMethod = "method"
	// OpPower is the power operation (step 4) or the read of the power
	// state.
	OpPower = "power"
)

// Error is an error of this package: it names the object, the operation
// and the field at fault, and wraps the cause. It never holds credentials.
type Error struct {
	// Namespace and Name name the object.
	Namespace, Name string
	// Op is what failed: one of the Op constants.
	Op string
	// Field is the field at fault, as a path into the object
	// ("status.provisioning.pendingRebootSince",
	// "metadata.annotations[reboot.metal3.io/a]"); "" when the error is
	// not about one field.
	Field string
	// Err is the cause.
	Err error
}

// Error returns "rebootkube: namespace/name: op field: cause".
func (e *Error) Error() string {
	var b errfmt.Labels
	return b.Start("rebootkube: " + errfmt.Object(e.Namespace, e.Name)).Part(errfmt.Step(e.Op, e.Field)).End(e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// conflict marks cause as a conflict.
func conflict(cause error) error {
	if cause == nil || errors.Is(cause, ErrConflict) {
		return cause
	}
	return fmt.Errorf("%w: %w", ErrConflict, cause)
}

// annotationField names an annotation as a field.
func annotationField(key string) string {
	return "metadata.annotations[" + key + "]"
}

// annotationsField names several annotations as one field.
func annotationsField(keys []string) string {
	return "metadata.annotations[" + strings.Join(keys, ",") + "]"
}
