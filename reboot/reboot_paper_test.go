package reboot

// One test per sentence of the "Proposal" section of the reboot-interface
// design, in the order of the design. Each test's comment quotes the sentence
// it checks.

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// base is a provisioned host, on and online, booted at t0 (lastPoweredOn),
// with no reboot pending, at t0+100s.
func base() Input {
	return Input{PoweredOn: true, Online: true, Provisioning: Provisioned, LastPoweredOn: t0, Now: at(100)}
}

func with(in Input, f func(*Input)) Input { f(&in); return in }

// "A new date-time field, lastPoweredOn, will be added to the provisioning
// section of the BareMetalHost status."
func TestLastPoweredOnIsAStatusField(t *testing.T) {
	// Only a power on writes it; every other decision leaves it alone.
	for _, in := range []Input{
		base(),
		with(base(), func(in *Input) { in.Annotations = ann(Annotation, "") }),
		with(base(), func(in *Input) { in.Online = false }),
		with(base(), func(in *Input) { in.PoweredOn, in.Online = false, false }),
		with(base(), func(in *Input) { in.PoweredOn, in.Annotations = false, ann(KeyedAnnotation("a"), "") }),
		with(base(), func(in *Input) { in.PoweredOn, in.Annotations = false, ann(Annotation, "") }),
		with(base(), func(in *Input) { in.Provisioning, in.PoweredOn = Deprovisioning, false }),
	} {
		d := Decide(in)
		assert.False(t, d.SetLastPoweredOn, "%s", d)
		assert.False(t, d.PowerOn, "%s", d)
	}
	d := Decide(with(base(), func(in *Input) { in.PoweredOn = false }))
	assert.True(t, d.PowerOn)
	assert.True(t, d.SetLastPoweredOn)
	assert.Equal(t, at(100), d.LastPoweredOn)
}

// "This records a time after which the Host was last booted using the
// current image."
func TestLastPoweredOnRecordsATimeAfterWhichTheHostWasBooted(t *testing.T) {
	// The host boots after the decision is applied, so lastPoweredOn is at
	// most the decision's time: at precision p it is rounded down.
	for _, p := range []time.Duration{0, time.Millisecond, time.Second} {
		now := at(100.7)
		d := Decide(with(base(), func(in *Input) { in.PoweredOn, in.Now, in.Precision = false, now, p }))
		require.True(t, d.SetLastPoweredOn)
		assert.False(t, d.LastPoweredOn.After(now), "precision %v: %v after %v", p, d.LastPoweredOn, now)
		assert.Less(t, now.Sub(d.LastPoweredOn), max(p, 1), "precision %v", p)
		if p > 0 {
			assert.Equal(t, d.LastPoweredOn, d.LastPoweredOn.Truncate(p))
		}
	}
	// A monotonic clock reading is not carried into the status.
	d := Decide(with(base(), func(in *Input) { in.PoweredOn, in.Now = false, time.Now() }))
	assert.Equal(t, d.LastPoweredOn.String(), d.LastPoweredOn.Round(0).String())
}

// "Processes running prior to this time may be assumed to have been
// stopped."
func TestProcessesBeforeLastPoweredOnAreStopped(t *testing.T) {
	// The power on that ends a reboot writes a lastPoweredOn that is not
	// before pendingRebootSince: the reboot is over, and nothing powers the
	// host off again.
	for _, p := range []time.Duration{0, time.Second} {
		h := newHost()
		h.precision = p
		h.ann[Annotation] = ""
		d := h.step()
		require.True(t, d.PowerOff)
		h.now = h.now.Add(300 * time.Millisecond) // the whole reboot within one second
		h.settle()
		require.True(t, h.on)
		assert.False(t, h.last.Before(h.pending), "precision %v: lastPoweredOn %v before pendingRebootSince %v", p, h.last, h.pending)
		d = Decide(h.input())
		assert.True(t, d.Nothing(), "%s", d)
		assert.False(t, d.RebootPending)
	}
}

// "A new date-time field, pendingRebootSince, will be added to the
// provisioning section of the BareMetalHost status."
func TestPendingRebootSinceIsAStatusField(t *testing.T) {
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, "") }))
	assert.True(t, d.SetPendingRebootSince)
	assert.Equal(t, at(100), d.PendingRebootSince)
	assert.True(t, d.RebootPending)
	// Nothing else writes it but deprovisioning, which clears it.
	d = Decide(with(base(), func(in *Input) { in.Online = false }))
	assert.False(t, d.SetPendingRebootSince)
	d = Decide(with(base(), func(in *Input) { in.Provisioning, in.PendingRebootSince = Deprovisioning, at(50) }))
	assert.True(t, d.SetPendingRebootSince)
	assert.True(t, d.PendingRebootSince.IsZero())
}

// "This records a time before which the Host was last requested to reboot
// (because we cannot trust any value from the user, who even if well
// intentioned, may have created the timestamp on a machine that was not
// synchronised with the cluster or has a different timezone)."
func TestPendingRebootSinceIsTheControllersTime(t *testing.T) {
	for _, v := range []string{
		`{"mode":"soft","since":"1999-01-01T00:00:00Z"}`,
		`{"pendingRebootSince":"2099-01-01T00:00:00+05:00"}`,
		`2099-01-01T00:00:00Z`,
	} {
		d := Decide(with(base(), func(in *Input) { in.Annotations = ann(KeyedAnnotation("x"), v) }))
		require.True(t, d.SetPendingRebootSince, v)
		assert.Equal(t, at(100), d.PendingRebootSince, v)
	}
	// At a precision, it is rounded up: still a time before which the
	// request was made.
	now := at(100.2)
	d := Decide(with(base(), func(in *Input) {
		in.Annotations, in.Now, in.Precision = ann(Annotation, ""), now, time.Second
	}))
	assert.Equal(t, at(101), d.PendingRebootSince)
	assert.False(t, d.PendingRebootSince.Before(now))
}

// "Since the user interface requirements are still unclear, we will follow
// standard practices of using an annotation to trigger reboots."
func TestAnnotationTriggersReboots(t *testing.T) {
	// No reboot annotation, no reboot, whatever else the object carries.
	for _, a := range []map[string]string{
		nil,
		{},
		{"kubectl.kubernetes.io/last-applied-configuration": `{"mode":"hard"}`},
		{"reboot.metal3.iox": "", "xreboot.metal3.io": "", "reboot.metal3.io.example.com/a": "", "Reboot.metal3.io": ""},
		{"inspect.metal3.io": "", "baremetalhost.metal3.io/paused": ""},
	} {
		d := Decide(with(base(), func(in *Input) { in.Annotations = a }))
		assert.True(t, d.Nothing(), "%v: %s", a, d)
		assert.Equal(t, ReasonOn, d.Reason)
	}
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, "") }))
	assert.True(t, d.PowerOff)
	assert.Equal(t, ReasonRebootRequested, d.Reason)
}

// "The basic annotation form (reboot.metal3.io) triggers the controller to
// power cycle the Host."
func TestPlainAnnotationPowerCyclesTheHost(t *testing.T) {
	h := newHost()
	var power []string
	h.power = func(d Decision) (bool, error) {
		power = append(power, map[bool]string{true: "on", false: "off"}[d.PowerOn])
		return d.PowerOn, nil
	}
	h.ann[Annotation] = ""
	h.settle()
	assert.Equal(t, []string{"off", "on"}, power)
	assert.True(t, h.on)
}

// "This form has set-and-forget semantics and the controller removes the
// annotation once it restores power to the Host."
func TestPlainAnnotationIsSetAndForget(t *testing.T) {
	h := newHost()
	h.ann[Annotation] = `{"mode":"hard"}`
	ds := h.settle()
	// The client never acts again: the controller removed the annotation,
	// with the host off, in the step just before restoring power.
	assert.Empty(t, h.ann)
	require.Len(t, ds, 4)
	assert.True(t, ds[0].PowerOff)
	assert.Equal(t, []string{Annotation}, ds[1].RemoveAnnotations)
	assert.False(t, ds[1].PowerOn, "removal and power on are separate steps")
	assert.True(t, ds[2].PowerOn)
	assert.True(t, ds[3].Nothing())
}

// "An advanced form (reboot.metal3.io/{key}) instructs the controller hold
// the Host in a PoweredOff state so that the caller can perform any required
// actions while the node is in a known safe state."
func TestKeyedAnnotationHoldsTheHostOff(t *testing.T) {
	h := newHost()
	h.ann[KeyedAnnotation("remediation")] = "uid-1"
	d := h.step()
	require.True(t, d.PowerOff)
	for i := range 50 {
		h.now = h.now.Add(time.Minute)
		d = h.step()
		assert.False(t, h.on)
		assert.True(t, d.HeldOff, "step %d: %s", i, d)
		assert.True(t, d.Nothing(), "step %d: %s", i, d)
		assert.Equal(t, ReasonHeldOff, d.Reason)
	}
	assert.Contains(t, h.ann, KeyedAnnotation("remediation"))
}

// "Callers indicate to the controller that they are ready to continue by
// removing the annotation with their unique {key} suffix."
func TestRemovingTheKeyedAnnotationLetsTheHostContinue(t *testing.T) {
	h := newHost()
	k := KeyedAnnotation("remediation")
	h.ann[k] = ""
	for _, d := range h.settle() {
		assert.NotContains(t, d.RemoveAnnotations, k, "the controller never removes a keyed annotation")
	}
	require.False(t, h.on)
	delete(h.ann, k)
	d := h.step()
	assert.True(t, d.PowerOn)
	assert.Equal(t, ReasonRebootDone, d.Reason)
	assert.True(t, h.on)
}

// "In the case of multiple clients, the controller will wait for all
// annotations of the form reboot.metal3.io/{key} to be removed before
// powering on the Host."
func TestAllKeyedAnnotationsMustBeRemovedBeforePowerOn(t *testing.T) {
	h := newHost()
	keys := []string{KeyedAnnotation("a"), KeyedAnnotation("b"), KeyedAnnotation("c")}
	for _, k := range keys {
		h.ann[k] = ""
	}
	h.settle()
	for i, k := range keys {
		require.False(t, h.on)
		delete(h.ann, k)
		d := h.step()
		if i < len(keys)-1 {
			assert.True(t, d.HeldOff, "%d removed: %s", i+1, d)
			assert.False(t, d.PowerOn)
		} else {
			assert.True(t, d.PowerOn, "all removed: %s", d)
		}
	}
}

// "If both reboot.metal3.io and reboot.metal3.io/{key} forms are in use, the
// reboot.metal3.io/{key} form will take priority."
func TestKeyedFormTakesPriority(t *testing.T) {
	h := newHost()
	h.ann[Annotation] = ""
	h.ann[KeyedAnnotation("a")] = ""
	ds := h.settle()
	// The plain request is served and removed, but the host stays off for
	// the keyed one.
	assert.NotContains(t, h.ann, Annotation)
	assert.Contains(t, h.ann, KeyedAnnotation("a"))
	assert.False(t, h.on)
	assert.True(t, ds[len(ds)-1].HeldOff)
	delete(h.ann, KeyedAnnotation("a"))
	assert.True(t, h.step().PowerOn)
}

// "In all cases, the content of the annotation is ignored but preserved."
func TestAnnotationContentIsIgnoredButPreserved(t *testing.T) {
	// Beyond the mode (and force), the content changes nothing.
	ref := Decide(with(base(), func(in *Input) { in.Annotations = ann(KeyedAnnotation("a"), "") }))
	for _, v := range []string{
		"{}", `{"mode":"soft"}`, `{"owner":"machine/x","uid":"1234","mode":"soft","extra":[1,2,{"a":null}]}`,
		"machine-uid-0001", "anything at all", `{"mode":"soft","force":false}`,
	} {
		a := ann(KeyedAnnotation("a"), v, "other", "o")
		before := maps.Clone(a)
		d := Decide(with(base(), func(in *Input) { in.Annotations = a }))
		assert.Equal(t, ref.PowerOff, d.PowerOff, v)
		assert.Equal(t, ref.Mode, d.Mode, v)
		assert.Equal(t, ref.PendingRebootSince, d.PendingRebootSince, v)
		assert.Equal(t, before, a, "Decide changed the annotations")
	}
	// The controller only ever removes annotations; it never rewrites one.
	h := newHost()
	h.ann[KeyedAnnotation("a")] = `{"mode":"hard","note":"kept"}`
	h.ann[KeyedAnnotation("b")] = `not json`
	h.settle()
	assert.Equal(t, map[string]string{KeyedAnnotation("a"): `{"mode":"hard","note":"kept"}`, KeyedAnnotation("b"): `not json`}, h.ann)
}

// "This ensures that whatever placed the annotation can have a way of
// tracing it back to its source."
func TestAnnotationContentTracesTheRequestToItsSource(t *testing.T) {
	a := ann(
		Annotation, `{"mode":"hard","requester":"ops/ticket-42"}`,
		KeyedAnnotation("remediation"), "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60",
		KeyedAnnotation("upgrade"), `{'mode':'soft'}`,
		"unrelated", "x",
	)
	reqs, _ := ParseAnnotations(a)
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		assert.Equal(t, a[r.Annotation], r.Value, "the value is handed back verbatim, even a malformed one")
	}
	assert.Equal(t, "", reqs[0].Key)
	assert.Equal(t, "remediation", reqs[1].Key)
	assert.Equal(t, "upgrade", reqs[2].Key)
}

// "In the case of remediation, the content will be the UID of the Machine
// resource being remediated."
func TestRemediationUIDValue(t *testing.T) {
	uid := "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60"
	mode, force, problem := ParseValue(uid)
	assert.Equal(t, Soft, mode)
	assert.False(t, force)
	assert.Empty(t, problem, "a UID is an expected value, not a problem")
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann(KeyedAnnotation("remediation"), uid) }))
	assert.True(t, d.PowerOff)
	assert.Equal(t, Soft, d.Mode)
	assert.Empty(t, d.Problems)
}

// "The actual power management will be performed by the Host controller."
func TestHostControllerPerformsPowerManagement(t *testing.T) {
	// Clients only annotate; the controller's decisions, carried out by
	// Power on the host's fence device, switch the power.
	dev := fake.New(fake.Options{Plugs: []string{""}})
	m := &fence.Method{Name: "bmc", Node: "host-0", Driver: "fake", Device: dev, Options: fence.Options{PollInterval: time.Millisecond}}
	h := newHost()
	h.read = func() bool { return dev.Truth("") == fence.StateOn }
	h.power = func(d Decision) (bool, error) {
		_, err := Power(context.Background(), m, d, 50*time.Millisecond)
		return dev.Truth("") == fence.StateOn, err
	}
	h.ann[Annotation] = ""
	h.settle()
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, dev.History(""))
	assert.Equal(t, 1, dev.Calls(fake.OpSoftOff), "soft is the default mode")
}

// "This is necessary to avoid race conditions by ensuring that the Online
// flag and any reboot requests are managed in the same place."
func TestOnlineAndRebootsManagedInOnePlace(t *testing.T) {
	// Over every combination of power, Spec.Online, a pending reboot and the
	// annotations, one decision settles both: never on and off at once, never
	// on against a reboot, never off for nothing.
	for _, on := range []bool{false, true} {
		for _, online := range []bool{false, true} {
			for _, pending := range []bool{false, true} {
				for _, a := range []map[string]string{nil, ann(Annotation, ""), ann(KeyedAnnotation("k"), ""), ann(Annotation, "", KeyedAnnotation("k"), "")} {
					in := base()
					in.PoweredOn, in.Online, in.Annotations = on, online, a
					if pending {
						in.PendingRebootSince = at(50)
					}
					d := Decide(in)
					name := fmt.Sprintf("on=%v online=%v pending=%v ann=%v: %s", on, online, pending, a, d)
					assert.False(t, d.PowerOn && d.PowerOff, name)
					rebooting := pending || len(a) > 0
					switch {
					case on && (rebooting || !online):
						assert.True(t, d.PowerOff, name)
					case on:
						assert.True(t, d.Nothing(), name)
					case !online:
						assert.True(t, d.Nothing(), name)
					case len(a) > 0:
						assert.False(t, d.PowerOn, name)
					default:
						assert.True(t, d.PowerOn, name)
					}
				}
			}
		}
	}
}

// "If: there is one or more annotations with the reboot.metal3.io prefix
// present, and the Status.PoweredOn field is true, and the value of
// pendingRebootSince is empty or earlier than the lastPoweredOn time then
// the Host controller will update pendingRebootSince to the current time."
func TestPendingRebootSinceSetWhenAnnotatedPoweredOnAndNotPending(t *testing.T) {
	type pend struct {
		name    string
		pending time.Time
		isSet   bool // the condition on pendingRebootSince holds
	}
	pends := []pend{
		{"empty", time.Time{}, true},
		{"earlier than lastPoweredOn", t0.Add(-time.Minute), true},
		{"equal to lastPoweredOn", t0, true}, // counts as earlier: see the package documentation
		{"later than lastPoweredOn", at(50), false},
	}
	for _, annotated := range []map[string]string{nil, ann(Annotation, ""), ann(KeyedAnnotation("a"), ""), ann(KeyedAnnotation("a"), "", KeyedAnnotation("b"), "")} {
		for _, on := range []bool{false, true} {
			for _, p := range pends {
				for _, online := range []bool{false, true} {
					in := base()
					in.Annotations, in.PoweredOn, in.PendingRebootSince, in.Online = annotated, on, p.pending, online
					d := Decide(in)
					want := len(annotated) > 0 && on && p.isSet
					assert.Equal(t, want, d.SetPendingRebootSince, "annotations=%v on=%v pending %s online=%v: %s", annotated, on, p.name, online, d)
					if want {
						assert.Equal(t, in.Now, d.PendingRebootSince)
					}
				}
			}
		}
	}
	// An unset lastPoweredOn is the earliest time: an empty
	// pendingRebootSince is still set.
	d := Decide(Input{Annotations: ann(Annotation, ""), PoweredOn: true, Online: true, Provisioning: Provisioned, Now: at(1)})
	assert.True(t, d.SetPendingRebootSince)
}

// "Whenever pendingRebootSince is later than the lastPoweredOn time, the
// Host controller will attempt to power the host off regardless of the
// Spec.Online setting."
func TestPowerOffWhilePendingRegardlessOfOnline(t *testing.T) {
	for _, online := range []bool{false, true} {
		for _, a := range []map[string]string{nil, ann(Annotation, ""), ann(KeyedAnnotation("a"), "")} {
			for _, last := range []time.Time{{}, t0} {
				in := base()
				in.Online, in.Annotations, in.LastPoweredOn, in.PendingRebootSince = online, a, last, at(50)
				d := Decide(in)
				assert.True(t, d.PowerOff, "online=%v ann=%v last=%v: %s", online, a, last, d)
				assert.True(t, d.RebootPending)
				// And the host is never powered on while it is pending
				// and an annotation remains.
				in.PoweredOn = false
				d = Decide(in)
				assert.False(t, d.PowerOn && len(a) > 0, "%s", d)
				assert.False(t, d.PowerOff)
			}
		}
	}
}

// "Once the Host is powered off (Status.PoweredOn is false), if/when the
// Spec.Online field is true, and the lastPoweredOn time is before the
// pendingRebootSince time then the controller should remove the suffixless
// reboot.metal3.io annotation (if present)."
func TestPlainAnnotationRemovedOncePoweredOffOnlineAndPending(t *testing.T) {
	for _, tc := range []struct {
		on, online bool
		a          map[string]string
		remove     bool
	}{
		{on: false, online: true, a: ann(Annotation, ""), remove: true},
		{on: false, online: true, a: ann(Annotation, "", KeyedAnnotation("a"), ""), remove: true},
		{on: false, online: true, a: ann(KeyedAnnotation("a"), "")},                 // no plain annotation: nothing to remove
		{on: false, online: false, a: ann(Annotation, "")},                          // not online: kept
		{on: true, online: true, a: ann(Annotation, "")},                            // not yet off: kept
		{on: false, online: true, a: ann(Annotation, `{"mode":"x"}`), remove: true}, // malformed: still served
	} {
		in := base()
		in.PoweredOn, in.Online, in.Annotations, in.PendingRebootSince = tc.on, tc.online, tc.a, at(50)
		d := Decide(in)
		if tc.remove {
			assert.Equal(t, []string{Annotation}, d.RemoveAnnotations, "%+v: %s", tc, d)
			assert.False(t, d.PowerOn)
		} else {
			assert.Empty(t, d.RemoveAnnotations, "%+v: %s", tc, d)
		}
	}
}

// "Once no reboot annotations are present (i.e. those of the form
// reboot.metal3.io/{key} have been removed by their originators), the
// existing logic for powering on the Host should execute and update the
// lastPoweredOn timestamp accordingly."
func TestPowerOnOnceNoRebootAnnotationsRemain(t *testing.T) {
	in := base()
	in.PoweredOn, in.PendingRebootSince, in.Now = false, at(50), at(60)
	for _, a := range []map[string]string{ann(Annotation, ""), ann(KeyedAnnotation("a"), ""), ann(Annotation, "", KeyedAnnotation("a"), "")} {
		in.Annotations = a
		assert.False(t, Decide(in).PowerOn, "%v", a)
	}
	in.Annotations = ann("unrelated", "")
	d := Decide(in)
	assert.True(t, d.PowerOn)
	assert.True(t, d.SetLastPoweredOn)
	assert.Equal(t, at(60), d.LastPoweredOn)
	assert.False(t, d.RebootPending)
	assert.Equal(t, ReasonRebootDone, d.Reason)
	// "The existing logic": only when Spec.Online is true.
	in.Online = false
	assert.False(t, Decide(in).PowerOn)
}

// "The controller automatically removes all annotations with the
// reboot.metal3.io prefix if the Host is deprovisioned"
func TestDeprovisioningRemovesAllRebootAnnotations(t *testing.T) {
	a := ann(Annotation, "", KeyedAnnotation("b"), `{"mode":"hard"}`, KeyedAnnotation("a"), "bad{", "reboot.metal3.iox", "", "other", "")
	for _, on := range []bool{false, true} {
		d := Decide(Input{Annotations: a, PoweredOn: on, Online: true, Provisioning: Deprovisioning, PendingRebootSince: at(5), LastPoweredOn: t0, Now: at(10)})
		assert.Equal(t, []string{Annotation, KeyedAnnotation("a"), KeyedAnnotation("b")}, d.RemoveAnnotations)
		assert.True(t, d.SetPendingRebootSince)
		assert.True(t, d.PendingRebootSince.IsZero())
		assert.False(t, d.PowerOff || d.PowerOn, "the deprovisioning owns the power")
		assert.Equal(t, ReasonDeprovisioning, d.Reason)
	}
	d := Decide(Input{Annotations: ann("other", ""), Provisioning: Deprovisioning, Now: at(10)})
	assert.True(t, d.Nothing())
	assert.Equal(t, ReasonDeprovisioningIdle, d.Reason)
}

// "The annotation value should be a JSON map containing a key 'mode' with
// values of 'hard' or 'soft' to specify the reboot mode."
func TestValueIsJSONMapWithMode(t *testing.T) {
	for v, want := range map[string]Mode{
		`{"mode":"hard"}`:                 Hard,
		`{"mode":"soft"}`:                 Soft,
		` { "mode" : "hard" , "x" : 1 } `: Hard,
		`{"x":{"mode":"hard"}}`:           Soft, // only the top-level member counts
		`{"mode":"\u0068ard"}`:            Hard,
	} {
		mode, _, problem := ParseValue(v)
		assert.Equal(t, want, mode, v)
		assert.Empty(t, problem, v)
		d := Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, v) }))
		assert.Equal(t, want, d.Mode, v)
	}
}

// "The default reboot mode is 'soft'."
func TestDefaultModeIsSoft(t *testing.T) {
	for _, v := range []string{"", "{}", `{"mode":""}`, `{"force":false}`, "  "} {
		mode, _, problem := ParseValue(v)
		assert.Equal(t, Soft, mode, "%q", v)
		assert.Empty(t, problem, "%q", v)
		d := Decide(with(base(), func(in *Input) { in.Annotations = ann(KeyedAnnotation("a"), v) }))
		assert.Equal(t, Soft, d.Mode)
		assert.Equal(t, ModeDefault, d.ModeSource)
	}
	assert.Equal(t, Soft, Mode(0), "the zero Mode is soft")
}

// powerOffVia carries out d's power off on a fake BMC whose graceful off
// does what fault says (nothing when fault is zero), and returns the
// device's calls.
func powerOffVia(t *testing.T, d Decision, fault fake.Fault) (softOffs, sets int) {
	t.Helper()
	dev := fake.New(fake.Options{Plugs: []string{""}})
	if fault.Kind != 0 {
		dev.Inject(fault)
	}
	m := &fence.Method{Device: dev, Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: time.Second}}
	_, err := Power(context.Background(), m, d, 20*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, fence.StateOff, dev.Truth(""))
	return dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)
}

// "reboot.metal.io -- immediate reboot via soft shutdown first, followed by
// a hard shutdown if the soft shutdown fails."
func TestExamplePlainAnnotationSoftThenHard(t *testing.T) {
	// As written, the key is misspelt: it is reported, and nothing else.
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann("reboot.metal.io", "") }))
	assert.True(t, d.Nothing())
	require.Len(t, d.Problems, 1)
	assert.Equal(t, "reboot.metal.io", d.Problems[0].Annotation)
	// With the right key: soft first...
	d = Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, "") }))
	require.True(t, d.PowerOff)
	require.Equal(t, Soft, d.Mode)
	soft, hard := powerOffVia(t, d, fake.Fault{})
	assert.Equal(t, [2]int{1, 0}, [2]int{soft, hard}, "a graceful off that works is enough")
	// ...then hard if the soft shutdown fails or does not finish.
	soft, hard = powerOffVia(t, d, fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})
	assert.Equal(t, [2]int{1, 1}, [2]int{soft, hard})
	soft, hard = powerOffVia(t, d, fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore})
	assert.Equal(t, [2]int{1, 1}, [2]int{soft, hard})
}

// "reboot.metal3.io: {'mode':'hard'} -- immediate reboot via hard shutdown,
// potentially allowing for high-availability use-cases."
func TestExamplePlainAnnotationHard(t *testing.T) {
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, `{"mode":"hard"}`) }))
	require.True(t, d.PowerOff)
	assert.Equal(t, Hard, d.Mode)
	soft, hard := powerOffVia(t, d, fake.Fault{})
	assert.Equal(t, [2]int{0, 1}, [2]int{soft, hard}, "no graceful off at all")
	// The example as written is not JSON (single quotes): still an
	// immediate reboot, soft, with a problem saying why.
	d = Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, `{'mode':'hard'}`) }))
	assert.True(t, d.PowerOff)
	assert.Equal(t, Soft, d.Mode)
	require.Len(t, d.Problems, 1)
	assert.Contains(t, d.Problems[0].Message, "double quotes")
}

// "reboot.metal3.io/{key} -- phased reboot, issued and managed by the client
// registered with the key, via soft shutdown first, followed by a hard
// reboot if the soft reboot fails."
func TestExampleKeyedAnnotationSoftThenHard(t *testing.T) {
	h := newHost()
	h.ann[KeyedAnnotation("client")] = ""
	d := h.step()
	require.True(t, d.PowerOff)
	assert.Equal(t, Soft, d.Mode)
	soft, hard := powerOffVia(t, d, fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})
	assert.Equal(t, [2]int{1, 1}, [2]int{soft, hard})
	// Phased: the host stays off until the client removes its key.
	assert.True(t, h.step().HeldOff)
	delete(h.ann, KeyedAnnotation("client"))
	assert.True(t, h.step().PowerOn)
}

// "reboot.metal3.io/{key}: {'mode':'hard'} -- phased reboot, issued and
// managed by the client registered with the key, via hard shutdown."
func TestExampleKeyedAnnotationHard(t *testing.T) {
	h := newHost()
	h.ann[KeyedAnnotation("client")] = `{"mode":"hard"}`
	d := h.step()
	require.True(t, d.PowerOff)
	assert.Equal(t, Hard, d.Mode)
	assert.Equal(t, ModeRequested, d.ModeSource)
	soft, hard := powerOffVia(t, d, fake.Fault{})
	assert.Equal(t, [2]int{0, 1}, [2]int{soft, hard})
	assert.True(t, h.step().HeldOff)
	delete(h.ann, KeyedAnnotation("client"))
	assert.True(t, h.step().PowerOn)
}

// "It's important to note that as the API supports multiple clients, a hard
// shutdown request takes priority over a soft shutdown request, allowing
// workload recovery to take precedence over a graceful shutdown of a node."
func TestHardRequestTakesPriority(t *testing.T) {
	for _, a := range []map[string]string{
		ann(Annotation, "", KeyedAnnotation("a"), `{"mode":"hard"}`),
		ann(Annotation, `{"mode":"hard"}`, KeyedAnnotation("a"), `{"mode":"soft"}`),
		ann(KeyedAnnotation("a"), `{"mode":"soft"}`, KeyedAnnotation("b"), `{"mode":"hard"}`, KeyedAnnotation("c"), ""),
		ann(KeyedAnnotation("a"), `{'mode':'hard'}`, KeyedAnnotation("b"), `{"mode":"hard"}`),
	} {
		// Whatever the map's iteration order.
		for range 20 {
			d := Decide(with(base(), func(in *Input) { in.Annotations = a }))
			require.True(t, d.PowerOff)
			require.Equal(t, Hard, d.Mode, "%v", a)
			require.Equal(t, ModeRequested, d.ModeSource)
		}
	}
	// Also for a reboot already pending, when a hard request joins late
	// (the soft off has not worked yet).
	in := base()
	in.PendingRebootSince, in.Annotations = at(50), ann(KeyedAnnotation("a"), "", KeyedAnnotation("late"), `{"mode":"hard"}`)
	assert.Equal(t, Hard, Decide(in).Mode)
}
