package ipmi

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// BenchmarkVerifiedOff compares, side by side, one verified off (status
// first, power down, status until off) by:
//
//   - tool=fencectl: the built fencectl, run as a process per off (as
//     Pacemaker runs an agent): a new session each time;
//   - tool=fence_ipmilan: ClusterLabs' agent with --power-wait 0, which runs
//     ipmitool three times (status, off, status), a session each;
//   - tool=fencekit: the library in this process, on one device whose
//     session every off reuses (three round trips per off).
//
// on the same BMCs: go-ipmi's reference BMC run as a process of its own
// (peer=goipmi-server), OpenIPMI's ipmi_sim (peer=ipmi_sim), whose
// chassis-control script is forked for every power query and command, and,
// for fencekit only, the reference BMC in this process (peer=goipmi, which
// also counts the round trips). Only the off is timed: the power on that
// resets the BMC between two offs is not.
func BenchmarkVerifiedOff(b *testing.B) {
	agent := requireAgent(b)
	fencectl := buildFencectl(b)
	srv := ipmisim.StartGoIPMIServer(b, ipmisim.BuildGoIPMIServer(b))
	_, sim := simPeer(b, ipmisim.SimOptions{})
	inproc, gp := goBMCPeer(b, ipmisim.GoBMCOptions{})
	peers := []peer{
		{name: "goipmi-server", port: srv.Port, user: srv.User, password: srv.Password, truth: srv.Truth, setTruth: srv.SetTruth},
		sim,
	}
	reset := func(b *testing.B, p peer) {
		b.StopTimer()
		if err := p.setTruth(fence.StateOn); err != nil {
			b.Fatalf("reset %s to on: %v", p.name, err)
		}
		b.StartTimer()
	}
	runOff := func(b *testing.B, p peer, bin string, extra ...string) {
		for i := 0; i < b.N; i++ {
			reset(b, p)
			r := runProc(b, bin, append(agentArgs(p, "off"), extra...)...)
			if r.code != 0 || r.stdout != "Success: Powered OFF\n" {
				b.Fatalf("%s off: exit %d, %q %q", bin, r.code, r.stdout, r.stderr)
			}
		}
	}
	fencekit := func(b *testing.B, p peer, count func() int64) {
		d := p.open(b, nil)
		m := &fence.Method{Name: "bench", Node: "n", Driver: "ipmi", Device: d}
		if _, err := d.Status(context.Background(), ""); err != nil { // the session, untimed
			b.Fatal(err)
		}
		var trips int64
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			reset(b, p)
			before := count()
			res, err := fence.Do(context.Background(), m, fence.ActionOff)
			if err != nil || !res.Fenced() || res.Already {
				b.Fatalf("off: %v", err)
			}
			trips += count() - before
		}
		if trips > 0 {
			b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
		}
	}
	none := func() int64 { return 0 }
	for _, p := range peers {
		b.Run("peer="+p.name+"/tool=fencectl", func(b *testing.B) { runOff(b, p, fencectl, "--driver", "ipmi") })
		b.Run("peer="+p.name+"/tool=fence_ipmilan", func(b *testing.B) { runOff(b, p, agent) })
		b.Run("peer="+p.name+"/tool=fencekit", func(b *testing.B) { fencekit(b, p, none) })
	}
	b.Run("peer=goipmi/tool=fencekit", func(b *testing.B) { fencekit(b, gp, inproc.Packets) })
}

// BenchmarkConcurrent100 fences 100 in-process reference BMCs at once: each
// of 100 goroutines opens a device, runs a verified off (a session set up,
// then status, power down, status) and closes it. An op is the 100 offs,
// timed until the last is confirmed; alongside, untimed, one BMC is fenced
// alone the same way, and x-one reports the time of the 100 over the time
// of one. latency is a delay the BMCs add to every reply (a BMC's
// processing and the network; ipmi_sim's forked chassis-control script
// costs about 10 ms per power command): with none, the BMCs and the
// clients share this machine's CPUs, and the 100 offs cost 100 times the
// CPU of one.
//
// Before the runs with no latency, 100 sessions are opened one after the
// other and held: heap-B/session, stack-B/session and goroutines/session
// are what each costs this process, the reference BMC's session record
// included (go-ipmi's client runs one keep-alive goroutine per session).
func BenchmarkConcurrent100(b *testing.B) {
	const n = 100
	for _, latency := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			bmcs := make([]*ipmisim.GoBMC, n)
			for i := range bmcs {
				bmcs[i] = ipmisim.StartGoBMC(b, ipmisim.GoBMCOptions{ReplyDelay: latency})
			}
			var heap, stack, gor float64
			if latency == 0 {
				heap, stack, gor = sessionCost(b, bmcs)
			}

			fenceOne := func(g *ipmisim.GoBMC) (*Device, error) {
				d, err := New(Options{Host: ipmisim.Host, Port: g.Port, Username: g.User, Password: fence.NewSecret(g.Password)})
				if err != nil {
					return nil, err
				}
				m := &fence.Method{Name: "bench", Node: "n", Driver: "ipmi", Device: d}
				res, err := fence.Do(context.Background(), m, fence.ActionOff)
				if err == nil && (!res.Fenced() || res.Already) {
					err = fmt.Errorf("not fenced")
				}
				return d, err
			}
			var one, all time.Duration
			devs := make([]*Device, n)
			errs := make([]error, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bmcs[0].SetTruth(fence.StateOn)
				start := time.Now()
				d, err := fenceOne(bmcs[0])
				one += time.Since(start)
				if err != nil {
					b.Fatalf("one: %v", err)
				}
				d.Close()
				for _, g := range bmcs {
					g.SetTruth(fence.StateOn)
				}
				var wg sync.WaitGroup
				start = time.Now()
				b.StartTimer()
				for j, g := range bmcs {
					wg.Go(func() { devs[j], errs[j] = fenceOne(g) })
				}
				wg.Wait()
				b.StopTimer()
				all += time.Since(start)
				for j := range devs {
					if errs[j] != nil {
						b.Fatalf("bmc %d: %v", j, errs[j])
					}
				}
				closeAll(devs)
				b.StartTimer()
			}
			b.ReportMetric(float64(all)/float64(one), "x-one")
			b.ReportMetric(float64(one.Nanoseconds())/float64(b.N), "ns-one/op")
			if latency == 0 {
				b.ReportMetric(heap, "heap-B/session")
				b.ReportMetric(stack, "stack-B/session")
				b.ReportMetric(gor, "goroutines/session")
			}
		})
	}
}

// sessionCost opens one session to each BMC, holds them, and returns what
// each costs this process in heap, stack and goroutines.
func sessionCost(b *testing.B, bmcs []*ipmisim.GoBMC) (heap, stack, goroutines float64) {
	measure := func() (runtime.MemStats, int) {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m, runtime.NumGoroutine()
	}
	m0, g0 := measure()
	devs := make([]*Device, len(bmcs))
	for i, g := range bmcs {
		// One after the other: goroutines of their own would leave their
		// stacks in the measure.
		d, err := New(Options{Host: ipmisim.Host, Port: g.Port, Username: g.User, Password: fence.NewSecret(g.Password)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Status(context.Background(), ""); err != nil {
			b.Fatal(err)
		}
		devs[i] = d
	}
	m1, g1 := measure()
	closeAll(devs)
	k := float64(len(bmcs))
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / k,
		(float64(m1.StackInuse) - float64(m0.StackInuse)) / k,
		float64(g1-g0) / k
}

// closeAll closes devices concurrently.
func closeAll(devs []*Device) {
	var wg sync.WaitGroup
	for _, d := range devs {
		wg.Go(func() { d.Close() })
	}
	wg.Wait()
}
