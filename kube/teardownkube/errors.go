package teardownkube

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/fencekit/fencekit/internal/errfmt"
	"github.com/fencekit/fencekit/teardown"
)

// The operations an Error names.
const (
	// OpGet is reading the Node.
	OpGet = "get"
	// OpLease is reading the node's Lease in kube-node-lease.
	OpLease = "lease"
	// OpListPods is listing the pods bound to the node.
	OpListPods = "list-pods"
	// OpCordon is marking the node unschedulable.
	OpCordon = "cordon"
	// OpDrain is evicting (or deleting) the node's pods and waiting until
	// they are gone.
	OpDrain = "drain"
	// OpSetLabels is setting and removing the node's labels.
	OpSetLabels = "set-labels"
	// OpDelete is deleting the Node object.
	OpDelete = "delete"
)

// Error is an error of this package: it names the node, the operation and,
// for bad input, the field at fault, and wraps the cause. A drain that
// left pods behind lists them in Remaining, each with the reason it is
// still there. Errors never hold credentials: API errors are the server's.
type Error struct {
	// Node is the node's name.
	Node string
	// Op is what failed: one of the Op constants.
	Op string
	// Field is the argument or field at fault ("DrainOptions.Timeout",
	// "labels[example.com/x]"); "" when the error is not about one field.
	Field string
	// Remaining are the pods a failed drain left on the node, sorted by
	// namespace and name; nil for other errors or when they could not be
	// listed.
	Remaining []RemainingPod
	// Err is the cause. It wraps teardown.ErrNodeNotFound when the node
	// does not exist, and context.DeadlineExceeded when a drain ran out of
	// time.
	Err error
}

// RemainingPod is a pod a failed drain left on the node.
type RemainingPod struct {
	// Namespace and Name name the pod.
	Namespace, Name string
	// Reason says why it is still there: the last refusal of its eviction
	// (for a PodDisruptionBudget, the server's explanation, which names
	// the budget), its termination in progress, or that it was not
	// evicted yet.
	Reason string
	// Budgets name the PodDisruptionBudgets of the pod's namespace that
	// select it, each with the disruptions it allows, such as
	// "web (disruptionsAllowed 0)".
	Budgets []string
}

// String returns "namespace/name: reason [PodDisruptionBudget b1, ...]".
func (p RemainingPod) String() string {
	var b strings.Builder
	b.WriteString(p.Namespace)
	b.WriteByte('/')
	b.WriteString(p.Name)
	if p.Reason != "" {
		b.WriteString(": ")
		b.WriteString(p.Reason)
	}
	if len(p.Budgets) > 0 {
		b.WriteString(" [PodDisruptionBudget ")
		b.WriteString(strings.Join(p.Budgets, ", "))
		b.WriteByte(']')
	}
	return b.String()
}

// Error returns "teardownkube: node name: op field: cause; pods left: ...".
func (e *Error) Error() string {
	var l errfmt.Labels
	var b strings.Builder
	b.WriteString(l.Start("teardownkube: node " + e.Node).Part(errfmt.Step(e.Op, e.Field)).End(e.Err))
	if len(e.Remaining) > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(len(e.Remaining)))
		if len(e.Remaining) == 1 {
			b.WriteString(" pod left: ")
		} else {
			b.WriteString(" pods left: ")
		}
		for i, p := range e.Remaining {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.String())
		}
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// apiError wraps an error of the API server for the operation op on node,
// marking a 404 as teardown.ErrNodeNotFound when notFoundIsNode.
func apiError(node, op string, err error, notFoundIsNode bool) error {
	if notFoundIsNode && apierrors.IsNotFound(err) {
		err = fmt.Errorf("%w: %w", teardown.ErrNodeNotFound, err)
	}
	return &Error{Node: node, Op: op, Err: err}
}

// inputError reports bad input.
func inputError(node, op, field, format string, args ...any) error {
	return &Error{Node: node, Op: op, Field: field, Err: fmt.Errorf(format, args...)}
}

// refusal returns a readable reason for a refused eviction: the server's
// explanation of a PodDisruptionBudget refusal when there is one (it names
// the budget), its message otherwise.
func refusal(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					return s.Message + " " + c.Message
				}
			}
		}
		if s.Message != "" {
			return s.Message
		}
	}
	return err.Error()
}
