package snmppdu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels of this package, checked with errors.Is. The drivers export
// them under their own names.
var (
	// ErrNoReply means a request went unanswered for the whole timeout and
	// retries. A device that is down, a wrong community and a wrong SNMPv3
	// privacy passphrase all look alike: an SNMP agent drops such requests
	// without a word. For reads it comes with fence.ErrUnreachable; for a
	// write, with fence.ErrOutcomeUnknown (the write may have been carried
	// out, and only its answer lost).
	ErrNoReply = errors.New("no reply")
	// ErrUnknownModel means the device's sysObjectID names no model this
	// driver knows. It wraps fence.ErrUnsupported.
	ErrUnknownModel = fmt.Errorf("%w: unknown PDU model", fence.ErrUnsupported)
	// ErrDeviceChanged means the device's sysObjectID is not the one read
	// when the model was detected: another device answers at the address.
	ErrDeviceChanged = errors.New("the device's sysObjectID changed")
	// ErrRefused means the device answered a request with an SNMP error
	// status.
	ErrRefused = errors.New("refused by the device")
	// ErrMalformed means a reply could not be used: the wrong objects, or a
	// value of the wrong type.
	ErrMalformed = errors.New("malformed reply")
	// ErrClosed means the device was closed.
	ErrClosed = errors.New("device closed")
)

// Error is the error of one SNMP request to a PDU, or of what the driver
// made of its reply. It names the device (driver and address), the request
// (GET, SET, GETNEXT, GETBULK) and the object, and wraps the cause. It
// never holds a community or a passphrase.
type Error struct {
	// Driver is the driver's name: "apc" or "eaton".
	Driver string
	// Addr is the device's host:port.
	Addr string
	// Op is the SNMP request: "GET", "SET", "GETNEXT" or "GETBULK".
	Op string
	// Object says what was read or written: "sysObjectID", "outlet 3
	// state", "outlet names".
	Object string
	// OID is the object's OID, if there is one.
	OID string
	// Err is the cause.
	Err error
}

// Error returns "DRIVER HOST:PORT: OP OBJECT (OID): CAUSE", leaving out
// the parts that are not known.
func (e *Error) Error() string {
	what := e.Op
	if e.Object != "" {
		what = strings.TrimSpace(what + " " + e.Object)
	}
	if e.OID != "" {
		what += " (" + e.OID + ")"
	}
	return new(errfmt.Labels).Start(e.Driver+" "+e.Addr).Part(what).Cause(e.Err, "failed")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the error is a request without reply, or a
// context deadline.
func (e *Error) Timeout() bool {
	return errors.Is(e.Err, ErrNoReply) || errors.Is(e.Err, context.DeadlineExceeded)
}

// noReply is the cause of a request left unanswered.
type noReply struct {
	after time.Duration
	tries int
	hint  string
}

// Error says how long the request waited, in how many tries, and what a
// silence may mean.
func (e *noReply) Error() string {
	s := fmt.Sprintf("no reply within %v (%d tries of %v)", e.after, e.tries, e.after/time.Duration(e.tries))
	if e.hint != "" {
		s += ": " + e.hint
	}
	return s
}

// Unwrap returns ErrNoReply.
func (e *noReply) Unwrap() error { return ErrNoReply }

// Timeout reports true.
func (e *noReply) Timeout() bool { return true }

// snmpStatus is an SNMP error status in a reply.
type snmpStatus struct {
	status gosnmp.SNMPError
	index  uint8
}

// Error names the status as RFC 3416 does, with its number.
func (e *snmpStatus) Error() string {
	return fmt.Sprintf("error status %s (%d)", statusName(e.status), e.status)
}

// statusName returns the RFC 3416 name of an error status: noSuchName,
// notWritable, ...
func statusName(s gosnmp.SNMPError) string {
	n := s.String()
	if n == "" || strings.HasPrefix(n, "SNMPError(") {
		return fmt.Sprintf("status %d", s)
	}
	return strings.ToLower(n[:1]) + n[1:]
}

// usmReports names the USM statistics an SNMPv3 agent reports a refused
// message with (RFC 3414), with what each says.
var usmReports = map[string]string{
	".1.3.6.1.6.3.15.1.1.1.0": "the user does not have this security level (usmStatsUnsupportedSecLevels)",
	".1.3.6.1.6.3.15.1.1.3.0": "no such user (usmStatsUnknownUserNames)",
	".1.3.6.1.6.3.15.1.1.5.0": "wrong authentication passphrase or protocol (usmStatsWrongDigests)",
	".1.3.6.1.6.3.15.1.1.6.0": "wrong privacy passphrase or protocol (usmStatsDecryptionErrors)",
}

// request is what one exchange was, for classify.
type request struct {
	op, object, oid string
	write           bool // a SET: a lost reply leaves the outcome unknown
	sent            bool // a request left this process
	tries           int
	timeout         time.Duration
	report          string // the usmStats OID of an unauthenticated SNMPv3 report, if one came
	discovery       bool   // the SNMPv3 engine discovery itself
}

// classify turns an error of gosnmp (or an SNMP error status) into a cause
// that wraps fence's sentinels, and marks it for the engine: NotDone when
// the device surely did not act on a write, OutcomeUnknown otherwise.
func (d *Device) classify(ctx context.Context, r request, err error) error {
	notDone := func(e error) error { return fence.NotDone(e) }
	// What a write that went out and came back with no usable answer is.
	doubt := func(e error) error {
		if r.write && r.sent {
			return fence.OutcomeUnknown(e)
		}
		return fence.NotDone(e)
	}
	if d.closed.Load() {
		return notDone(ErrClosed)
	}
	cerr := ctx.Err()
	if cerr == nil {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			cerr = context.DeadlineExceeded // passed, and the context does not know it yet
		} else if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			cerr = err
		}
	}
	if cerr != nil {
		if !r.sent {
			return notDone(fmt.Errorf("%w before the request was sent", cerr))
		}
		if errors.Is(cerr, context.DeadlineExceeded) {
			nr := &noReply{after: r.timeout * time.Duration(r.tries), tries: r.tries, hint: "the call's deadline came first"}
			if !r.write {
				return fmt.Errorf("%w: %w: %w", fence.ErrUnreachable, cerr, nr)
			}
			return doubt(fmt.Errorf("%w: %w", cerr, nr))
		}
		return doubt(fmt.Errorf("%w while waiting for the reply", cerr))
	}
	msg := d.scrub(err.Error())
	var st *snmpStatus
	var ne net.Error
	switch {
	case errors.As(err, &st):
		return d.classifyStatus(r, st)
	case errors.Is(err, gosnmp.ErrWrongDigest), errors.Is(err, gosnmp.ErrUnknownUsername),
		errors.Is(err, gosnmp.ErrUnknownSecurityLevel), errors.Is(err, gosnmp.ErrDecryption),
		strings.Contains(msg, "not authentic"):
		// An SNMPv3 agent answers a message it cannot authenticate (or
		// decrypt) with an unauthenticated report, and does nothing else.
		why := "the device refused the SNMPv3 credentials"
		if s, ok := usmReports[r.report]; ok {
			why += ": " + s
		} else {
			switch {
			case errors.Is(err, gosnmp.ErrWrongDigest):
				why += ": " + usmReports[".1.3.6.1.6.3.15.1.1.5.0"]
			case errors.Is(err, gosnmp.ErrUnknownUsername):
				why += ": " + usmReports[".1.3.6.1.6.3.15.1.1.3.0"]
			case errors.Is(err, gosnmp.ErrUnknownSecurityLevel):
				why += ": " + usmReports[".1.3.6.1.6.3.15.1.1.1.0"]
			case errors.Is(err, gosnmp.ErrDecryption):
				why += ": " + usmReports[".1.3.6.1.6.3.15.1.1.6.0"]
			default:
				why += " (its reply failed authentication: wrong user name, or wrong authentication passphrase or protocol)"
			}
		}
		return notDone(fmt.Errorf("%w: %s", fence.ErrLoginDenied, why))
	case errors.Is(err, gosnmp.ErrMaxRetriesExceeded), errors.As(err, &ne) && ne.Timeout():
		nr := &noReply{after: r.timeout * time.Duration(r.tries), tries: r.tries, hint: d.silentHint()}
		if r.write {
			// A SET is sent once: its answer may be what got lost.
			nr.hint = "the device may have carried the SET out and its answer been lost or late; it is not sent again"
			return doubt(nr)
		}
		return fmt.Errorf("%w: %w", fence.ErrUnreachable, nr)
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		// An ICMP port unreachable: nothing listens, so nothing acted.
		return notDone(fmt.Errorf("%w: nothing listens on UDP port %d (connection refused)", fence.ErrUnreachable, d.cfg.Port))
	case errors.Is(err, errConnect):
		return notDone(fmt.Errorf("%w: %s", fence.ErrUnreachable, short(msg)))
	case strings.Contains(msg, "unmarshal") || strings.Contains(msg, "decode") || strings.Contains(msg, "parse"):
		return doubt(fmt.Errorf("%w: %s", ErrMalformed, short(msg)))
	}
	return doubt(errors.New(short(msg)))
}

// classifyStatus classifies an SNMP error status in a reply.
func (d *Device) classifyStatus(r request, st *snmpStatus) error {
	switch st.status {
	case gosnmp.AuthorizationError, gosnmp.NoAccess:
		// The community or user is known, but may not touch the object:
		// a read-only community, or a user without write access.
		what := "read"
		if r.write {
			what = "write"
		}
		return fence.NotDone(fmt.Errorf("%w: %w: %w: the %s may not %s this object", fence.ErrLoginDenied, ErrRefused, st, d.credName(), what))
	case gosnmp.NoSuchName:
		if !r.write {
			return fence.NotDone(fmt.Errorf("%w: %w", fence.ErrUnknownPlug, st))
		}
	}
	if !r.write {
		return fence.NotDone(fmt.Errorf("%w: %w", ErrRefused, st))
	}
	if st.status == gosnmp.NoSuchName && d.set.version == gosnmp.Version1 {
		return fence.NotDone(fmt.Errorf("%w: %w (SNMPv1's answer to a SET of an object that is not there or not writable, or with a read-only community)", ErrRefused, st))
	}
	switch st.status {
	case gosnmp.GenErr, gosnmp.UndoFailed:
		// genErr says nothing of what was done; undoFailed says some of
		// it may have been.
		return fence.OutcomeUnknown(fmt.Errorf("%w: %w", ErrRefused, st))
	}
	// Every other status of a SET (RFC 3416 4.2.5) refuses the request as a
	// whole before, or instead of, changing anything; commitFailed undid
	// what it changed.
	return fence.NotDone(fmt.Errorf("%w: %w", ErrRefused, st))
}

// silentHint explains what a request without reply may mean.
func (d *Device) silentHint() string {
	switch d.set.version {
	case gosnmp.Version3:
		if d.set.flags == gosnmp.AuthPriv {
			return "the device is down or unreachable, or it dropped the request unread (an SNMP agent drops a message it cannot decrypt: wrong privacy passphrase or protocol)"
		}
		return "the device is down or unreachable"
	}
	h := "the device is down or unreachable, or it dropped the request (an SNMP agent drops a request with a wrong community without a word"
	if d.cfg.Username != "" || !d.cfg.PrivPassword.IsZero() {
		h += "; SNMPv3 credentials are given, but snmp_version is " + d.cfg.Version
	}
	return h + ")"
}

// credName names the credentials in use, for messages.
func (d *Device) credName() string {
	if d.set.version == gosnmp.Version3 {
		return "SNMPv3 user"
	}
	return "community"
}

// scrub hides the credentials, should a message ever hold them.
func (d *Device) scrub(s string) string {
	return fence.Scrub(s, d.cfg.Community, d.cfg.AuthPassword, d.cfg.PrivPassword)
}

// short bounds a message of gosnmp's to a readable length, on one line.
func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const limit = 300
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
