package fence_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

func TestSameMachine(t *testing.T) {
	const node = "4c4c4544-0032-3310-8051-b7c04f333532" // as the kubelet reports it
	for _, tc := range []struct {
		name, dev string
		same      bool
		err       error
	}{
		{"equal", node, true, nil},
		{"upper case, braces", "{4C4C4544-0032-3310-8051-B7C04F333532}", true, nil},
		{"no hyphens", "4c4c4544003233108051b7c04f333532", true, nil},
		{"SMBIOS fields swapped", "44454c4c-3200-1033-8051-b7c04f333532", true, nil},
		{"IPMI, all bytes reversed", "3235334f-c0b7-5180-1033-32004445 4c4c", false, errors.New("not a UUID")},
		{"IPMI, all bytes reversed", "3235334f-c0b7-5180-1033-320044454c4c", true, nil},
		{"another machine", "4c4c4544-0032-3310-8051-b7c04f333533", false, nil},
		{"all zeros", "00000000-0000-0000-0000-000000000000", false, fence.ErrNoIdentity},
		{"all ones", "ffffffff-ffff-ffff-ffff-ffffffffffff", false, fence.ErrNoIdentity},
		{"garbage", "not-a-uuid", false, errors.New("not a UUID")},
	} {
		same, err := fence.SameMachine(node, tc.dev)
		if same != tc.same || (err == nil) != (tc.err == nil) || (errors.Is(tc.err, fence.ErrNoIdentity) && !errors.Is(err, fence.ErrNoIdentity)) {
			t.Errorf("%s: SameMachine(%s, %s) = %v, %v", tc.name, node, tc.dev, same, err)
		}
	}
}

// The identity check before an off: a device whose machine is another
// switches nothing and fails not done, naming both identities, even when
// that machine is off already (its off would report the node fenced); the
// right machine in either byte order fences; a device or node without an
// identity, or verify_identity=false, proceeds (a device that could tell
// and does not, with a warning). An on is checked too: through a swapped address it would switch
// another machine on, perhaps one fenced.
func TestIdentityBeforeOff(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	const other = "6d1c7f0e-5a3b-4c2e-9f11-000000000001"
	for _, tc := range []struct {
		name      string
		devUUID   string
		nodeUUID  string
		initial   fence.State
		action    fence.Action
		cycle     bool
		skip      bool
		fenced    bool
		warned    bool
		wrongMach bool
	}{
		{name: "right machine", devUUID: nodeUUID, nodeUUID: nodeUUID, action: fence.ActionOff, fenced: true},
		{name: "right machine, SMBIOS order", devUUID: "44454c4c-3200-1033-8051-b7c04f333532", nodeUUID: nodeUUID, action: fence.ActionReboot, fenced: true},
		{name: "wrong machine", devUUID: other, nodeUUID: nodeUUID, action: fence.ActionOff, wrongMach: true},
		{name: "wrong machine, off already", devUUID: other, nodeUUID: nodeUUID, initial: fence.StateOff, action: fence.ActionOff, wrongMach: true},
		{name: "wrong machine, reboot", devUUID: other, nodeUUID: nodeUUID, action: fence.ActionReboot, wrongMach: true},
		{name: "wrong machine, native cycle", devUUID: other, nodeUUID: nodeUUID, action: fence.ActionReboot, cycle: true, wrongMach: true},
		{name: "wrong machine, check off", devUUID: other, nodeUUID: nodeUUID, action: fence.ActionOff, skip: true, fenced: true},
		{name: "device without identity", nodeUUID: nodeUUID, action: fence.ActionOff, fenced: true, warned: true},
		{name: "node without identity", devUUID: other, action: fence.ActionOff, fenced: true},
		{name: "wrong machine, on", devUUID: other, nodeUUID: nodeUUID, initial: fence.StateOff, action: fence.ActionOn, wrongMach: true},
		{name: "firmware placeholder", devUUID: "03000200-0400-0500-0006-000700080009", nodeUUID: nodeUUID, action: fence.ActionOff, fenced: true, warned: true},
		{name: "device of all zeros", devUUID: "00000000-0000-0000-0000-000000000000", nodeUUID: nodeUUID, action: fence.ActionOff, fenced: true, warned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := fake.New(fake.Options{Plugs: []string{""}, Initial: tc.initial, SystemUUID: tc.devUUID})
			var logs bytes.Buffer
			m := &fence.Method{Name: "bmc", Node: "n1", Device: dev, SystemUUID: tc.nodeUUID, Options: fence.Options{
				SkipIdentity: tc.skip, Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
			if tc.cycle {
				m.Options.RebootMethod = fence.RebootCycle
			}
			res, err := fence.Do(t.Context(), m, tc.action)
			fenced := err == nil && res.Fenced()
			if fenced != tc.fenced {
				t.Fatalf("fenced %v, want %v: %v", fenced, tc.fenced, err)
			}
			if tc.wrongMach {
				if !errors.Is(err, fence.ErrWrongMachine) || !fence.IsNotDone(err) || !strings.Contains(err.Error(), tc.devUUID) || !strings.Contains(err.Error(), tc.nodeUUID) {
					t.Fatalf("want a not-done wrong machine naming both identities, got %v", err)
				}
				if n := dev.Calls(fake.OpSet) + dev.Calls(fake.OpCycle); n != 0 {
					t.Fatalf("the wrong machine was switched (%d calls)", n)
				}
			}
			if got := strings.Contains(logs.String(), "machine identity not checked"); got != tc.warned {
				t.Fatalf("warned %v, want %v: %s", got, tc.warned, logs.String())
			}
		})
	}
}

// verify_identity is a boolean parameter that turns the check off.
func TestVerifyIdentityParam(t *testing.T) {
	o, err := fence.OptionsFromParams(fence.Options{}, fence.NewParams("verify_identity", "false"))
	if err != nil || !o.SkipIdentity {
		t.Fatalf("got %+v, %v", o, err)
	}
	if _, err := fence.OptionsFromParams(fence.Options{}, fence.NewParams("verify_identity", "perhaps")); err == nil {
		t.Fatal("a non-boolean verify_identity was taken")
	}
}

// ReadState reads a plugless method's power (a BMC's chassis), where Check
// would ask the device's health: the machine's identity first, nothing
// switched; the wrong machine is an error, not a state.
func TestReadState(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	dev := fake.New(fake.Options{Plugs: []string{""}, Initial: fence.StateOn, SystemUUID: nodeUUID})
	m := &fence.Method{Name: "bmc", Node: "n1", Driver: "fake", Device: dev, SystemUUID: nodeUUID}
	res, err := fence.ReadState(t.Context(), m)
	if err != nil || res.State != fence.StateOn {
		t.Fatalf("ReadState = %v, %v; want on", res.State, err)
	}
	checked, err := fence.Check(t.Context(), m)
	if err != nil || checked.State != fence.StateUnknown || checked.Action != fence.ActionMonitor {
		t.Fatalf("Check = %v %v, %v; want the device's health, no state", checked.Action, checked.State, err)
	}
	m.SystemUUID = "6d1c7f0e-5a3b-4c2e-9f11-000000000001"
	res, err = fence.ReadState(t.Context(), m)
	if !errors.Is(err, fence.ErrWrongMachine) || res.State.Known() {
		t.Fatalf("ReadState of another machine = %v, %v; want ErrWrongMachine", res.State, err)
	}
	if n := dev.Calls(fake.OpSet); n != 0 {
		t.Fatalf("switched %d times", n)
	}
}

// timeProver is a device whose off is proven by elapsed time.
type timeProver struct{ *fake.Device }

func (timeProver) ProofByTime() bool { return true }

// A TimeProver's results say so: the record tells how the node was
// proven off.
func TestResultByTime(t *testing.T) {
	dev := fake.New(fake.Options{Plugs: []string{"1"}})
	res, err := fence.Do(t.Context(), &fence.Method{Name: "pill", Node: "n1", Driver: "fake", Device: timeProver{dev}, Plug: "1"}, fence.ActionOff)
	if err != nil || !res.ByTime || !res.OffConfirmed {
		t.Fatalf("Do = %+v, %v; want ByTime and OffConfirmed", res, err)
	}
	res, err = fence.Do(t.Context(), &fence.Method{Name: "pdu", Node: "n1", Driver: "fake", Device: dev, Plug: "1"}, fence.ActionOn)
	if err != nil || res.ByTime {
		t.Fatalf("a device that reads its switch back: ByTime = %v, %v", res.ByTime, err)
	}
}

// movingBMC is a BMC whose address passes to another machine during the
// off: it names the node's machine until its off is set, another after.
type movingBMC struct {
	*fake.Device
	before, after string
	moved         atomic.Bool
}

func (d *movingBMC) Set(ctx context.Context, plug string, s fence.State) error {
	err := d.Device.Set(ctx, plug, s)
	if s == fence.StateOff {
		d.moved.Store(true)
	}
	return err
}

func (d *movingBMC) Identity(context.Context, string) (string, error) {
	if d.moved.Load() {
		return d.after, nil
	}
	return d.before, nil
}

// The identity is read again after the confirming status: an address that
// moved to another machine during the off (a DHCP lease handed on, a BMC
// failover) confirmed that machine's off, not the node's. The node is not
// fenced, the outcome is unknown, and the error names both machines. One
// that names the node's machine after too is fenced; a reboot's off is
// checked the same way, before its on.
func TestIdentityAfterOff(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	const other = "6d1c7f0e-5a3b-4c2e-9f11-000000000001"
	for _, tc := range []struct {
		name   string
		after  string
		action fence.Action
		fenced bool
	}{
		{"moved during the off", other, fence.ActionOff, false},
		{"moved during a reboot's off", other, fence.ActionReboot, false},
		{"stayed", nodeUUID, fence.ActionOff, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := &movingBMC{Device: fake.New(fake.Options{Plugs: []string{""}}), before: nodeUUID, after: tc.after}
			m := &fence.Method{Name: "bmc", Node: "n1", Device: dev, SystemUUID: nodeUUID,
				Options: fence.Options{PollInterval: time.Millisecond}}
			res, err := fence.Do(t.Context(), m, tc.action)
			if fenced := err == nil && res.Fenced(); fenced != tc.fenced {
				t.Fatalf("fenced %v, want %v: %v", fenced, tc.fenced, err)
			}
			if tc.fenced {
				return
			}
			if res.OffConfirmed || !errors.Is(err, fence.ErrWrongMachine) || !fence.IsOutcomeUnknown(err) ||
				!strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), nodeUUID) {
				t.Fatalf("want an unknown outcome naming both machines, not off confirmed; got %v (OffConfirmed %v)", err, res.OffConfirmed)
			}
			if tc.action == fence.ActionReboot && dev.Truth("") != fence.StateOff {
				t.Fatal("a reboot whose off switched another machine switched it on again")
			}
		})
	}
}
