package apc

import (
	"context"
	"io"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// noCycle hides the Cycler of a device whose model has no native cycle
// (the Tripp Lite models): its Cycle fails with fence.ErrUnsupported,
// which the suite does not expect of a Cycler.
type noCycle struct{ d *Device }

func (n noCycle) Status(ctx context.Context, plug string) (fence.State, error) {
	return n.d.Status(ctx, plug)
}
func (n noCycle) Set(ctx context.Context, plug string, s fence.State) error {
	return n.d.Set(ctx, plug, s)
}
func (n noCycle) List(ctx context.Context) ([]fence.Plug, error) { return n.d.List(ctx) }
func (n noCycle) Monitor(ctx context.Context) error              { return n.d.Monitor(ctx) }
func (n noCycle) Close() error                                   { return n.d.Close() }

var _ io.Closer = noCycle{}

// conformance runs fence's conformance suite on devices opened on s, one
// per subtest, the simulator shared.
func conformance(t *testing.T, s *snmpsim.Sim, v version, plugs []string, missing string) {
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		var dev fence.Device = openSim(t, s, v, nil)
		if m := s.Model(); m == snmpsim.Tripplite || m == snmpsim.TrippliteLX {
			dev = noCycle{dev.(*Device)}
		}
		return &fencetest.Fixture{
			Device:      dev,
			Plugs:       plugs,
			MissingPlug: missing,
			Truth:       s.TruthFunc(),
		}
	})
}

// Every model, SNMPv2c and v3, against net-snmp's snmpd; the rPDU with
// SNMPv1 too, and a missing outlet given by name. (Plugs given by name are
// tested beside the agent: the suite wants List to report the plugs it
// switches, and List reports outlets by number.)
func TestConformance(t *testing.T) {
	for _, m := range []snmpsim.Model{snmpsim.APC, snmpsim.APCMasterSwitch, snmpsim.APCRPDU2, snmpsim.Tripplite, snmpsim.TrippliteLX} {
		t.Run(m.String(), func(t *testing.T) {
			s := snmpsim.Start(t, snmpsim.Options{Model: m, Outlets: 8, Community: secret})
			for _, v := range []version{v2, v3} {
				t.Run(v.Name, func(t *testing.T) { conformance(t, s, v, []string{"1", "2", "3"}, "9") })
			}
			if m == snmpsim.APC {
				t.Run("v1", func(t *testing.T) { conformance(t, s, v1, []string{"4", "5", "6"}, "12") })
				t.Run("v2c/missing-name", func(t *testing.T) { conformance(t, s, v2, []string{"7", "8"}, "no-such-outlet") })
			}
		})
	}
}
