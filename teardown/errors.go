package teardown

import (
	"errors"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels, checked with errors.Is.
var (
	// ErrMemberNotFound reports that an etcd cluster has no member with the
	// ID asked for. Etcd implementations wrap it from RemoveMember, so that
	// a rerun after a partial run finds the member already gone.
	ErrMemberNotFound = errors.New("etcd member not found")
	// ErrQuorum reports that removing an etcd member would leave its
	// cluster without a healthy majority.
	ErrQuorum = errors.New("removal would break the etcd quorum")
	// ErrRevisionNotFound reports that the design revision asked for does
	// not exist.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrIntermediateCommits reports committed revisions without a
	// site-action tag between the last site action and the target.
	ErrIntermediateCommits = errors.New("intermediate committed revisions")
	// ErrNotReady reports that remove-from-cluster found the node not
	// cordoned, not drained or still labelled (the teardown design's 409
	// checks).
	ErrNotReady = errors.New("node not ready for removal")
	// ErrNotConfirmed reports that a step acted but could not confirm the
	// result in time (pods still there, kubelet still reporting, etcd not
	// healthy, node still listed). The outcome is unknown: a rerun checks
	// again.
	ErrNotConfirmed = errors.New("not confirmed")
	// ErrNotConfigured reports that the Executor lacks the port a step
	// needs.
	ErrNotConfigured = errors.New("not configured")
)

// Error is an error of this package: it names the node, the step (zero for
// the validation of a request) and the request field at fault, carries the
// Reason a status response reports, and wraps the cause. It never holds
// credentials: the ports must not put them in their errors.
type Error struct {
	// Node is the node being torn down.
	Node string
	// Step is the step that failed; zero for a request validation error.
	Step StepKind
	// Field is the request field (query parameter name) at fault, if any.
	Field string
	// Reason is what a status response reports for this error.
	Reason Reason
	// Err is the cause.
	Err error
}

// Error returns "teardown: node N, step S, field F: cause", leaving out
// what is not known.
func (e *Error) Error() string {
	var b errfmt.Labels
	b.Start("teardown").AddRaw("node", quoteIfNeeded(e.Node))
	if e.Step != 0 {
		b.AddRaw("step", e.Step.String())
	}
	b.AddRaw("field", quoteIfNeeded(e.Field))
	return b.Cause(e.Err, string(e.Reason))
}

// quoteIfNeeded quotes (and shortens) a name from outside that holds
// characters a log line or the message's own syntax could be confused by.
func quoteIfNeeded(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == ',' || r == ':' || r == '"' }) || len(s) > 64 {
		return strconv.Quote(clip(s))
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of the first *Error in err's chain,
// ReasonSuccess for nil, ReasonInternalError for an error of another kind.
func ReasonOf(err error) Reason {
	if err == nil {
		return ReasonSuccess
	}
	var te *Error
	if errors.As(err, &te) && te.Reason != "" {
		return te.Reason
	}
	return ReasonInternalError
}
