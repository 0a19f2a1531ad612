package pdutest

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// VerifiedOff compares, side by side on one simulator of the usual model (net-snmp's snmpd
// and its handler), one verified off of an outlet that is on (status,
// SET, status until off) by:
//
//   - tool=fencekit: the library in this process, one device whose model
//     detection (and SNMPv3 engine discovery) every off reuses: three
//     requests per off (reported as requests/op);
//   - tool=fencectl: the built fencectl, run as a process per off (as
//     Pacemaker runs an agent): detection each time;
//   - tool=AGENT (d.Agent): ClusterLabs' agent, which runs net-snmp's snmpwalk,
//     snmpget and snmpset as a process each;
//
// with SNMPv2c and with SNMPv3 (authPriv, SHA and AES). Only the off is
// timed: turning the outlet on again between two offs is not.
func (d Driver) VerifiedOff(b *testing.B) {
	agent, fencectl := d.RequireAgent(b), d.Fencectl(b)
	s := snmpsim.Start(b, snmpsim.Options{Model: d.Models[0], Outlets: 8})
	const plug = "3"
	reset := func(b *testing.B) {
		b.StopTimer()
		if err := s.SetTruth(plug, fence.StateOn); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	proc := func(b *testing.B, what, bin string, args []string) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			reset(b)
			if r := proctest.Run(b, nil, bin, args...); r.Code != 0 || r.Stdout != "Success: Powered OFF\n" {
				b.Fatalf("%s off: exit %d: %s%s", what, r.Code, r.Stdout, r.Stderr)
			}
		}
	}
	for _, v := range []Version{V2, V3} {
		b.Run("snmp="+v.Name+"/tool=fencekit", func(b *testing.B) {
			dev := d.Open(b, s, v, nil)
			m := d.Method(dev, plug)
			if _, err := dev.Status(context.Background(), plug); err != nil { // detection, untimed
				b.Fatal(err)
			}
			before := dev.Requests()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				reset(b)
				res, err := fence.Do(context.Background(), m, fence.ActionOff)
				if err != nil || !res.Fenced() || res.Already {
					b.Fatalf("off: %v", err)
				}
			}
			b.ReportMetric(float64(dev.Requests()-before)/float64(b.N), "requests/op")
		})
		b.Run("snmp="+v.Name+"/tool=fencectl", func(b *testing.B) {
			proc(b, "fencectl", fencectl, append(d.Args(s, v, plug, "off"), "--driver", d.Kind.Name))
		})
		b.Run("snmp="+v.Name+"/tool="+d.Agent, func(b *testing.B) {
			proc(b, d.Agent, agent, d.Args(s, v, plug, "off"))
		})
	}
}
