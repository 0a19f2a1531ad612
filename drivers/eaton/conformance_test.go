package eaton

import (
	"testing"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// conformance runs fence's conformance suite on devices opened on s, one
// per subtest, the simulator shared.
func conformance(t *testing.T, s *snmpsim.Sim, v version, plugs []string, missing string) {
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		return &fencetest.Fixture{
			Device:      openSim(t, s, v, nil),
			Plugs:       plugs,
			MissingPlug: missing,
			Truth:       s.TruthFunc(),
		}
	})
}

// Both models, SNMPv1, v2c and v3, against net-snmp's snmpd.
func TestConformance(t *testing.T) {
	for _, m := range []snmpsim.Model{snmpsim.EatonManaged, snmpsim.EatonSwitched} {
		t.Run(m.String(), func(t *testing.T) {
			s := snmpsim.Start(t, snmpsim.Options{Model: m, Outlets: 8, Community: secret})
			t.Run("v2c", func(t *testing.T) { conformance(t, s, v2, []string{"1", "2", "3"}, "9") })
			t.Run("v3", func(t *testing.T) { conformance(t, s, v3, []string{"4", "5", "8"}, "10") })
			t.Run("v1", func(t *testing.T) { conformance(t, s, v1, []string{"6", "7"}, "0") })
		})
	}
}
