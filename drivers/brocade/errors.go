package brocade

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels of this driver, checked with errors.Is. Each that has one
// wraps the fence sentinel that the engine and fencectl act on.
var (
	// ErrHostKey means the switch's host key is not trusted: unknown to
	// the known_hosts files, different from the one they hold for the
	// switch (which may be an attack), revoked, or not the pinned
	// fingerprint. The connection is dropped before any credential is
	// sent. It wraps fence.ErrLoginDenied: the switch failed to prove who
	// it is.
	ErrHostKey = fmt.Errorf("%w: host key not trusted", fence.ErrLoginDenied)
	// ErrMalformed means a reply of the switch could not be understood:
	// switchshow without its port table, a portshow without the port's
	// flags, output that is not text.
	ErrMalformed = errors.New("switch reply not understood")
	// ErrRefused means the switch answered a port command with an error
	// message (permission denied, invalid port, command not found): it did
	// not act.
	ErrRefused = errors.New("command refused by the switch")
	// ErrUnexpectedReply means the switch answered a port command with
	// text that is neither nothing (success) nor an error message: the
	// outcome is unknown.
	ErrUnexpectedReply = errors.New("unexpected reply to a port command")
	// ErrCommandTimeout means a command's reply (its output and the prompt
	// after it) did not come within the command timeout. Errors wrapping
	// it report themselves as timeouts.
	ErrCommandTimeout = errors.New("no complete reply within the command timeout")
	// ErrClosed means the device was closed.
	ErrClosed = errors.New("brocade device closed")
)

// Error is the error of one step with a switch: connecting, logging in,
// starting the command shell, or one command. It names the switch, the
// step and, for a login, the user and the authentication methods tried,
// and wraps the cause. It never holds the password or the private key:
// text quoted from the switch has the password, if it appears, replaced
// by REDACTED.
type Error struct {
	// Addr is the switch's host:port.
	Addr string
	// Op is the step: "connect", "login", "shell", or the command sent,
	// such as "switchshow" or "portCfgPersistentDisable 3".
	Op string
	// Err is the cause.
	Err error
}

// Error returns "brocade ssh HOST:PORT: OP: CAUSE".
func (e *Error) Error() string {
	return new(errfmt.Labels).Start("brocade ssh "+e.Addr).Part(e.Op).Cause(e.Err, "failed")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the step timed out: no reply within the login
// or command timeout, or a context deadline.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	if errors.As(e.Err, &t) && t.Timeout() {
		return true
	}
	return errors.Is(e.Err, ErrCommandTimeout) || errors.Is(e.Err, context.DeadlineExceeded)
}

// timeoutError is the cause of a step that ran out of time.
type timeoutError struct {
	what  string
	after string
	base  error
}

// Error says what did not come within what time.
func (e *timeoutError) Error() string { return e.what + " within " + e.after }

// Unwrap returns the sentinel of the timeout.
func (e *timeoutError) Unwrap() error { return e.base }

// Timeout reports true.
func (e *timeoutError) Timeout() bool { return true }

// contextError is the cause of a step whose context ended.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out: %w", err)
	}
	return fmt.Errorf("canceled: %w", err)
}

// clip shortens text from the switch for an error message: control
// characters become spaces, runs of white space one space, and at most n
// bytes are kept.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
