package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCLI compares, side by side, an off then an on on a status file
// by the built fencectl and by fence_dummy, each run as a process: what a
// caller such as Pacemaker pays per action. Allocations are the benchmark
// process's (starting the child), not the child's.
func BenchmarkCLI(b *testing.B) {
	bin := buildFencectl(b)
	b.Run("tool=fencectl/action=off-on", func(b *testing.B) {
		f := filepath.Join(b.TempDir(), "status")
		b.ReportAllocs()
		for b.Loop() {
			for _, a := range []string{"off", "on"} {
				if r := runProc(b, nil, "", bin, "--driver", "fake", "--state-file", f, "-o", a); r.code != 0 {
					b.Fatalf("%s: exit %d: %s", a, r.code, r.stderr)
				}
			}
		}
	})
	b.Run("tool=fence_dummy/action=off-on", func(b *testing.B) {
		if _, err := os.Stat(dummyPath); err != nil {
			b.Skipf("%s is missing: install fence-agents", dummyPath)
		}
		f := filepath.Join(b.TempDir(), "status")
		env := []string{"PYTHONWARNINGS=ignore"}
		b.ReportAllocs()
		for b.Loop() {
			for _, a := range []string{"off", "on"} {
				if r := runProc(b, env, "", dummyPath, "--type", "file", "--status-file", f, "-o", a); r.code != 0 {
					b.Fatalf("%s: exit %d: %s", a, r.code, r.stderr)
				}
			}
		}
	})
}

// BenchmarkRunInProcess is the same off then on through the run function,
// without a process: fencectl's own cost.
func BenchmarkRunInProcess(b *testing.B) {
	f := filepath.Join(b.TempDir(), "status")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range []string{"off", "on"} {
			if code := run(ctx, []string{"fencectl", "--driver", "fake", "--state-file", f, "-o", a}, nil, io.Discard, io.Discard, noEnv); code != 0 {
				b.Fatalf("%s: exit %d", a, code)
			}
		}
	}
}
