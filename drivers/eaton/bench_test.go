package eaton

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// BenchmarkVerifiedOff compares, side by side on one simulator (net-snmp's
// snmpd and its handler, an Eaton Switched ePDU), one verified off of an outlet that
// is on (status, SET, status until off) by:
//
//   - tool=fencekit: the library in this process, one device whose model
//     detection (and SNMPv3 engine discovery) every off reuses: three
//     requests per off (reported as requests/op);
//   - tool=fencectl: the built fencectl, run as a process per off (as
//     Pacemaker runs an agent): detection each time;
//   - tool=fence_eaton_snmp: ClusterLabs' agent, with --power-wait 0 (its
//     default is 2 s), which runs net-snmp's snmpwalk, snmpget and snmpset as a
//     process each;
//
// with SNMPv2c and with SNMPv3 (authPriv, SHA and AES). Only the off is
// timed: turning the outlet on again between two offs is not.
//
//	go test ./drivers/eaton -run '^$' -bench VerifiedOff -count 6 -benchtime 10x
func BenchmarkVerifiedOff(b *testing.B) {
	agent := requireAgent(b)
	bin := fencectl(b)
	s := snmpsim.Start(b, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 8})
	const plug = "3"
	reset := func(b *testing.B) {
		b.StopTimer()
		if err := s.SetTruth(plug, fence.StateOn); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	for _, v := range []version{v2, v3} {
		b.Run("snmp="+v.Name+"/tool=fencekit", func(b *testing.B) {
			d := openSim(b, s, v, nil)
			m := method(d, plug)
			if _, err := d.Status(context.Background(), plug); err != nil { // detection, untimed
				b.Fatal(err)
			}
			before := d.Requests()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				reset(b)
				res, err := fence.Do(context.Background(), m, fence.ActionOff)
				if err != nil || !res.Fenced() || res.Already {
					b.Fatalf("off: %v", err)
				}
			}
			b.ReportMetric(float64(d.Requests()-before)/float64(b.N), "requests/op")
		})
		b.Run("snmp="+v.Name+"/tool=fencectl", func(b *testing.B) {
			args := append(agentArgs(s, v, plug, "off"), "--driver", "eaton")
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reset(b)
				if r := runProc(b, bin, args...); r.Code != 0 || r.Stdout != "Success: Powered OFF\n" {
					b.Fatalf("fencectl off: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
				}
			}
		})
		b.Run("snmp="+v.Name+"/tool="+agentName, func(b *testing.B) {
			args := agentArgs(s, v, plug, "off") // with --power-wait 0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reset(b)
				if r := runProc(b, agent, args...); r.Code != 0 || r.Stdout != "Success: Powered OFF\n" {
					b.Fatalf("%s off: exit %d: %s%s", agentName, r.Code, r.Stdout, r.Stderr)
				}
			}
		})
	}
}
