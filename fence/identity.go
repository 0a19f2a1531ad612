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
// UUID of all zeros or all ones (firmware that sets none) names no machine.
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
		return false, fmt.Errorf("%w: a UUID of all zeros or all ones names no machine", ErrNoIdentity)
	}
	for _, v := range [][16]byte{ub, smbiosSwap(ub), reversed(ub)} {
		if ua == v {
			return true, nil
		}
	}
	return false, nil
}

func unset(u [16]byte) bool {
	return u == [16]byte{} || u == [16]byte{0: 0xff, 1: 0xff, 2: 0xff, 3: 0xff, 4: 0xff, 5: 0xff, 6: 0xff, 7: 0xff, 8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
}

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
// node's before a fencing switch: nil when they name the same machine, or
// when the check cannot be made (no UUID for the node, a device that cannot
// tell, verify_identity=false), the last two with a warning.
func (r *run) checkIdentity(ctx context.Context, a Action) error {
	want := strings.TrimSpace(r.m.SystemUUID)
	if r.o.SkipIdentity || want == "" {
		return nil
	}
	id, ok := r.m.Device.(Identifier)
	if !ok {
		r.warnNoIdentity(ctx, "the driver cannot read its machine's identity")
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

func (r *run) warnNoIdentity(ctx context.Context, why string) {
	r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "machine identity not checked",
		slog.String("node", r.m.Node), slog.String("method", r.m.Name), slog.String("reason", why))
}
