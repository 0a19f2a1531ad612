package redfish_test

import (
	"context"
	"testing"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// BenchmarkVerifiedOff compares, side by side on one responder, a verified
// off (the system on before each) by fencekit in-process (one device, its
// discovery cached, one kept-alive connection), by the built fencectl as a
// process, and by fence_redfish as a process (--power-wait 0), both with
// the same command line. It reports the responder's requests and
// connections per off. Allocations are the benchmark process's: for the
// processes, starting the child.
//
//	go test ./drivers/redfish -run '^$' -bench VerifiedOff -count 6 -benchtime 10x
func BenchmarkVerifiedOff(b *testing.B) {
	s := redfishsim.New(redfishsim.Options{Password: secret})
	defer s.Close()
	ctx := context.Background()

	report := func(b *testing.B, n int) {
		b.ReportMetric(float64(s.TotalRequests())/float64(n), "requests/op")
		b.ReportMetric(float64(s.Connections())/float64(n), "conns/op")
	}

	b.Run("tool=fencekit", func(b *testing.B) {
		d := open(b, s)
		m := method(d, "", fence.Options{})
		off := func() {
			s.SetTruth("1", fence.StateOn)
			res, err := fence.Do(ctx, m, fence.ActionOff)
			if err != nil || !res.Fenced() || res.Already {
				b.Fatalf("off: %v (fenced %v, already %v)", err, res.Fenced(), res.Already)
			}
		}
		off() // discovery, and the connection, once
		s.ResetCounters()
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			off()
			n++
		}
		report(b, n)
	})

	// gofish v0.26's own client on the same responder: connected once
	// (the service root read once), connections kept alive, each call's
	// context through WithContext, the system read by Status kept for the
	// reset that follows, as a careful user of the library would.
	b.Run("tool=gofish", func(b *testing.B) {
		c, err := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: s.URL(), Username: s.Username(), Password: s.Password(),
			BasicAuth: true, HTTPClient: s.Client(), ReuseConnections: true})
		if err != nil {
			b.Fatal(err)
		}
		d := &gofishDevice{c: c, uri: s.SystemURI("1")}
		m := method(d, "", fence.Options{})
		off := func() {
			s.SetTruth("1", fence.StateOn)
			res, err := fence.Do(ctx, m, fence.ActionOff)
			if err != nil || !res.Fenced() || res.Already {
				b.Fatalf("off: %v (fenced %v, already %v)", err, res.Fenced(), res.Already)
			}
		}
		off()
		s.ResetCounters()
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			off()
			n++
		}
		report(b, n)
	})

	b.Run("tool=fencectl", func(b *testing.B) {
		bin := fencectl(b, "fencectl")
		args := append([]string{"--driver", "redfish"}, agentArgs(s, "off", "--power-wait", "0")...)
		s.ResetCounters()
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			s.SetTruth("1", fence.StateOn)
			if r := runProc(b, nil, bin, args...); r.code != 0 || r.stdout != "Success: Powered OFF\n" {
				b.Fatalf("fencectl off: exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			n++
		}
		report(b, n)
	})

	b.Run("tool=fence_redfish", func(b *testing.B) {
		requireAgent(b)
		s.ResetCounters()
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			s.SetTruth("1", fence.StateOn)
			if r := runAgent(b, s, "off", "--power-wait", "0"); r.code != 0 || r.stdout != "Success: Powered OFF\n" {
				b.Fatalf("fence_redfish off: exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			n++
		}
		report(b, n)
	})
}

// gofishDevice is a fence.Device on gofish's client, for the benchmark.
type gofishDevice struct {
	c   *gofish.APIClient
	uri string
	sys *schemas.ComputerSystem // the last read
}

func (d *gofishDevice) Status(ctx context.Context, _ string) (fence.State, error) {
	sys, err := schemas.GetComputerSystem(d.c.WithContext(ctx), d.uri)
	if err != nil {
		return fence.StateUnknown, err
	}
	d.sys = sys
	switch sys.PowerState {
	case schemas.OnPowerState:
		return fence.StateOn, nil
	case schemas.OffPowerState:
		return fence.StateOff, nil
	}
	return fence.StateUnknown, nil
}

func (d *gofishDevice) Set(ctx context.Context, _ string, st fence.State) error {
	t := schemas.OnResetType
	if st == fence.StateOff {
		t = schemas.ForceOffResetType
	}
	sys := d.sys
	if sys == nil {
		var err error
		if sys, err = schemas.GetComputerSystem(d.c.WithContext(ctx), d.uri); err != nil {
			return err
		}
	}
	sys.SetClient(d.c.WithContext(ctx))
	_, err := sys.Reset(t)
	return err
}
