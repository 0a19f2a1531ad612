package pdutest

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmppdu"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// Bench is a driver's side of VerifiedOff.
type Bench struct {
	// Kind is the driver; Model the simulated PDU.
	Kind  snmppdu.Kind
	Model snmpsim.Model
	// Agent is the ClusterLabs agent's name, AgentBin its path and
	// Fencectl the built fencectl's.
	Agent, AgentBin, Fencectl string
	// Args are the options of the agent and of fencectl (the driver's
	// AgentArgs); AgentExtra is added for the agent alone.
	Args       func(s *snmpsim.Sim, v Version, plug, action string, extra ...string) []string
	AgentExtra []string
}

// VerifiedOff compares, side by side on one simulator (net-snmp's snmpd
// and its handler), one verified off of an outlet that is on (status,
// SET, status until off) by:
//
//   - tool=fencekit: the library in this process, one device whose model
//     detection (and SNMPv3 engine discovery) every off reuses: three
//     requests per off (reported as requests/op);
//   - tool=fencectl: the built fencectl, run as a process per off (as
//     Pacemaker runs an agent): detection each time;
//   - tool=AGENT: ClusterLabs' agent, which runs net-snmp's snmpwalk,
//     snmpget and snmpset as a process each;
//
// with SNMPv2c and with SNMPv3 (authPriv, SHA and AES). Only the off is
// timed: turning the outlet on again between two offs is not.
func VerifiedOff(b *testing.B, p Bench) {
	s := snmpsim.Start(b, snmpsim.Options{Model: p.Model, Outlets: 8})
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
			d := OpenSim(b, p.Kind, s, v, nil)
			m := Method(p.Kind.Name, d, plug)
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
			proc(b, "fencectl", p.Fencectl, append(p.Args(s, v, plug, "off"), "--driver", p.Kind.Name))
		})
		b.Run("snmp="+v.Name+"/tool="+p.Agent, func(b *testing.B) {
			proc(b, p.Agent, p.AgentBin, p.Args(s, v, plug, "off", p.AgentExtra...))
		})
	}
}
