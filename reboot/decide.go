package reboot

import (
	"slices"
	"strings"
	"time"
)

// Provisioning is where a host is in its provisioning life, as far as
// reboots care.
type Provisioning uint8

const (
	// NotProvisioned: the host carries no provisioned image (registered,
	// inspected, available). Its reboot annotations are left alone unless
	// forced. It is the zero value, so that an Input that forgets to say
	// reboots nothing.
	NotProvisioned Provisioning = iota
	// Provisioned: the host runs its provisioned image (also an externally
	// provisioned one). Reboot annotations are acted on.
	Provisioned
	// Deprovisioning: the host is being deprovisioned. Every reboot
	// annotation is removed and a pending reboot is cancelled; the
	// deprovisioning owns the power.
	Deprovisioning
)

// String returns "not-provisioned", "provisioned" or "deprovisioning".
func (p Provisioning) String() string {
	switch p {
	case Provisioned:
		return "provisioned"
	case Deprovisioning:
		return "deprovisioning"
	}
	return "not-provisioned"
}

// Input is what Decide looks at: a host's annotations and the status and
// spec fields of the reboot interface, as read from the object at one
// moment, and the time. Times are compared as instants; the zero time
// means "unset" (an empty status field).
type Input struct {
	// Annotations are the object's annotations, all of them or only the
	// reboot ones. Decide does not change the map.
	Annotations map[string]string
	// PoweredOn is Status.PoweredOn: the host's power as last read.
	PoweredOn bool
	// Online is Spec.Online: whether the host should be powered on.
	Online bool
	// Provisioning is the host's provisioning state.
	Provisioning Provisioning
	// PendingRebootSince is Status.Provisioning.PendingRebootSince.
	PendingRebootSince time.Time
	// LastPoweredOn is Status.Provisioning.LastPoweredOn.
	LastPoweredOn time.Time
	// LastPowerFailed is true when the controller's last power operation on
	// the host failed (for a BareMetalHost, an error of type power
	// management error): the next power off is hard.
	LastPowerFailed bool
	// Force makes the reboot annotations of a host that is not provisioned
	// count, as the "force" member of a value does for its own annotation.
	Force bool
	// Now is the current time, from the caller's clock.
	Now time.Time
	// Precision is how finely the caller stores the two timestamps:
	// time.Second for the metav1.Time of a Kubernetes status (RFC 3339 in
	// whole seconds), 0 for exactly. Decide writes timestamps at this
	// precision, rounded so that the comparisons it relies on survive the
	// round trip.
	Precision time.Duration
}

// ModeSource says why a power off has its Mode.
type ModeSource uint8

const (
	// ModeDefault: no request asked for hard, so the default, soft.
	ModeDefault ModeSource = iota
	// ModeRequested: a reboot request asked for hard.
	ModeRequested
	// ModePowerFailed: the last power operation failed, so hard, whatever
	// was asked.
	ModePowerFailed
)

// String returns "default", "requested" or "power-failed".
func (s ModeSource) String() string {
	switch s {
	case ModeRequested:
		return "requested"
	case ModePowerFailed:
		return "power-failed"
	}
	return "default"
}

// The reasons a Decision gives, one per rule of the package documentation.
const (
	// ReasonDeprovisioning: rule 1, with annotations to remove or a
	// pendingRebootSince to clear.
	ReasonDeprovisioning = "deprovisioning: reboot annotations removed and any pending reboot cancelled"
	// ReasonDeprovisioningIdle: rule 1, with nothing to remove or clear.
	ReasonDeprovisioningIdle = "deprovisioning: no reboot to cancel"
	// ReasonRebootRequested: rule 2, a reboot starts.
	ReasonRebootRequested = "reboot requested: pendingRebootSince noted, powering off"
	// ReasonRebootPowerOff: rule 3, a pending reboot's host is on.
	ReasonRebootPowerOff = "reboot pending: powering off, whatever Spec.Online says"
	// ReasonOnlineFalse: rule 4.
	ReasonOnlineFalse = "Spec.Online is false: powering off"
	// ReasonOn: rule 5, with no reboot annotation.
	ReasonOn = "host on, as Spec.Online asks"
	// ReasonLeftAlone: rule 5, with reboot annotations that do not count.
	ReasonLeftAlone = "host on: its reboot annotations are left alone, because it is not provisioned and no request is forced"
	// ReasonOff: rule 6, with no reboot pending.
	ReasonOff = "host off, as Spec.Online asks"
	// ReasonPendingOff: rule 6, with a reboot pending.
	ReasonPendingOff = "reboot pending: host off, and Spec.Online is false"
	// ReasonRemovePlain: rule 7.
	ReasonRemovePlain = "host off: removing the served " + Annotation + " annotation before powering on"
	// ReasonHeldOff: rule 8.
	ReasonHeldOff = "host held off until every keyed reboot annotation is removed by its owner"
	// ReasonRebootDone: rule 9, ending a pending reboot.
	ReasonRebootDone = "reboot done: no reboot annotation left, powering on"
	// ReasonPowerOn: rule 9, with no reboot pending.
	ReasonPowerOn = "Spec.Online is true: powering on"
)

// Decision is what the controller should do next, as Decide computes it.
// Apply it in this order, and stop at the first failure:
//
//  1. remove RemoveAnnotations from the object with a patch that fails if
//     the annotations changed meanwhile (a resourceVersion precondition, or
//     a JSON patch that tests each value), so that a keyed annotation added
//     meanwhile is never lost;
//  2. write PendingRebootSince if SetPendingRebootSince, before any power
//     operation, so that a restarted controller knows a reboot is pending;
//  3. power off or on (see Power); on success write LastPoweredOn if
//     SetLastPoweredOn and clear the caller's power failure mark, on
//     failure set it (Input.LastPowerFailed).
//
// Then read the object again and decide again. A Decision never removes
// annotations and powers on in one step: the power on waits for a decision
// made on the object without them.
type Decision struct {
	// SetPendingRebootSince asks to write PendingRebootSince to the status;
	// the zero time means to clear the field.
	SetPendingRebootSince bool
	// PendingRebootSince is the value to write.
	PendingRebootSince time.Time
	// PowerOff asks to switch the host off, in Mode.
	PowerOff bool
	// Mode is how to switch off: Soft is a graceful shutdown first, then a
	// hard one if that is refused or times out.
	Mode Mode
	// ModeSource says why the power off has its Mode.
	ModeSource ModeSource
	// PowerOn asks to switch the host on.
	PowerOn bool
	// SetLastPoweredOn asks to write LastPoweredOn to the status once the
	// power on succeeded.
	SetLastPoweredOn bool
	// LastPoweredOn is the value to write.
	LastPoweredOn time.Time
	// RemoveAnnotations lists the exact annotation keys to remove, sorted.
	// It never holds a keyed annotation, except when deprovisioning.
	RemoveAnnotations []string
	// RebootPending tells whether a reboot is still pending once the
	// decision is applied (pendingRebootSince after lastPoweredOn).
	RebootPending bool
	// HeldOff tells that the host stays off because keyed annotations are
	// present.
	HeldOff bool
	// Reason says which rule decided: one of the Reason constants.
	Reason string
	// Problems lists what was wrong in the input (malformed values,
	// misspelt annotations, a clock behind the status), sorted. They never
	// stop the decision; report them.
	Problems []Problem
}

// Nothing reports whether the decision asks for nothing to be done: no
// status field to write, no power operation, no annotation to remove.
// Problems may still be worth reporting.
func (d Decision) Nothing() bool {
	return !d.SetPendingRebootSince && !d.PowerOff && !d.PowerOn && !d.SetLastPoweredOn && len(d.RemoveAnnotations) == 0
}

// String describes the decision on one line, with times in RFC 3339.
func (d Decision) String() string {
	return d.Format(func(t time.Time) string { return t.Format(time.RFC3339Nano) })
}

// Format describes the decision on one line, formatting times with
// formatTime: the actions (or "nothing to do"), the reason, then the
// problems if any.
func (d Decision) Format(formatTime func(time.Time) string) string {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
	}
	if len(d.RemoveAnnotations) > 0 {
		b.WriteString("remove " + strings.Join(d.RemoveAnnotations, " "))
	}
	if d.SetPendingRebootSince {
		sep()
		if d.PendingRebootSince.IsZero() {
			b.WriteString("clear pendingRebootSince")
		} else {
			b.WriteString("set pendingRebootSince=" + formatTime(d.PendingRebootSince))
		}
	}
	if d.PowerOff {
		sep()
		b.WriteString("power off " + d.Mode.String() + " (" + d.ModeSource.String() + ")")
	}
	if d.PowerOn {
		sep()
		b.WriteString("power on")
	}
	if d.SetLastPoweredOn {
		sep()
		b.WriteString("set lastPoweredOn=" + formatTime(d.LastPoweredOn))
	}
	if b.Len() == 0 {
		b.WriteString("nothing to do")
	}
	b.WriteString(": " + d.Reason)
	for i, p := range d.Problems {
		if i == 0 {
			b.WriteString(" [problems: ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
		if i == len(d.Problems)-1 {
			b.WriteString("]")
		}
	}
	return b.String()
}

// Clock problems.
const (
	problemClockBehindPowerOn = "the clock is behind lastPoweredOn: pendingRebootSince set just after lastPoweredOn instead of to now"
	problemClockBehindPending = "the clock is behind pendingRebootSince: lastPoweredOn set to pendingRebootSince instead of to now"
)

// scan is what Decide gathers from the annotations.
type scan struct {
	plain          bool // the plain annotation is present
	plainEffective bool // ... and counts
	keyed          int  // keyed annotations present, counted or not
	effective      bool // some annotation counts
	hard           bool // some counted annotation asks for hard
}

// Decide decides what to do next with a host, following the reboot
// interface's rules (see the package documentation). It is pure: it reads
// only in, has no clock and does no I/O, and the same input always gives
// the same decision (keys and problems are sorted). It allocates only the
// lists it returns (annotations to remove, problems): nothing for a host
// without reboot annotations, nor for most decisions about one with them.
func Decide(in Input) Decision {
	var d Decision
	var sc scan
	deprov := in.Provisioning == Deprovisioning
	counts := in.Provisioning == Provisioned || in.Force
	for k, v := range in.Annotations {
		if !strings.HasPrefix(k, commonPrefix) {
			continue
		}
		keyed := strings.HasPrefix(k, KeyedAnnotationPrefix)
		if !keyed && k != Annotation {
			if isMisspelt(k) {
				d.Problems = append(d.Problems, Problem{Annotation: k, Message: problemMisspelt})
			}
			continue
		}
		mode, force, problem := ParseValue(v)
		if keyed && len(k) == len(KeyedAnnotationPrefix) {
			problem = joinProblem(problemEmptyKey, problem)
		}
		if problem != "" {
			d.Problems = append(d.Problems, Problem{Annotation: k, Message: problem})
		}
		if deprov {
			d.RemoveAnnotations = append(d.RemoveAnnotations, k)
			continue
		}
		effective := counts || force
		if keyed {
			sc.keyed++
		} else {
			sc.plain = true
			sc.plainEffective = effective
		}
		if effective {
			sc.effective = true
			sc.hard = sc.hard || mode == Hard
		}
	}
	if deprov {
		decideDeprovisioning(&in, &d)
	} else {
		decide(&in, &sc, &d)
	}
	slices.Sort(d.RemoveAnnotations)
	slices.SortFunc(d.Problems, compareProblems)
	return d
}

func decideDeprovisioning(in *Input, d *Decision) {
	if !in.PendingRebootSince.IsZero() {
		d.SetPendingRebootSince = true
	}
	d.Reason = ReasonDeprovisioningIdle
	if d.SetPendingRebootSince || len(d.RemoveAnnotations) > 0 {
		d.Reason = ReasonDeprovisioning
	}
}

func decide(in *Input, sc *scan, d *Decision) {
	pending := in.PendingRebootSince.After(in.LastPoweredOn)
	p := in.Precision
	if in.PoweredOn {
		if sc.effective && !pending {
			t := ceilTime(in.Now, p)
			if !t.After(in.LastPoweredOn) {
				t = ceilTime(in.LastPoweredOn.Add(1), p)
				if behind(in.Now, in.LastPoweredOn, p) {
					d.Problems = append(d.Problems, Problem{Message: problemClockBehindPowerOn})
				}
			}
			d.SetPendingRebootSince, d.PendingRebootSince = true, t
			d.RebootPending = true
			d.Reason = ReasonRebootRequested
			d.powerOff(in, sc)
			return
		}
		d.RebootPending = pending
		switch {
		case pending:
			d.Reason = ReasonRebootPowerOff
			d.powerOff(in, sc)
		case !in.Online:
			d.Reason = ReasonOnlineFalse
			d.powerOff(in, sc)
		case sc.plain || sc.keyed > 0:
			d.Reason = ReasonLeftAlone
		default:
			d.Reason = ReasonOn
		}
		return
	}
	// The host is off.
	d.RebootPending = pending
	switch {
	case !in.Online && pending:
		d.Reason = ReasonPendingOff
	case !in.Online:
		d.Reason = ReasonOff
	case sc.plainEffective:
		d.RemoveAnnotations = append(d.RemoveAnnotations, Annotation)
		d.Reason = ReasonRemovePlain
	case sc.keyed > 0:
		d.HeldOff = true
		d.Reason = ReasonHeldOff
	default:
		t := floorTime(in.Now, p)
		if t.Before(in.PendingRebootSince) {
			t = in.PendingRebootSince
			if behind(in.Now, in.PendingRebootSince, p) {
				d.Problems = append(d.Problems, Problem{Message: problemClockBehindPending})
			}
		}
		d.PowerOn = true
		d.SetLastPoweredOn, d.LastPoweredOn = true, t
		d.RebootPending = false
		d.Reason = ReasonPowerOn
		if pending {
			d.Reason = ReasonRebootDone
		}
	}
}

// powerOff asks for a power off in the mode the requests and the last power
// operation call for.
func (d *Decision) powerOff(in *Input, sc *scan) {
	d.PowerOff = true
	switch {
	case in.LastPowerFailed:
		d.Mode, d.ModeSource = Hard, ModePowerFailed
	case sc.hard:
		d.Mode, d.ModeSource = Hard, ModeRequested
	default:
		d.Mode, d.ModeSource = Soft, ModeDefault
	}
}

// behind reports whether the clock (now) is behind a timestamp of the
// status by more than rounding explains: at precision p, Decide's own
// rounding can put a timestamp up to about 2p ahead of the clock when
// reboots follow each other within a second.
func behind(now, stamp time.Time, p time.Duration) bool {
	return now.Add(2 * max(p, 0)).Before(stamp)
}

// ceilTime rounds t up to a multiple of p (p <= 0: t itself), without its
// monotonic clock reading.
func ceilTime(t time.Time, p time.Duration) time.Time {
	if p <= 0 {
		return t.Round(0)
	}
	f := t.Truncate(p)
	if f.Before(t) {
		f = f.Add(p)
	}
	return f
}

// floorTime rounds t down to a multiple of p (p <= 0: t itself), without its
// monotonic clock reading.
func floorTime(t time.Time, p time.Duration) time.Time {
	if p <= 0 {
		return t.Round(0)
	}
	return t.Truncate(p)
}
