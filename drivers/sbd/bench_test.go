package sbd_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
)

// BenchmarkPoisonPill compares, side by side on one loop device the real
// sbd created (msgwait 1 s), a verified poison pill: the off message
// written and the node confirmed off, by fencekit in-process (fence.Do on
// the device, kept open), by the built fencectl as fence_sbd (a process),
// and by fence_sbd (a process, which runs sbd message). The mailbox is
// cleared between runs, untimed. Every tool's floor is msgwait: the
// difference is what each adds to it.
//
//	go test ./drivers/sbd -run '^$' -bench PoisonPill -benchtime 2x -count 6
func BenchmarkPoisonPill(b *testing.B) {
	dev := benchLoopDevice(b)
	ctx := context.Background()
	clearSlot := func() {
		b.StopTimer()
		if err := sbd.SendMessage(ctx, dev, "node-a", sbd.MessageClear, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}

	b.Run("tool=fencekit", func(b *testing.B) {
		d, err := sbd.New(ctx, sbd.Options{Devices: []string{dev}})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		m := &fence.Method{Name: "sbd", Node: "node-a", Driver: "sbd", Device: d, Plug: "node-a",
			Options: fence.Options{PowerTimeout: 10 * time.Second, PollInterval: 50 * time.Millisecond}}
		b.ReportAllocs()
		for b.Loop() {
			clearSlot()
			if res, err := fence.Do(ctx, m, fence.ActionOff); err != nil || !res.Fenced() {
				b.Fatalf("off: %v", err)
			}
		}
	})
	b.Run("tool=fencectl", func(b *testing.B) {
		bin := fencectlAs(b, "fence_sbd")
		b.ReportAllocs()
		for b.Loop() {
			clearSlot()
			if out, err := exec.Command(bin, "--devices", dev, "-n", "node-a", "-o", "off", "--power-timeout", "10").CombinedOutput(); err != nil {
				b.Fatalf("fencectl off: %v: %s", err, out)
			}
		}
	})
	b.Run("tool=fence_sbd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clearSlot()
			cmd := exec.Command("/usr/sbin/fence_sbd", "--devices", dev, "-n", "node-a", "-o", "off", "--power-timeout", "10")
			cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("fence_sbd off: %v: %s", err, out)
			}
		}
	})
}

// benchLoopDevice makes the loop device of the benchmark, with the real
// sbd's header (msgwait 1 s) and node-a's slot.
func benchLoopDevice(b *testing.B) string {
	for _, p := range []string{sbdPath, "/usr/sbin/fence_sbd"} {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%s is missing", p)
		}
	}
	f := b.TempDir() + "/sbd.img"
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(f, 4<<20); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", f).Output()
	if err != nil {
		b.Skipf("no loop device: %v", err)
	}
	dev := string(out[:len(out)-1])
	b.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	for _, args := range [][]string{{"-d", dev, "-1", "1", "-4", "1", "create"}, {"-d", dev, "allocate", "node-a"}} {
		if out, err := exec.Command(sbdPath, args...).CombinedOutput(); err != nil {
			b.Fatalf("sbd %v: %v: %s", args, err, out)
		}
	}
	return dev
}
