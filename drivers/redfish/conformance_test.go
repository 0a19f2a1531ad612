package redfish_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// harness returns a fencetest harness: a fresh responder with o and a
// device opened on it with do, plugs naming the responder's systems.
func harness(o redfishsim.Options, plugs []string, missing string, do func(*redfishsim.Server) redfish.Options) fencetest.Harness {
	return func(t *testing.T) *fencetest.Fixture {
		s := redfishsim.New(o)
		t.Cleanup(s.Close)
		dev, err := redfish.New(do(s))
		require.NoError(t, err)
		t.Cleanup(func() { dev.Close() })
		sysID := func(plug string) string {
			if plug == "" {
				return o.Systems[0].ID
			}
			return plug
		}
		return &fencetest.Fixture{
			Device:      dev,
			Plugs:       plugs,
			MissingPlug: missing,
			Truth: func(_ context.Context, plug string) (fence.State, error) {
				return s.Truth(sysID(plug)), nil
			},
			Settle: o.PowerDelay,
		}
	}
}

func basicOpts(s *redfishsim.Server) redfish.Options {
	return redfish.Options{Endpoint: s.URL(), Username: s.Username(), Password: fence.NewSecret(s.Password()), RootCAs: s.CertPool()}
}

func TestConformance(t *testing.T) {
	three := []redfishsim.System{{ID: "1"}, {ID: "2", PowerState: "Off"}, {ID: "3"}}
	// The suite reads Status while plugs switch and counts any error as a
	// failure, so the responders with a delay keep reporting the previous
	// state meanwhile (QuietDelay) instead of PoweringOn or PoweringOff,
	// which the driver reports as errors; the tests of fence.Do cover those.
	t.Run("systems=3/delay=30ms/auth=basic", func(t *testing.T) {
		fencetest.Run(t, harness(redfishsim.Options{Systems: three, PowerDelay: 30 * time.Millisecond, QuietDelay: true},
			[]string{"1", "2", "3"}, "99", basicOpts))
	})
	t.Run("systems=3/plugs=id/auth=session", func(t *testing.T) {
		o := redfishsim.Options{Systems: three, SessionOnly: true}
		fencetest.Run(t, harness(o, []string{"1", "2", "3"}, "4", func(s *redfishsim.Server) redfish.Options {
			ro := basicOpts(s)
			ro.Auth = redfish.AuthSession
			return ro
		}))
	})
	t.Run("systems=1/plug=empty/auth=session", func(t *testing.T) {
		o := redfishsim.Options{Systems: []redfishsim.System{{ID: "System.Embedded.1"}}, SessionOnly: true}
		h := harness(o, []string{""}, "nope", func(s *redfishsim.Server) redfish.Options {
			ro := basicOpts(s)
			ro.Auth = redfish.AuthSession
			return ro
		})
		// List reports systems by Id, never the empty plug: leave it out
		// of this fixture.
		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
			f := h(t)
			f.Device = noList{f.Device.(*redfish.Device)}
			return f
		})
	})
	t.Run("systems=2/actioninfo/status=200/systems-uri", func(t *testing.T) {
		o := redfishsim.Options{
			Systems:     []redfishsim.System{{ID: "A", Advertise: redfishsim.AdvertiseActionInfo}, {ID: "B"}},
			ResetStatus: 200,
		}
		fencetest.Run(t, harness(o, []string{"A"}, "C", func(s *redfishsim.Server) redfish.Options {
			ro := basicOpts(s)
			ro.SystemsURI = s.SystemURI("A")
			return ro
		}))
	})
}

// noList is a device without its plug list.
type noList struct{ d *redfish.Device }

func (n noList) Status(ctx context.Context, plug string) (fence.State, error) {
	return n.d.Status(ctx, plug)
}
func (n noList) Set(ctx context.Context, plug string, s fence.State) error {
	return n.d.Set(ctx, plug, s)
}
func (n noList) Cycle(ctx context.Context, plug string) error   { return n.d.Cycle(ctx, plug) }
func (n noList) SoftOff(ctx context.Context, plug string) error { return n.d.SoftOff(ctx, plug) }
func (n noList) Monitor(ctx context.Context) error              { return n.d.Monitor(ctx) }
func (n noList) Close() error                                   { return n.d.Close() }
