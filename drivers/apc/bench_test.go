package apc

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// BenchmarkVerifiedOff compares fencekit, fencectl and fence_apc_snmp side by
// side, on one simulated PDU (an APC rPDU), in one verified off of an
// outlet that is on: see pdutest.Driver.VerifiedOff.
//
//	go test ./drivers/apc -run '^$' -bench VerifiedOff -count 6 -benchtime 10x
func BenchmarkVerifiedOff(b *testing.B) { pdu.VerifiedOff(b) }

// BenchmarkTwoPDUReboot compares, side by side on two live simulated PDUs
// (net-snmp's snmpd, APC rPDUs, SNMPv2c), the verified reboot of a node fed
// by both, in Pacemaker's order for a topology level of two devices: outlet
// off on A, off on B (each verified), then on on A, on on B:
//
//   - tool=fencekit: fence.DoLevels, one level of two methods, in this
//     process (the devices opened once, detection reused);
//   - tool=fencectl: the built fencectl, four processes (off, off, on, on),
//     as Pacemaker runs an agent per device and action;
//   - tool=fence_apc_snmp: ClusterLabs' agent, four processes the same way.
//
// Each iteration checks, from both simulators' SET logs, that the four
// switches came in that order (both outlets off together before either is
// on).
//
//	go test ./drivers/apc -run '^$' -bench TwoPDUReboot -count 6 -benchtime 10x
func BenchmarkTwoPDUReboot(b *testing.B) {
	agent := pdu.RequireAgent(b)
	bin := pdu.Fencectl(b)
	pa, pb := twoPDUs(b)
	pdus := map[string]*snmpsim.Sim{"A": pa, "B": pb}
	const plug = "3"
	want := []string{"A off", "B off", "A on", "B on"}
	mark := func(*testing.B) time.Time { return time.Now() }
	check := func(b *testing.B, since time.Time) {
		b.StopTimer()
		if got := switchLog(b, pdus, since); !slices.Equal(got, want) {
			b.Fatalf("switches %v, want %v", got, want)
		}
		b.StartTimer()
	}
	procs := func(b *testing.B, bin string, extra ...string) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			from := mark(b)
			b.StartTimer()
			for _, step := range []struct {
				s      *snmpsim.Sim
				action string
			}{{pa, "off"}, {pb, "off"}, {pa, "on"}, {pb, "on"}} {
				args := append(pdu.Args(step.s, v2, plug, step.action), extra...)
				if r := proctest.Run(b, nil, bin, args...); r.Code != 0 {
					b.Fatalf("%s %s: exit %d: %s%s", bin, step.action, r.Code, r.Stdout, r.Stderr)
				}
			}
			check(b, from)
		}
	}
	b.Run("tool=fencekit", func(b *testing.B) {
		ma := method(openSim(b, pa, nil), plug)
		mb := method(openSim(b, pb, nil), plug)
		ma.Name, mb.Name = "pdu-a", "pdu-b"
		levels := []fence.Level{{Methods: []*fence.Method{ma, mb}}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			from := mark(b)
			b.StartTimer()
			res, err := fence.DoLevels(context.Background(), "node-1", levels, fence.ActionReboot)
			if err != nil || !res.Fenced || res.OnErr != nil {
				b.Fatalf("reboot: %v (on: %v)", err, res.OnErr)
			}
			check(b, from)
		}
	})
	b.Run("tool=fencectl", func(b *testing.B) { procs(b, bin, "--driver", "apc") })
	b.Run("tool="+agentName, func(b *testing.B) { procs(b, agent, "--power-wait", "0") })
}
