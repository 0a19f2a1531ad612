package eaton

import (
	"testing"
)

// BenchmarkVerifiedOff compares fencekit, fencectl and fence_eaton_snmp side by
// side, on one simulated PDU (an Eaton Switched ePDU), in one verified off of an
// outlet that is on: see pdutest.Driver.VerifiedOff.
//
//	go test ./drivers/eaton -run '^$' -bench VerifiedOff -count 6 -benchtime 10x
func BenchmarkVerifiedOff(b *testing.B) { pdu.VerifiedOff(b) }
