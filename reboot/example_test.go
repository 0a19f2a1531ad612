package reboot_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/reboot"
)

// A phased reboot asked for by a remediation client: the controller notes
// the request and powers the host off, holds it off while the client's
// keyed annotation is there, and powers it on once the client removes it.
// Each decision is applied to the host's status and its BMC (here a fake
// one) as the Decision documentation says.
func Example() {
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	method := &fence.Method{Name: "bmc", Node: "worker-3", Driver: "fake", Device: bmc,
		Options: fence.Options{PollInterval: time.Millisecond}}

	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	annotations := map[string]string{reboot.KeyedAnnotation("remediation"): "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60"}
	var pendingRebootSince, lastPoweredOn time.Time

	reconcile := func() {
		d := reboot.Decide(reboot.Input{
			Annotations:        annotations,
			PoweredOn:          bmc.Truth("") == fence.StateOn,
			Online:             true,
			Provisioning:       reboot.Provisioned,
			PendingRebootSince: pendingRebootSince,
			LastPoweredOn:      lastPoweredOn,
			Now:                now,
			Precision:          time.Second,
		})
		for _, k := range d.RemoveAnnotations {
			delete(annotations, k)
		}
		if d.SetPendingRebootSince {
			pendingRebootSince = d.PendingRebootSince
		}
		if _, err := reboot.Power(context.Background(), method, d, 10*time.Second); err != nil {
			fmt.Println("power:", err)
			return
		}
		if d.SetLastPoweredOn {
			lastPoweredOn = d.LastPoweredOn
		}
		fmt.Printf("%s -> host %v\n", d.Format(func(t time.Time) string { return t.Format(time.TimeOnly) }), bmc.Truth(""))
	}

	reconcile()
	now = now.Add(time.Minute)
	reconcile()
	delete(annotations, reboot.KeyedAnnotation("remediation")) // the client is done
	now = now.Add(time.Minute)
	reconcile()
	reconcile()
	// Output:
	// set pendingRebootSince=12:00:00, power off soft (default): reboot requested: pendingRebootSince noted, powering off -> host off
	// nothing to do: host held off until every keyed reboot annotation is removed by its owner -> host off
	// power on, set lastPoweredOn=12:02:00: reboot done: no reboot annotation left, powering on -> host on
	// nothing to do: host on, as Spec.Online asks -> host on
}

// Malformed values are still requests, in the default mode, and say why.
func ExampleParseAnnotations() {
	requests, problems := reboot.ParseAnnotations(map[string]string{
		"reboot.metal3.io":        `{'mode':'hard'}`,
		"reboot.metal3.io/ha":     `{"mode":"hard"}`,
		"reboot.metal3.io/remedy": "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60",
		"example.com/unrelated":   "x",
	})
	for _, r := range requests {
		fmt.Printf("%q keyed=%v mode=%v\n", r.Key, r.Keyed(), r.Mode)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	// Output:
	// "" keyed=false mode=soft
	// "ha" keyed=true mode=hard
	// "remedy" keyed=true mode=soft
	// reboot.metal3.io: value is not valid JSON (at byte 1: want a member name in double quotes): read as mode soft, not forced (JSON needs double quotes around keys and strings)
}

// A soft power off on a BMC whose operating system ignores the graceful
// shutdown: after the soft timeout, the host is switched off hard.
func ExamplePower() {
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	bmc.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore})
	method := &fence.Method{Device: bmc, Options: fence.Options{PollInterval: time.Millisecond}}

	res, err := reboot.Power(context.Background(), method, reboot.Decision{PowerOff: true, Mode: reboot.Soft}, 20*time.Millisecond)
	fmt.Println("error:", err, "fenced:", res.Fenced())
	fmt.Println("graceful offs:", bmc.Calls(fake.OpSoftOff), "hard offs:", bmc.Calls(fake.OpSet))
	// Output:
	// error: <nil> fenced: true
	// graceful offs: 1 hard offs: 1
}
