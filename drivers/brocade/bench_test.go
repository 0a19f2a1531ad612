package brocade

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
)

// BenchmarkFabricFence compares, side by side on one emulated switch (a
// real sshd whose forced command is the FOS emulator), one verified fabric
// fence of a port (status, portCfgPersistentDisable, status until off) by:
//
//   - tool=fence_brocade: ClusterLabs' agent, run as a process per fence
//     (as Pacemaker runs it): python, pexpect and OpenSSH's ssh, a login
//     by password each time;
//   - tool=fencectl: the built fencectl, run as a process per fence: a
//     new SSH connection and login by password each time;
//   - tool=fencekit-login: the library in this process, a new Device (so
//     a new connection and login) per fence, closed after it;
//   - tool=fencekit: the library in this process, on one Device whose
//     connection and CLI session every fence reuses (three commands per
//     fence);
//   - tool=fencekit-exec: the same with command_mode=exec (an SSH exec
//     request, hence a FOS login, per command).
//
// Only the fence is timed: putting the port back online between two
// fences is not. commands/op is the number of commands the library sent.
func BenchmarkFabricFence(b *testing.B) {
	agent := requireAgent(b)
	fencectl := buildFencectl(b)
	sw := start(b, brocadesim.Options{Ports: 16})
	const plug = "5"
	reset := func(b *testing.B) {
		b.StopTimer()
		if err := sw.SetTruth(plug, fence.StateOn); err != nil {
			b.Fatalf("reset port %s: %v", plug, err)
		}
		b.StartTimer()
	}
	process := func(b *testing.B, bin string, args []string) {
		for i := 0; i < b.N; i++ {
			reset(b)
			r := runProc(b, bin, args...)
			if r.code != 0 || r.stdout != "Success: Powered OFF\n" {
				b.Fatalf("%s off: exit %d, %q %q", bin, r.code, r.stdout, r.stderr)
			}
		}
	}
	inProcess := func(b *testing.B, mode Mode, reuse bool) {
		o := passwordOptions(sw)
		o.Mode = mode
		var d *Device
		var cmds int
		if reuse {
			d = openDevice(b, o)
			if _, err := d.Status(context.Background(), plug); err != nil { // the login, untimed
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			reset(b)
			if !reuse {
				var err error
				if d, err = New(o); err != nil {
					b.Fatal(err)
				}
			}
			before := d.Commands()
			res, err := fence.Do(context.Background(), method(d, plug), fence.ActionOff)
			if err != nil || !res.Fenced() || res.Already {
				b.Fatalf("off: %v", err)
			}
			cmds += d.Commands() - before
			if !reuse {
				d.Close()
			}
		}
		b.ReportMetric(float64(cmds)/float64(b.N), "commands/op")
	}
	b.Run("tool=fence_brocade", func(b *testing.B) { process(b, agent, agentArgs(sw, plug, "off", false)) })
	b.Run("tool=fencectl", func(b *testing.B) { process(b, fencectl, fencectlArgs(sw, plug, "off")) })
	b.Run("tool=fencekit-login", func(b *testing.B) { inProcess(b, ModeShell, false) })
	b.Run("tool=fencekit", func(b *testing.B) { inProcess(b, ModeShell, true) })
	b.Run("tool=fencekit-exec", func(b *testing.B) { inProcess(b, ModeExec, true) })
}
