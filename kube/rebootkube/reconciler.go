package rebootkube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/reboot"
)

// Reconciler carries out the reboot interface on hosts: it reads a host
// from Hosts and its power from its fence method, decides with
// reboot.Decide and applies the decision (see the package documentation
// for the order and the conditions of the writes). It is safe for
// concurrent use on different hosts; one host must be reconciled by one
// goroutine at a time.
type Reconciler struct {
	// Hosts is where the hosts are: a *Hosts, a *Typed or the user's own
	// Store.
	Hosts Store
	// Method returns the fence method that powers a host, so that any
	// driver can reboot it. The Reconciler uses the method's Device and
	// Options, never changes the method and never closes its device.
	Method func(ctx context.Context, h *Host) (*fence.Method, error)
	// SoftTimeout bounds a soft power off: the host is switched off hard
	// when it is not off this long after the graceful off. <= 0 keeps the
	// method's Options.SoftTimeout (by default its PowerTimeout).
	SoftTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the decisions, their problems and the power
	// operations; nil discards them.
	Logger *slog.Logger
}

var discard = slog.New(slog.DiscardHandler)

// Reconcile reconciles the host namespace/name once and returns the
// decision made (the zero Decision when the host could not be read or its
// method not found). Call it again while the decision is not Nothing and
// after an error; an error wrapping ErrConflict asks for that at once. An
// error of the Store is returned as it is (apierrors.IsNotFound tells a
// host that is gone); the others are *Error values.
func (r *Reconciler) Reconcile(ctx context.Context, namespace, name string) (reboot.Decision, error) {
	log := r.Logger
	if log == nil {
		log = discard
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if r.Hosts == nil || r.Method == nil {
		return reboot.Decision{}, &Error{Namespace: namespace, Name: name, Op: OpGet, Err: errors.New("the Reconciler needs Hosts and Method")}
	}
	h, err := r.Hosts.Get(ctx, namespace, name)
	if err != nil {
		return reboot.Decision{}, err
	}
	fail := func(op, field string, err error) error {
		return &Error{Namespace: namespace, Name: name, Op: op, Field: field, Err: err}
	}
	m, err := r.Method(ctx, h)
	if err == nil && m == nil {
		err = errors.New("no fence method")
	}
	if err != nil {
		return reboot.Decision{}, fail(OpMethod, "", err)
	}

	// The device is the truth of the power state; one that cannot be read
	// counts as on (see the package documentation).
	state, readErr := readPower(ctx, m)
	in := h.Input(now())
	in.PoweredOn = state != fence.StateOff
	d := reboot.Decide(in)
	attrs := []any{slog.String("namespace", namespace), slog.String("name", name)}
	if readErr != nil {
		log.Warn("reboot: power state unreadable, taken as on", append(attrs, slog.String("error", readErr.Error()))...)
	}
	for _, p := range d.Problems {
		log.Warn("reboot: problem", append(attrs, slog.String("problem", p.String()))...)
	}
	if d.Nothing() {
		log.Debug("reboot: decision", append(attrs, slog.String("decision", d.String()))...)
	} else {
		log.Info("reboot: decision", append(attrs, slog.String("decision", d.String()))...)
	}

	// 1. Annotations, each tested then removed.
	if len(d.RemoveAnnotations) > 0 {
		if h, err = r.Hosts.RemoveAnnotations(ctx, h, d.RemoveAnnotations); err != nil {
			return d, err
		}
	}
	// 2. pendingRebootSince, on the version decided on.
	if d.SetPendingRebootSince {
		t := d.PendingRebootSince
		if h, err = r.Hosts.WriteStatus(ctx, h, StatusUpdate{PendingRebootSince: &t}, true); err != nil {
			return d, err
		}
	}
	if !d.PowerOff && !d.PowerOn {
		if readErr != nil {
			return d, fail(OpPower, "", readErr)
		}
		// Record the device's state when the status says otherwise (a
		// Store whose mapping has no record writes nothing).
		on := state == fence.StateOn
		if h.PoweredOnRecorded && h.PoweredOn == on {
			return d, nil
		}
		_, err = r.writeFacts(ctx, h, StatusUpdate{PoweredOn: &on})
		return d, err
	}
	// A host that may not be powered off is not: the off its reboot
	// annotations ask for is refused, every time (metal3's operator would
	// reboot it instead; a reboot is not an off that can be held).
	if d.PowerOff && h.DisablePowerOff {
		log.Warn("reboot: power off refused", append(attrs, slog.String("reason", ErrPowerOffDisabled.Error()))...)
		return d, fail(OpPower, "spec.disablePowerOff", ErrPowerOffDisabled)
	}
	// 3. Before a power on, the object must still be the one decided on.
	if d.PowerOn {
		cur, err := r.Hosts.Get(ctx, namespace, name)
		if err != nil {
			return d, err
		}
		if cur.ResourceVersion != h.ResourceVersion {
			return d, fail(OpCheck, "metadata.resourceVersion",
				conflict(fmt.Errorf("resourceVersion %s, decided on %s: not powering on", cur.ResourceVersion, h.ResourceVersion)))
		}
	}
	// 4. Power, verified.
	res, powerErr := reboot.Power(ctx, m, d, r.SoftTimeout)
	// 5. Record what the power operation established.
	var u StatusUpdate
	if powerErr != nil {
		failed := true
		u.PowerFailed, u.PowerError = &failed, powerErr.Error()
		log.Error("reboot: power operation failed", append(attrs, slog.String("error", powerErr.Error()))...)
	} else {
		on := d.PowerOn
		u.PoweredOn = &on
		if h.LastPowerFailed {
			failed := false
			u.PowerFailed = &failed
		}
		if d.SetLastPoweredOn {
			t := d.LastPoweredOn
			u.LastPoweredOn = &t
		}
		if res != nil {
			log.Info("reboot: power verified", append(attrs, slog.String("action", res.Action.String()),
				slog.String("state", res.State.String()), slog.Int("attempts", len(res.Attempts)),
				slog.Duration("duration", res.Duration))...)
		}
	}
	_, werr := r.writeFacts(ctx, h, u)
	if powerErr != nil {
		return d, errors.Join(fail(OpPower, "", powerErr), werr)
	}
	return d, werr
}

// writeFacts writes what the device did, with no precondition, retrying
// what may pass on a second try.
func (r *Reconciler) writeFacts(ctx context.Context, h *Host, u StatusUpdate) (*Host, error) {
	var nh *Host
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return retriable(ctx, err) }, func() error {
		var err error
		nh, err = r.Hosts.WriteStatus(ctx, h, u, false)
		return err
	})
	return nh, err
}

// retriable tells whether a failed write may pass on a second try.
func retriable(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil, errors.Is(err, errNotStored),
		apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err),
		apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
		return false
	}
	var e *Error
	if errors.As(err, &e) && e.Op == OpRead {
		return false
	}
	return true
}

// readPower reads the host's power from its device, with the method's
// options, whatever action the method is bound to.
func readPower(ctx context.Context, m *fence.Method) (fence.State, error) {
	mm := *m
	mm.Action = fence.ActionNone
	res, err := fence.Do(ctx, &mm, fence.ActionStatus)
	if err != nil {
		return fence.StateUnknown, err
	}
	return res.State, nil
}
