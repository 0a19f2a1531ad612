package eaton

import (
	"testing"

	"github.com/fencekit/fencekit/internal/snmppdu/pdutest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// BenchmarkVerifiedOff compares fencekit, fencectl and fence_eaton_snmp side by
// side, on one simulated PDU (an Eaton Switched ePDU), in one verified off of an
// outlet that is on: see pdutest.VerifiedOff.
//
//	go test ./drivers/eaton -run '^$' -bench VerifiedOff -count 6 -benchtime 10x
func BenchmarkVerifiedOff(b *testing.B) {
	pdutest.VerifiedOff(b, pdutest.Bench{Kind: kind, Model: snmpsim.EatonSwitched, Agent: agentName,
		AgentBin: requireAgent(b), Fencectl: fencectl(b), Args: agentArgs, AgentExtra: nil})
}
