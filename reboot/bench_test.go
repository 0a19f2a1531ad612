package reboot

import (
	"testing"
	"time"
)

// sink keeps the compiler from dropping the benchmarked calls.
var sink Decision

// BenchmarkDecide measures one decision, on a host with four unrelated
// annotations or none, and with two reboot annotations (and the four
// others) in four states. The goal is at least a million decisions per
// second per core, and no allocation for a host without reboot annotations.
// Only a decision that removes annotations allocates (its list).
func BenchmarkDecide(b *testing.B) {
	unrelated := ann(
		"kubectl.kubernetes.io/last-applied-configuration", `{"apiVersion":"metal3.io/v1alpha1","kind":"BareMetalHost"}`,
		"baremetalhost.metal3.io/status", "{}",
		"inspect.metal3.io", "disabled",
		"example.com/owner", "team-a",
	)
	withTwo := ann(Annotation, "", KeyedAnnotation("remediation"), `{"mode":"hard"}`)
	keyedTwo := ann(KeyedAnnotation("upgrade"), `{"mode":"soft","ticket":"42"}`, KeyedAnnotation("remediation"), `{"mode":"hard"}`)
	for k, v := range unrelated {
		withTwo[k] = v
		keyedTwo[k] = v
	}
	for _, bc := range []struct {
		name string
		in   Input
	}{
		{"annotations=none", Input{PoweredOn: true, Online: true, Provisioning: Provisioned, LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
		{"annotations=unrelated-4", Input{Annotations: unrelated, PoweredOn: true, Online: true, Provisioning: Provisioned, LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
		{"annotations=2/reboot-requested", Input{Annotations: withTwo, PoweredOn: true, Online: true, Provisioning: Provisioned, LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
		{"annotations=2/held-off", Input{Annotations: keyedTwo, PoweredOn: false, Online: true, Provisioning: Provisioned, PendingRebootSince: at(50), LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
		{"annotations=2/remove-plain", Input{Annotations: withTwo, PoweredOn: false, Online: true, Provisioning: Provisioned, PendingRebootSince: at(50), LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
		{"annotations=2/deprovisioning", Input{Annotations: withTwo, PoweredOn: false, Online: true, Provisioning: Deprovisioning, PendingRebootSince: at(50), LastPoweredOn: t0, Now: at(100), Precision: time.Second}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = Decide(bc.in)
			}
		})
	}
}

// BenchmarkParseAnnotations measures parsing two reboot annotations among
// four others.
func BenchmarkParseAnnotations(b *testing.B) {
	a := ann(Annotation, `{"mode":"soft","note":"ticket 42"}`, KeyedAnnotation("remediation"), `{"mode":"hard"}`,
		"a", "1", "b", "2", "c", "3", "d", "4")
	b.ReportAllocs()
	for b.Loop() {
		reqs, _ := ParseAnnotations(a)
		sink.Problems = nil
		_ = reqs
	}
}
