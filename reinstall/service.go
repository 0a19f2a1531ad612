package reinstall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxAttempts     = 3
	DefaultDeadline        = 2 * time.Hour
	DefaultRollbackTimeout = time.Minute
)

// casTries bounds the optimistic-concurrency retries of one operation.
const casTries = 8

// Ports are the host application's implementations a Service works
// through. All are required.
type Ports struct {
	// Store holds the machine records.
	Store MachineStore
	// Images is the image catalog.
	Images Images
	// BootOrder sets a machine's boot order to PXE.
	BootOrder BootOrder
	// SwitchPorts move a machine to the PXE network.
	SwitchPorts SwitchPorts
	// Power reboots a machine, verified.
	Power Power
}

// Options tune a Service. The zero value gives the defaults.
type Options struct {
	// MaxAttempts bounds the installer attempts of one reinstall request
	// (default 3): the lookup that would start one more marks the
	// reinstall failed and halts the installer instead, so a machine that
	// keeps rebooting mid-install never reinstalls forever.
	MaxAttempts int
	// Deadline is how long after the request, and after each attempt's
	// start, a report is expected (default 2 h); see Expire.
	Deadline time.Duration
	// RollbackTimeout bounds the rollback after a failed start, which runs
	// even when the request's context is done (default 1 min).
	RollbackTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives the service's records; nil discards them.
	Logger *slog.Logger
}

// Service is the API side of reinstalls: it accepts requests (Reinstall),
// answers the installer's lookup at PXE boot (Lookup) and its reports
// (Report), and fails reinstalls that never report (Expire). It keeps no
// state of its own: everything is in the MachineStore, so any number of
// Services may share a store. It is safe for concurrent use.
type Service struct {
	p        Ports
	max      int
	deadline time.Duration
	rollback time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// NewService returns a service over p; it fails when a port is missing.
func NewService(p Ports, o *Options) (*Service, error) {
	switch {
	case p.Store == nil:
		return nil, errors.New("reinstall: NewService: no MachineStore")
	case p.Images == nil:
		return nil, errors.New("reinstall: NewService: no Images")
	case p.BootOrder == nil:
		return nil, errors.New("reinstall: NewService: no BootOrder")
	case p.SwitchPorts == nil:
		return nil, errors.New("reinstall: NewService: no SwitchPorts")
	case p.Power == nil:
		return nil, errors.New("reinstall: NewService: no Power")
	}
	var oo Options
	if o != nil {
		oo = *o
	}
	s := &Service{p: p, max: oo.MaxAttempts, deadline: oo.Deadline, rollback: oo.RollbackTimeout, now: oo.Now, log: oo.Logger}
	if s.max <= 0 {
		s.max = DefaultMaxAttempts
	}
	if s.deadline <= 0 {
		s.deadline = DefaultDeadline
	}
	if s.rollback <= 0 {
		s.rollback = DefaultRollbackTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Reinstall accepts or refuses a reinstall request (see PlanReinstall for
// the refusals) and starts it:
//
//  1. store the planned record: the allocation's Reinstall flag and image,
//     boot order PXE, the pinned primary disk, phase pending;
//  2. set the machine's boot order to PXE (BootOrder);
//  3. move its switch ports to the PXE network (SwitchPorts);
//  4. reboot it, verified (Power).
//
// When step 2, 3 or 4 fails, the request is rolled back: the record gets its
// image and flag back and the reinstall is marked failed (the disks were
// not touched); the boot order and the tenant network are restored; the
// error wraps ErrPlanFailed and names the step as its field. If the
// installer has already started an attempt by then (a reboot whose outcome
// was unknown did happen), the reinstall goes on and Reinstall succeeds.
//
// A request that repeats a pending one returns the pending reinstall
// (Result.AlreadyPending) and does nothing.
func (s *Service) Reinstall(ctx context.Context, req Request) (Result, error) {
	id := req.MachineID
	if !ValidMachineID(id) {
		return Result{}, errorf(id, "id", fmt.Errorf("%w: %q is not a machine ID", ErrMachineNotFound, id))
	}
	for try := 1; ; try++ {
		m, err := s.p.Store.Get(ctx, id)
		if err != nil {
			return Result{}, withMachine(err, id)
		}
		in := PlanInput{Machine: m, Request: req, Now: s.now(), Deadline: s.deadline}
		if ValidImageID(req.Image) {
			in.Image, in.ImageErr = s.p.Images.Image(ctx, req.Image)
		}
		plan, err := PlanReinstall(in)
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelInfo, "reinstall refused", slog.String("machine", id), slog.String("image", req.Image), slog.String("error", err.Error()))
			return Result{}, err
		}
		if plan.Noop {
			return plan.Result, nil
		}
		stored, err := s.p.Store.Update(ctx, plan.Machine)
		if errors.Is(err, ErrConflict) && try < casTries {
			continue
		}
		if err != nil {
			return Result{}, withMachine(err, id)
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "reinstall accepted", slog.String("machine", id), slog.String("image", req.Image),
			slog.String("primaryDisk", stored.Reinstall.PrimaryDisk.String()), slog.Uint64("generation", stored.Reinstall.Generation))
		if err := s.start(ctx, id); err != nil {
			return s.undo(ctx, m, stored, plan.Rearm, err)
		}
		return Result{Machine: id, Status: *stored.Reinstall}, nil
	}
}

func (s *Service) start(ctx context.Context, id string) error {
	if err := s.p.BootOrder.SetBootOrder(ctx, id, BootPXE); err != nil {
		return errorf(id, "bootOrder", fmt.Errorf("%w: setting the boot order to pxe: %w", ErrPlanFailed, err))
	}
	if err := s.p.SwitchPorts.SetNetwork(ctx, id, NetworkPXE); err != nil {
		return errorf(id, "switchPorts", fmt.Errorf("%w: moving the switch ports to the pxe network: %w", ErrPlanFailed, err))
	}
	if err := s.p.Power.Reboot(ctx, id); err != nil {
		return errorf(id, "power", fmt.Errorf("%w: verified reboot: %w", ErrPlanFailed, err))
	}
	return nil
}

// undo rolls a reinstall back after its start failed with cause.
func (s *Service) undo(ctx context.Context, orig, planned Machine, rearm bool, cause error) (Result, error) {
	id := orig.ID
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.rollback)
	defer cancel()
	gen := planned.Reinstall.Generation
	var rolled Machine
	for try := 1; ; try++ {
		cur, err := s.p.Store.Get(rctx, id)
		if err != nil {
			return Result{}, errors.Join(cause, fmt.Errorf("rollback: %w", err))
		}
		st := cur.Reinstall
		if st == nil || st.Generation != gen || cur.Allocation == nil {
			return Result{}, errors.Join(cause, errorf(id, "reinstall", fmt.Errorf("%w: rollback: the record changed meanwhile", ErrConflict)))
		}
		if st.Phase != PhasePending {
			// The installer started an attempt: the machine did reboot.
			s.log.LogAttrs(ctx, slog.LevelWarn, "reinstall start failed, but the installer already runs", slog.String("machine", id), slog.String("error", cause.Error()))
			return Result{Machine: id, Status: *st}, nil
		}
		next := cur.Clone()
		next.Allocation.Image = orig.Allocation.Image
		next.Allocation.Reinstall = orig.Allocation.Reinstall
		next.BootOrder = orig.BootOrder
		ns := next.Reinstall
		ns.Phase, ns.UpdatedAt, ns.Reason = PhaseFailed, s.now(), "not started: "+cause.Error()
		rolled, err = s.p.Store.Update(rctx, next)
		if errors.Is(err, ErrConflict) && try < casTries {
			continue
		}
		if err != nil {
			return Result{}, errors.Join(cause, fmt.Errorf("rollback: %w", err))
		}
		break
	}
	errs := []error{cause}
	if !rearm {
		bo := orig.BootOrder
		if bo != BootPXE {
			bo = BootDisk
		}
		if err := s.p.BootOrder.SetBootOrder(rctx, id, bo); err != nil {
			errs = append(errs, errorf(id, "bootOrder", fmt.Errorf("rollback: setting the boot order to %v: %w", bo, err)))
		}
		if err := s.p.SwitchPorts.SetNetwork(rctx, id, NetworkTenant); err != nil {
			errs = append(errs, errorf(id, "switchPorts", fmt.Errorf("rollback: moving the switch ports to the tenant network: %w", err)))
		}
	}
	err := errors.Join(errs...)
	if len(errs) == 1 {
		err = cause
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "reinstall not started, rolled back", slog.String("machine", id), slog.String("error", err.Error()))
	return Result{Machine: id, Status: *rolled.Reinstall}, err
}

// Lookup is the installer's first call at PXE boot: what to do with the
// machine (see OrderKind). For a pending reinstall it starts an attempt,
// recorded in the store before it is answered: the attempt counter goes
// up, the phase becomes installing, the deadline moves, and the primary
// disk is no longer taken as intact. When MaxAttempts attempts were started
// already, the reinstall is marked failed and the order is OrderHalt.
func (s *Service) Lookup(ctx context.Context, machineID string) (Order, error) {
	for try := 1; ; try++ {
		m, err := s.p.Store.Get(ctx, machineID)
		if err != nil {
			return Order{}, withMachine(err, machineID)
		}
		next, o, changed := claim(m, s.now(), s.max, s.deadline)
		if !changed {
			return o, nil
		}
		_, err = s.p.Store.Update(ctx, next)
		if errors.Is(err, ErrConflict) && try < casTries {
			continue
		}
		if err != nil {
			return Order{}, withMachine(err, machineID)
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "installer lookup", slog.String("machine", machineID), slog.String("order", o.Kind.String()),
			slog.Int("attempt", o.Attempt), slog.String("reason", o.Reason))
		return o, nil
	}
}

// Report applies the installer's report of an attempt:
//
//   - success: the Reinstall flag is reset (no endless reinstall loop),
//     the phase is succeeded, the boot order recorded as disk;
//   - failure of an attempt that started with the primary disk intact and
//     did not start wiping it: the flag is reset, the previous image
//     restored (the installer boots the old OS again), the phase failed;
//   - any other failure: the phase is failed and the flag stays set, so
//     that the machine stays in reinstall: the installer halts at its next
//     boot and wipes nothing, and no later boot mistakes the machine for a
//     fresh one, until a new request re-arms the reinstall.
//
// A report repeated after it was applied is accepted again (the installer
// retries reports whose answer it lost); a report of another generation or
// attempt is refused with ErrStaleReport. A late report of an attempt that
// Expire failed is applied.
func (s *Service) Report(ctx context.Context, r Report) error {
	if !ValidMachineID(r.Machine) {
		return errorf(r.Machine, "report.machine", fmt.Errorf("%w: %q is not a machine ID", ErrBadRequest, r.Machine))
	}
	if r.Outcome != OutcomeSucceeded && r.Outcome != OutcomeFailed {
		return errorf(r.Machine, "report.outcome", fmt.Errorf("%w: outcome %v", ErrBadRequest, r.Outcome))
	}
	for try := 1; ; try++ {
		m, err := s.p.Store.Get(ctx, r.Machine)
		if err != nil {
			return withMachine(err, r.Machine)
		}
		next, changed, err := applyReport(m, r, s.now())
		if err != nil || !changed {
			return err
		}
		_, err = s.p.Store.Update(ctx, next)
		if errors.Is(err, ErrConflict) && try < casTries {
			continue
		}
		if err != nil {
			return withMachine(err, r.Machine)
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "installer report", slog.String("machine", r.Machine), slog.String("outcome", r.Outcome.String()),
			slog.Int("attempt", r.Attempt), slog.Bool("wiped", r.Wiped), slog.Bool("reinstallFlag", next.Allocation.Reinstall), slog.String("reason", r.Reason))
		return nil
	}
}

// Expire marks failed every pending reinstall whose deadline has passed,
// and returns the machines' IDs. A reinstall whose installer never
// started gets its flag reset and its image restored, and the machine its
// boot order (disk) and tenant network back; one that started an attempt
// keeps its flag (the primary disk may be wiped) and stays in reinstall. The host application calls it periodically; a lost report
// thus always ends with the machine reported failed.
func (s *Service) Expire(ctx context.Context) ([]string, error) {
	ms, err := s.p.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, m := range ms {
		id := m.ID
		for try := 1; ; try++ {
			next, changed := expire(m, s.now())
			if !changed {
				break
			}
			_, err := s.p.Store.Update(ctx, next)
			if err == nil {
				out = append(out, id)
				s.log.LogAttrs(ctx, slog.LevelWarn, "reinstall expired", slog.String("machine", id), slog.String("reason", next.Reinstall.Reason))
				if m.Reinstalling() && !next.Reinstalling() {
					// Abandoned before the installer started: back to the
					// old OS's boot order and network.
					if err := s.p.BootOrder.SetBootOrder(ctx, id, BootDisk); err != nil {
						errs = append(errs, errorf(id, "bootOrder", fmt.Errorf("setting the boot order to disk: %w", err)))
					}
					if err := s.p.SwitchPorts.SetNetwork(ctx, id, NetworkTenant); err != nil {
						errs = append(errs, errorf(id, "switchPorts", fmt.Errorf("moving the switch ports to the tenant network: %w", err)))
					}
				}
				break
			}
			if !errors.Is(err, ErrConflict) || try >= casTries {
				errs = append(errs, withMachine(err, m.ID))
				break
			}
			if m, err = s.p.Store.Get(ctx, id); err != nil {
				errs = append(errs, withMachine(err, id))
				break
			}
		}
	}
	return out, errors.Join(errs...)
}
