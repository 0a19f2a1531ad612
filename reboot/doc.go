// Package reboot is the state machine of the reboot interface of bare-metal
// hosts (the metal3 "reboot-interface" design): clients ask for a host to be
// rebooted with annotations, and the controller that manages the host's
// power carries the reboots out, recording its progress in two status
// timestamps, pendingRebootSince and lastPoweredOn.
//
// Decide is the whole state machine and is pure: it takes an Input (the
// annotations, Status.PoweredOn, Spec.Online, the provisioning state, the
// two timestamps, whether the last power operation failed, a force flag
// and the time) and returns a Decision (timestamps to write, a power off
// hard or soft, a power on, annotations to remove, the reason and the
// problems found). It reads no clock and does no I/O, so a Kubernetes
// adapter, a test or a simulation can drive it alike. Power carries out a
// decision's power operation through the fence core (fence.Do), so any
// fence driver can reboot a host.
//
// # Annotations
//
// The plain annotation reboot.metal3.io asks for a power cycle and is set
// and forgotten: the controller removes it once the host is off. A keyed
// annotation reboot.metal3.io/{key} asks for the host to be held off until
// the client that owns the key removes it; the controller never removes a
// keyed annotation, except when deprovisioning. Values are JSON objects
// such as {"mode":"hard"}; see ParseValue. Everything else in a value is
// ignored and the value is never rewritten.
//
// # The rules
//
// A reboot is pending when pendingRebootSince is after lastPoweredOn (an
// unset time is the earliest). Which annotations count: all of them on a
// provisioned host; on a host that is not provisioned only forced ones (the
// value's "force": true, or Input.Force for all); the others are left
// alone: they neither start a reboot nor are removed. Decide applies the
// first rule that matches:
//
//  1. Deprovisioning: remove every reboot annotation, plain and keyed, and
//     clear pendingRebootSince, so that a reboot pending for the old image
//     cannot switch off the next one. No power operation: the
//     deprovisioning owns the power.
//  2. Host on, some annotation counts, no reboot pending: set
//     pendingRebootSince to now and power off (both in one decision; the
//     timestamp is written first).
//  3. Host on, a reboot pending: power off, whatever Spec.Online says.
//  4. Host on, Spec.Online false: power off.
//  5. Host on otherwise: nothing to do.
//  6. Host off, Spec.Online false: nothing to do; it stays off.
//  7. Host off, Spec.Online true, the plain annotation present and counting:
//     remove it (the request is served: the host is off).
//  8. Host off, Spec.Online true, a keyed annotation present (counting or
//     not): hold the host off.
//  9. Host off, Spec.Online true, otherwise: power on and set lastPoweredOn
//     to now, which ends a pending reboot.
//
// A power off is hard when a counted request asks for hard (a hard request
// from any client wins), or when the last power operation failed; soft
// otherwise, which Power carries out as a graceful shutdown followed by a
// hard power off when the graceful one is refused or times out.
//
// Where these rules go beyond the design, and why:
//
//   - The design sets pendingRebootSince when it is "empty or earlier than"
//     lastPoweredOn, and acts while it is "later than" lastPoweredOn. Equal
//     times count as "earlier": the two conditions are then each other's
//     negation, so no annotation can be stuck between them.
//   - Rule 7 also serves the plain annotation when no reboot is pending:
//     a request made while the host is off is served by that off state
//     (the design only removes it during a pending reboot, which would leave
//     such a request, and the host, waiting forever).
//   - Rule 8 holds the host off for every keyed annotation, even one left
//     alone on a host that is not provisioned: powering a host on against a
//     client's request to hold it off is never safe. So the controller never
//     powers a host on while a keyed annotation exists.
//   - Rule 1 clears pendingRebootSince (the design only removes the
//     annotations).
//   - Removing annotations and powering on are never one decision: the
//     caller applies the removal with a precondition, reads the object again
//     and decides again, so a keyed annotation added meanwhile is seen
//     before the host is powered on.
//
// # Malformed values
//
// A malformed value never blocks a reboot and never makes it less safe:
// the annotation's presence is the request, and a value that cannot be read
// gives the design's default, soft and not forced, with a Problem in the
// Decision (and in Request.Problem) saying how it was read. Soft is the
// right default for what cannot be read: it still ends with the host
// verified off (the hard fallback), so the fencing is as safe; only the
// time to get there differs, while guessing hard could cut a graceful
// shutdown that nobody asked to cut. Likewise an unreadable force flag is
// false: a host that is not provisioned is left alone unless a request
// clearly says otherwise. In detail (see ParseValue): an empty value is a
// well-formed soft request; a value starting with '{' must be valid JSON,
// else soft with a problem; a mode other than "hard" or "soft" is soft with
// a problem; member names match without regard to case and the last of
// duplicates counts, as with encoding/json (so the same value means the
// same as in metal3's own controller), with a problem; any other value is
// an opaque tracing token such as a Machine's UID (the design's
// remediation case): soft, reported only when it mentions a mode. Note that
// the design's own examples {'mode':'hard'} use single quotes and so are
// not JSON: they read as soft, with a problem that says so. The design also
// shows "reboot.metal.io", which is not a reboot annotation: Decide reports
// it as a problem and otherwise ignores it.
//
// # Timestamps
//
// pendingRebootSince is always the caller's clock (Input.Now), never a time
// taken from a value. Input.Precision is the precision the caller stores
// times at (time.Second for a Kubernetes status): Decide rounds
// pendingRebootSince up and lastPoweredOn down to it, and keeps
// pendingRebootSince after lastPoweredOn, and lastPoweredOn not before
// pendingRebootSince, even when the clock is behind the status, so that
// every reboot makes progress. A clock behind the status by more than twice
// the precision (more than rounding explains) is reported as a problem.
package reboot
