package redfish

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels of this package, checked with errors.Is. Each wraps the
// fence sentinel that the engine and fencectl act on.
var (
	// ErrTransition means the system reports PoweringOn or PoweringOff: it
	// is neither on nor off yet. It wraps fence.ErrBadState, so that a
	// system in transition never counts as on or off; while the engine
	// waits for a state after a reset, it takes it as "not yet".
	ErrTransition = fmt.Errorf("%w: power state in transition", fence.ErrBadState)
	// ErrMalformedReply means a reply could not be used: not JSON, or a
	// property missing or of the wrong type.
	ErrMalformedReply = errors.New("malformed reply")
	// ErrResetTypeNotOffered means the system does not offer the reset
	// type an operation needs. It wraps fence.ErrUnsupported.
	ErrResetTypeNotOffered = fmt.Errorf("%w: reset type not offered", fence.ErrUnsupported)
	// ErrNoSuchSystem means the service has no such computer system (a
	// systems_uri that answers 404, or a plug that names no system). It
	// wraps fence.ErrUnknownPlug.
	ErrNoSuchSystem = fmt.Errorf("%w: no such system", fence.ErrUnknownPlug)
	// ErrSeveralSystems means the service has several computer systems and
	// none was chosen: the driver does not guess. It wraps fence.ErrConfig.
	ErrSeveralSystems = fmt.Errorf("%w: several systems, none chosen", fence.ErrConfig)
	// ErrClosed means the device was closed.
	ErrClosed = errors.New("redfish device closed")
)

// Error is the error of one request to a Redfish service, or of what the
// driver made of its reply. It names the service's host, the request's
// method and path and, when one is at fault, the reply's property. It never
// holds credentials: request bodies are never quoted, and a password that a
// reply would echo is replaced by REDACTED.
type Error struct {
	Host   string // the service's host:port
	Method string // the request's HTTP method: GET, POST, DELETE
	Path   string // the request's path, such as /redfish/v1/Systems/1
	Field  string // the reply's property at fault, such as PowerState; empty if none
	Status int    // the reply's HTTP status; 0 when there was no reply
	Reason string // what went wrong
	// Err is the underlying cause, if any (a transport error, a JSON
	// error, a context error).
	Err error
	// is holds the sentinels the error matches.
	is []error
}

// Error returns "redfish HOST: METHOD PATH: [FIELD: ]REASON[: CAUSE]".
func (e *Error) Error() string {
	var b errfmt.Labels
	b.Start("redfish " + e.Host).Part(e.Method + " " + e.Path).Part(e.Field).Part(e.Reason)
	if e.Err == nil {
		return b.String()
	}
	if msg := e.Err.Error(); !strings.Contains(e.Reason, msg) {
		b.Part(msg)
	}
	return b.String()
}

// Unwrap returns the cause and the sentinels the error matches.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, len(e.is)+1)
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return append(out, e.is...)
}

// clip shortens text from a reply for an error message, keeping it on one
// line.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
