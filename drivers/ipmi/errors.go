package ipmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels of this driver, checked with errors.Is.
var (
	// ErrNoReply means requests went unanswered for the whole timeout and
	// retries. Errors wrapping it also wrap fence.ErrUnreachable (but for an
	// IPMI v1.5 session activation left unanswered, which is how such a BMC
	// refuses a wrong password: fence.ErrLoginDenied), and report
	// themselves as timeouts (Error.Timeout).
	ErrNoReply = errors.New("no reply from the BMC")
	// ErrMalformed means the BMC's reply could not be parsed.
	ErrMalformed = errors.New("malformed reply")
	// ErrClosed means the device was closed.
	ErrClosed = errors.New("device closed")
)

// Error is the error of one command sent to a BMC, or of setting up the
// session. It names the BMC, the session type and the command, and wraps
// the cause. It never holds the password.
type Error struct {
	// Addr is the BMC's host:port.
	Addr string
	// Interface is "lanplus" (IPMI v2.0) or "lan" (IPMI v1.5).
	Interface string
	// Op is the command ("Get Chassis Status", "Chassis Control (power
	// down)", "Get Device ID") or "session setup".
	Op string
	// Err is the cause.
	Err error
}

// Error returns "ipmi INTERFACE HOST:PORT: COMMAND: CAUSE".
func (e *Error) Error() string {
	return new(errfmt.Labels).Start("ipmi "+e.Interface+" "+e.Addr).Part(e.Op).Cause(e.Err, "failed")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the error is a timeout: requests unanswered for
// the whole timeout and retries, or a context deadline.
func (e *Error) Timeout() bool {
	return errors.Is(e.Err, ErrNoReply) || errors.Is(e.Err, context.DeadlineExceeded)
}

// CompletionError is a BMC's answer with an error completion code: the
// command was refused.
type CompletionError struct {
	// Code is the completion code, such as 0xC0 (node busy) or 0xD4
	// (insufficient privilege).
	Code uint8
	// Description is the code's meaning for the command, as go-ipmi
	// describes it.
	Description string
}

// Error returns the code and its meaning.
func (e *CompletionError) Error() string {
	return fmt.Sprintf("refused by the BMC with completion code %#02x (%s)", e.Code, e.Description)
}

// fail wraps a cause into the device's *Error.
func (d *Device) fail(op string, err error) *Error {
	return &Error{Addr: d.addr, Interface: d.kind, Op: op, Err: err}
}

// noReply is the cause of a request without reply.
type noReply struct {
	after  time.Duration
	tries  int
	detail string
}

// Error says how long the request waited, in how many tries.
func (e *noReply) Error() string {
	return fmt.Sprintf("no reply within %v (%d tries of %v)%s", e.after, e.tries, e.after/time.Duration(e.tries), e.detail)
}

// Unwrap returns ErrNoReply.
func (e *noReply) Unwrap() error { return ErrNoReply }

// Timeout reports true: a request without reply timed out.
func (e *noReply) Timeout() bool { return true }

// contextError is the cause of a call whose context ended.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out: %w", err)
	}
	return fmt.Errorf("canceled: %w", err)
}

// failure is a classified error of go-ipmi.
type failure struct {
	err     error // the cause as this driver reports it
	breaks  bool  // the session can no longer be used
	refused bool  // the BMC answered with an error completion code: it did not act
}

// classify turns an error of go-ipmi's client into a cause that wraps
// fence's sentinels, and says what it means for the session. setup is true
// for errors of setting the session up. go-ipmi v0.9.1 flattens the errors
// of session set-up into text, so these are recognised by their wording.
func (d *Device) classify(ctx context.Context, err error, setup bool) failure {
	msg := flatten(fence.Scrub(err.Error(), d.o.Password))
	low := strings.ToLower(msg)
	if cerr := ctx.Err(); cerr != nil {
		return failure{err: contextError(cerr)}
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The deadline passed, and the context does not know it yet.
		return failure{err: contextError(context.DeadlineExceeded)}
	}
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(low, s) {
				return true
			}
		}
		return false
	}
	noAnswer := has("no matching ipmi response", "no datagram matched", "udp read timed out", "i/o timeout")
	tries := d.o.Retries + 1
	if setup {
		switch {
		case has("rakp authentication failed", "unauthorized name", "invalid integrity check value", "unauthorized guid"):
			return failure{err: fmt.Errorf("%w: the BMC refused the user name or password (%s)", fence.ErrLoginDenied, tail(msg)), breaks: true}
		case !noAnswer && has("unauthorized role", "invalid role", "setsessionprivilegelevel"):
			return failure{err: fmt.Errorf("%w: the BMC refused privilege level %s for this user (%s)", fence.ErrLoginDenied, d.o.Privilege, tail(msg)), breaks: true}
		case has("anonymous login is not enabled"):
			return failure{err: fmt.Errorf("%w: the BMC has no anonymous login: a user name is required", fence.ErrLoginDenied), breaks: true}
		case has("invalid authentication algorithm", "invalid integrity algorithm", "invalid confidentiality algorithm",
			"no cipher suite match", "no matching authentication payload", "no matching integrity payload", "not valid cipher suite"),
			!noAnswer && has("open session failed"):
			// ipmi_sim answers an Open Session it refuses with a reply too
			// short for go-ipmi to read the status code from.
			return failure{err: fmt.Errorf("%w: the BMC did not open a session with cipher suite %d (%s); cipher suite 3 is the one every BMC has", fence.ErrUnsupported, d.o.CipherSuite, tail(msg)), breaks: true}
		case has("activatesession failed", "getsessionchallenge failed") && noAnswer:
			// An IPMI v1.5 BMC ignores an Activate Session whose
			// authentication code does not match the password.
			nr := &noReply{after: d.o.Timeout * time.Duration(tries), tries: tries, detail: " to the session activation, which a BMC ignores when the password is wrong"}
			return failure{err: fmt.Errorf("%w: %w", fence.ErrLoginDenied, nr), breaks: true}
		case has("activatesession failed", "getsessionchallenge failed"):
			return failure{err: fmt.Errorf("%w: the BMC refused the user name or password (%s)", fence.ErrLoginDenied, tail(msg)), breaks: true}
		}
	}
	var re *types.ResponseError
	switch {
	case has("connection refused"):
		return failure{err: fmt.Errorf("%w: nothing listens on UDP port %d (connection refused)", fence.ErrUnreachable, d.o.Port), breaks: true}
	case noAnswer:
		nr := &noReply{after: d.o.Timeout * time.Duration(tries), tries: tries}
		return failure{err: fmt.Errorf("%w: %w", fence.ErrUnreachable, nr), breaks: true}
	case errors.As(err, &re) && re.CompletionCode() != 0:
		cc := uint8(re.CompletionCode())
		ce := &CompletionError{Code: cc, Description: ccDescription(msg)}
		// C3h (timeout while processing) and FFh (unspecified) do not say
		// that nothing was done.
		return failure{err: ce, refused: cc != 0xC3 && cc != 0xFF}
	case errors.As(err, &re):
		return failure{err: fmt.Errorf("%w: %s", ErrMalformed, tail(msg))}
	case has("unpack rmcp", "unpack ipmires", "decrypt", "not an ipmi response", "unpack session", "unpack asf"):
		return failure{err: fmt.Errorf("%w: %s", ErrMalformed, short(msg)), breaks: true}
	}
	return failure{err: errors.New(short(msg)), breaks: true}
}

// ccDescription extracts go-ipmi's description of a completion code from
// its message "cc: 0x.., description: ipmiRes CompletionCode (0x..) is not
// normal: DESCRIPTION".
func ccDescription(msg string) string {
	if i := strings.LastIndex(msg, "is not normal: "); i >= 0 {
		return strings.TrimSpace(msg[i+len("is not normal: "):])
	}
	if i := strings.LastIndex(msg, "description: "); i >= 0 {
		return strings.TrimSpace(msg[i+len("description: "):])
	}
	return msg
}

// tail returns the innermost cause of one of go-ipmi's messages, which
// chain their causes as "...: err: CAUSE"; a completion code reads
// "completion code 0x85: DESCRIPTION".
func tail(msg string) string {
	if i := strings.LastIndex(msg, "err: "); i >= 0 {
		msg = msg[i+len("err: "):]
	}
	if strings.HasPrefix(msg, "cc: ") {
		if j := strings.IndexByte(msg, ','); j > 0 {
			msg = "completion code " + strings.TrimPrefix(msg[:j], "cc: ") + ": " + ccDescription(msg)
		}
	}
	return short(msg)
}

// flatten puts a message on one line.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// short bounds a message of go-ipmi's to a readable length.
func short(s string) string {
	const limit = 300
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
