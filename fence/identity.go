package fence

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Identifier is the optional capability of a device that can read the
// identity of the machine it switches: the SMBIOS system UUID its BMC
// reports (Redfish ComputerSystem.UUID, IPMI Get System GUID). Before a
// method with Method.SystemUUID set switches its node off (or counts it off
// already), the engine compares the two (see SameMachine), so that an
// address that names another machine (a swapped cable, a copied
// configuration, a re-racked server) never switches off a healthy machine
// while the dead node is reported fenced.
//
// A device that has no identity to give for plug returns an error wrapping
// ErrNoIdentity; the action then proceeds with a warning. Any other error
// fails the action as not done.
type Identifier interface {
	Identity(ctx context.Context, plug string) (string, error)
}

var (
	// ErrWrongMachine means the device's machine is not the node's: their
	// identities contradict each other. Errors wrapping it are NotDone:
	// nothing was switched.
	ErrWrongMachine = errors.New("the device switches another machine than the node's")
	// ErrNoIdentity means a device cannot tell the identity of its machine
	// (an Identifier returns it): the check is skipped, with a warning.
	ErrNoIdentity = errors.New("the device reports no machine identity")
)

// ParseUUID reads a UUID in its usual forms: 32 hexadecimal digits with or
// without hyphens, in any case, optionally in braces or with a urn:uuid:
// prefix.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.ToLower(t), "urn:uuid:")
	t = strings.TrimSuffix(strings.TrimPrefix(t, "{"), "}")
	t = strings.ReplaceAll(t, "-", "")
	if len(t) != 32 {
		return u, fmt.Errorf("%q is not a UUID: want 32 hexadecimal digits", s)
	}
	if _, err := hex.Decode(u[:], []byte(t)); err != nil {
		return u, fmt.Errorf("%q is not a UUID: %v", s, err)
	}
	return u, nil
}

// SameMachine reports whether two system UUIDs name the same machine. They
// are compared as UUIDs (case, hyphens and braces aside) and also with the
// byte orders that tools and BMCs differ on: SMBIOS stores the first three
// fields least significant byte first (so one may read them swapped), and
// IPMI's GUID commands answer all sixteen bytes least significant first. A
// UUID of all zeros or all ones, or a placeholder that firmware of many
// boards ships (03000200-0400-0500-0006-000700080009), names no machine.
// An error says which one is not a UUID.
func SameMachine(a, b string) (bool, error) {
	ua, err := ParseUUID(a)
	if err != nil {
		return false, err
	}
	ub, err := ParseUUID(b)
	if err != nil {
		return false, err
	}
	if unset(ua) || unset(ub) {
		return false, fmt.Errorf("%w: a UUID of all zeros or ones, or a firmware placeholder, names no machine", ErrNoIdentity)
	}
	for _, v := range [][16]byte{ub, smbiosSwap(ub), reversed(ub)} {
		if ua == v {
			return true, nil
		}
	}
	return false, nil
}

// placeholders are UUIDs that firmware of many boards ships unset, the
// same on every such board: they name no machine.
var placeholders = func() map[[16]byte]bool {
	m := map[[16]byte]bool{}
	for _, s := range []string{
		"00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"03000200-0400-0500-0006-000700080009", // "To Be Filled By O.E.M." boards
	} {
		u, err := ParseUUID(s)
		if err != nil {
			panic(err)
		}
		m[u], m[smbiosSwap(u)], m[reversed(u)] = true, true, true
	}
	return m
}()

func unset(u [16]byte) bool { return placeholders[u] }

// smbiosSwap swaps the byte order of the first three fields (4, 2 and 2
// bytes), as SMBIOS stores them.
func smbiosSwap(u [16]byte) [16]byte {
	u[0], u[1], u[2], u[3] = u[3], u[2], u[1], u[0]
	u[4], u[5] = u[5], u[4]
	u[6], u[7] = u[7], u[6]
	return u
}

func reversed(u [16]byte) [16]byte {
	for i, j := 0, 15; i < j; i, j = i+1, j-1 {
		u[i], u[j] = u[j], u[i]
	}
	return u
}

// FormatUUID writes 16 bytes as a UUID, 8-4-4-4-12 lower-case hexadecimal
// digits in the order given.
func FormatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// checkIdentity compares the identity of the method's machine with the
// node's before a switch: nil when they name the same machine, or when the
// check cannot be made: verify_identity=false; no system UUID given for the
// node; a driver that has no identity to read (a PDU, a switch; logged at
// debug level); a device that could tell but does not (a warning).
func (r *run) checkIdentity(ctx context.Context, a Action) error {
	if r.o.SkipIdentity || r.m.SystemUUID == "" {
		// No identity given for the node (a command line, a library
		// call, a Node without one): nothing to compare.
		return nil
	}
	want := strings.TrimSpace(r.m.SystemUUID)
	id, ok := r.m.Device.(Identifier)
	if !ok {
		// A PDU outlet or a switch port has no machine identity to give:
		// not a warning, the check is the BMC's.
		r.o.Logger.LogAttrs(ctx, slog.LevelDebug, "machine identity not checked: the driver cannot read one",
			slog.String("node", r.m.Node), slog.String("method", r.m.Name))
		return nil
	}
	got, err := id.Identity(r.ioContext(ctx, time.Time{}), r.m.Plug)
	if err == nil && strings.TrimSpace(got) == "" {
		err = ErrNoIdentity
	}
	if err == nil {
		var same bool
		same, err = SameMachine(want, got)
		if err == nil && !same {
			return r.wrap(a, "identity", NotDone(fmt.Errorf("%w: the device's machine is %s, the node's (its system UUID) is %s; nothing switched (verify_identity=false turns the check off)", ErrWrongMachine, got, want)))
		}
		if err == nil {
			r.identified = true
		}
	}
	if errors.Is(err, ErrNoIdentity) {
		r.warnNoIdentity(ctx, err.Error())
		return nil
	}
	if err != nil {
		return r.wrap(a, "identity", NotDone(err))
	}
	return nil
}

// identityAfterOff reads the machine's identity again once its off is
// confirmed, when it was read before: an address that moved to another
// machine during the off (a DHCP lease handed on, a BMC failover, a chassis
// manager's shared address) switched and confirmed that machine, not the
// node's. Then the off proves nothing of the node: the result is not
// fenced, and the outcome unknown (a machine was switched).
func (r *run) identityAfterOff(ctx context.Context, a Action) error {
	if !r.identified {
		return nil
	}
	want := strings.TrimSpace(r.m.SystemUUID)
	got, err := r.m.Device.(Identifier).Identity(r.ioContext(ctx, time.Time{}), r.m.Plug)
	if err == nil && strings.TrimSpace(got) == "" {
		err = ErrNoIdentity
	}
	same := false
	if err == nil {
		same, err = SameMachine(want, got)
	}
	if err == nil && same {
		return nil
	}
	r.res.OffConfirmed = false
	r.res.State = StateUnknown
	if err == nil {
		err = fmt.Errorf("%w: after the off, the device's machine is %s, no longer the node's (%s): the off switched another machine, and proves nothing of the node", ErrWrongMachine, got, want)
	} else {
		err = fmt.Errorf("the device named the node's machine before the off and cannot name it after (%w): the off proves nothing of the node", err)
	}
	return r.wrap(a, "identity after the off", OutcomeUnknown(err))
}

func (r *run) warnNoIdentity(ctx context.Context, why string) {
	r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "machine identity not checked",
		slog.String("node", r.m.Node), slog.String("method", r.m.Name), slog.String("reason", why))
}
