package reinstall

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// PlanInput is what PlanReinstall decides from.
type PlanInput struct {
	// Machine is the machine's record as stored.
	Machine Machine
	// Request is the reinstall request.
	Request Request
	// Image is the catalog's entry for Request.Image, or ImageErr the
	// catalog's error (wrapping ErrUnknownImage when it has no such
	// image).
	Image    Image
	ImageErr error
	// Now is the time of the request; Deadline how long the installer has
	// to report (Status.Deadline = Now + Deadline).
	Now      time.Time
	Deadline time.Duration
}

// Plan is PlanReinstall's decision.
type Plan struct {
	// Machine is the record to store (with the stored Version, for the
	// optimistic update). Unset when Noop.
	Machine Machine
	// Result is the answer to the request.
	Result Result
	// Noop is true when the request repeats a pending one: store nothing,
	// do nothing, answer Result.
	Noop bool
	// Rearm is true when the request re-arms a failed reinstall whose
	// primary disk may already be wiped: the pinned disk is kept, primary
	// disk detection does not run again.
	Rearm bool
}

// PlanReinstall validates a reinstall request against the machine's record
// and returns the record to store. It is pure. The refusals, in the order
// they are checked, each an *Error wrapping the sentinel:
//
//   - the ID is not a valid machine ID, or not the record's:
//     ErrMachineNotFound (field "id");
//   - no allocation: ErrNotAllocated ("allocation");
//   - locked: ErrLocked ("lock");
//   - a reinstall pending: for the same image the request is a no-op
//     (Plan.Noop, the pending reinstall answered), for another image
//     ErrReinstallPending ("image"); a reinstall flag set with no pending
//     record is refused alike;
//   - the image ID malformed, revoked or expired: ErrInvalidImage
//     ("image"); unknown to the catalog: ErrUnknownImage ("image"); any
//     other catalog error is returned as it is;
//   - primary disk detection fails on the machine's inventory (see
//     DetectPrimaryDisk): its error ("primaryDisk" or "inventory...").
//
// A request after a failed reinstall that left the flag set (the primary
// disk may be wiped) re-arms it: the pinned primary disk is kept, detection
// is not run again (the old OS may be gone), and the installer finds the
// disk by serial (see PlanWipe).
//
// The planned record differs from the stored one in Allocation.Image,
// Allocation.Reinstall, BootOrder (PXE) and Reinstall only; anything else
// would be ErrOtherAttributes.
func PlanReinstall(in PlanInput) (Plan, error) {
	m, req := in.Machine, in.Request
	id := req.MachineID
	if !ValidMachineID(id) || id != m.ID {
		return Plan{}, errorf(id, "id", fmt.Errorf("%w: %q", ErrMachineNotFound, id))
	}
	if m.Allocation == nil {
		return Plan{}, errorf(id, "allocation", ErrNotAllocated)
	}
	if m.Lock != nil {
		return Plan{}, errorf(id, "lock", fmt.Errorf("%w: %s", ErrLocked, orNone(m.Lock.Reason)))
	}
	st := m.Reinstall
	if st != nil && st.Phase.Pending() {
		if st.Image == req.Image && m.Allocation.Reinstall {
			return Plan{Noop: true, Result: Result{Machine: id, Status: *st, AlreadyPending: true}}, nil
		}
		return Plan{}, errorf(id, "image", fmt.Errorf("%w: reinstall of image %s is %v", ErrReinstallPending, st.Image, st.Phase))
	}
	rearm := m.Allocation.Reinstall
	if rearm && (st == nil || st.Phase != PhaseFailed || st.PrimaryDisk.IsZero()) {
		return Plan{}, errorf(id, "allocation.reinstall", fmt.Errorf("%w: the reinstall flag is set without a reinstall record", ErrReinstallPending))
	}
	if err := checkImage(id, req.Image, in.Image, in.ImageErr, in.Now); err != nil {
		return Plan{}, err
	}
	next := m.Clone()
	var gen uint64 = 1
	if st != nil {
		gen = st.Generation + 1
	}
	s := &Status{
		Phase: PhasePending, Generation: gen, Image: req.Image, PreviousImage: m.Allocation.Image, DiskIntact: true,
		RequestedAt: in.Now, UpdatedAt: in.Now, Deadline: in.Now.Add(in.Deadline),
	}
	if rearm {
		s.PreviousImage, s.PrimaryDisk, s.DiskIntact = st.PreviousImage, st.PrimaryDisk, st.DiskIntact
	} else {
		det, err := DetectPrimaryDisk(m.Inventory)
		if err != nil {
			return Plan{}, withMachine(err, id)
		}
		s.PrimaryDisk = det.Disk
	}
	next.Allocation.Image = req.Image
	next.Allocation.Reinstall = true
	next.BootOrder = BootPXE
	next.Reinstall = s
	if err := onlyReinstallChanged(m, next); err != nil {
		return Plan{}, err
	}
	return Plan{Machine: next, Result: Result{Machine: id, Status: *s}, Rearm: rearm}, nil
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

func checkImage(id, image string, img Image, imgErr error, now time.Time) error {
	switch {
	case !ValidImageID(image):
		return errorf(id, "image", fmt.Errorf("%w: %q is not an image ID", ErrInvalidImage, image))
	case errors.Is(imgErr, ErrUnknownImage):
		return errorf(id, "image", fmt.Errorf("%w: %s", ErrUnknownImage, image))
	case imgErr != nil:
		return errorf(id, "image", imgErr)
	case img.ID != image:
		return errorf(id, "image", fmt.Errorf("%w: %s (the catalog answered %q)", ErrUnknownImage, image, img.ID))
	case img.Revoked:
		return errorf(id, "image", fmt.Errorf("%w: %s is revoked", ErrInvalidImage, image))
	case !img.ExpiresAt.IsZero() && !now.Before(img.ExpiresAt):
		return errorf(id, "image", fmt.Errorf("%w: %s expired at %s", ErrInvalidImage, image, img.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return nil
}

// onlyReinstallChanged checks that next differs from m in the fields a
// reinstall may change only.
func onlyReinstallChanged(m, next Machine) error {
	a, b := m.Clone(), next.Clone()
	for _, x := range []*Machine{&a, &b} {
		x.BootOrder, x.Reinstall = BootUnset, nil
		if x.Allocation != nil {
			x.Allocation.Image, x.Allocation.Reinstall = "", false
		}
	}
	if !reflect.DeepEqual(a, b) {
		return errorf(m.ID, "machine", fmt.Errorf("%w: the plan would change more than the image", ErrOtherAttributes))
	}
	return nil
}

// claim decides the answer to the installer's lookup at PXE boot; changed
// is true when next must be stored.
func claim(m Machine, now time.Time, maxAttempts int, deadline time.Duration) (next Machine, o Order, changed bool) {
	o = Order{Machine: m.ID}
	switch {
	case m.Allocation == nil:
		o.Kind = OrderNotAllocated
		return m, o, false
	case !m.Allocation.Reinstall:
		o.Kind = OrderBootLocal
		return m, o, false
	}
	st := m.Reinstall
	if st == nil || !st.Phase.Pending() {
		o.Kind = OrderHalt
		o.Reason = "the reinstall flag is set but no reinstall is pending"
		if st != nil && st.Reason != "" {
			o.Reason = "the reinstall failed: " + st.Reason
		}
		return m, o, false
	}
	next = m.Clone()
	ns := next.Reinstall
	ns.UpdatedAt = now
	if ns.Attempts >= maxAttempts {
		ns.Phase = PhaseFailed
		ns.Reason = fmt.Sprintf("%d installer attempts without a report", ns.Attempts)
		ns.DiskIntact = false
		o.Kind, o.Reason = OrderHalt, "the reinstall failed: "+ns.Reason
		return next, o, true
	}
	ns.Attempts++
	ns.Phase = PhaseInstalling
	ns.AttemptIntact = ns.DiskIntact
	ns.DiskIntact = false // this attempt may wipe
	ns.Deadline = now.Add(deadline)
	o.Kind, o.Generation, o.Image, o.PrimaryDisk, o.Attempt, o.DiskIntact = OrderReinstall, ns.Generation, ns.Image, ns.PrimaryDisk, ns.Attempts, ns.AttemptIntact
	return next, o, true
}

// applyReport applies an installer report; changed is false for a
// duplicate of a report already applied.
func applyReport(m Machine, r Report, now time.Time) (next Machine, changed bool, err error) {
	st := m.Reinstall
	if m.Allocation == nil || st == nil || st.Attempts == 0 || r.Generation != st.Generation || r.Attempt != st.Attempts {
		return m, false, errorf(m.ID, "report.attempt", fmt.Errorf("%w: generation %d attempt %d is not the current one", ErrStaleReport, r.Generation, r.Attempt))
	}
	switch st.Phase {
	case PhaseInstalling:
	case PhaseSucceeded:
		if r.Outcome == OutcomeSucceeded {
			return m, false, nil
		}
		return m, false, errorf(m.ID, "report.outcome", fmt.Errorf("%w: attempt %d already reported success", ErrStaleReport, r.Attempt))
	case PhaseFailed:
		if !st.Expired {
			if r.Outcome == OutcomeFailed {
				return m, false, nil
			}
			return m, false, errorf(m.ID, "report.outcome", fmt.Errorf("%w: attempt %d already reported failure", ErrStaleReport, r.Attempt))
		}
		// A late report after Expire: it tells what happened, apply it.
	default:
		return m, false, errorf(m.ID, "report.attempt", fmt.Errorf("%w: no attempt is running", ErrStaleReport))
	}
	next = m.Clone()
	ns := next.Reinstall
	ns.UpdatedAt, ns.Expired = now, false
	switch r.Outcome {
	case OutcomeSucceeded:
		ns.Phase, ns.Reason, ns.DiskIntact = PhaseSucceeded, "", true
		next.Allocation.Reinstall = false
		next.Allocation.Image = ns.Image
		next.BootOrder = BootDisk
	case OutcomeFailed:
		ns.Phase, ns.Reason = PhaseFailed, orNone(r.Reason)
		if !r.Wiped && ns.AttemptIntact {
			// The old OS is intact and the installer boots it again.
			ns.DiskIntact = true
			next.Allocation.Reinstall = false
			next.Allocation.Image = ns.PreviousImage
			next.BootOrder = BootDisk
		} else {
			// The primary disk may be wiped: stay in reinstall.
			ns.DiskIntact = false
		}
	default:
		return m, false, errorf(m.ID, "report.outcome", fmt.Errorf("%w: outcome %v", ErrBadRequest, r.Outcome))
	}
	return next, true, nil
}

// expire marks a pending reinstall failed when its deadline has passed.
func expire(m Machine, now time.Time) (next Machine, changed bool) {
	st := m.Reinstall
	if st == nil || !st.Phase.Pending() || now.Before(st.Deadline) {
		return m, false
	}
	next = m.Clone()
	ns := next.Reinstall
	ns.UpdatedAt, ns.Expired = now, true
	if ns.Phase == PhasePending && ns.DiskIntact && next.Allocation != nil {
		// No attempt ever started: nothing was touched.
		ns.Phase, ns.Reason = PhaseFailed, "the installer did not start before the deadline"
		next.Allocation.Reinstall = false
		next.Allocation.Image = ns.PreviousImage
		next.BootOrder = BootDisk
		return next, true
	}
	ns.Phase, ns.Reason = PhaseFailed, "no installer report before the deadline"
	ns.DiskIntact = false
	return next, true
}
