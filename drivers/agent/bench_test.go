package agent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

// BenchmarkStatus measures one status read of fence_dummy (--type file)
// through the adapter (tool=adapter: stdin built and checked, process
// group, bounded output, parsing) and by running the agent directly with
// the same standard input and environment (tool=direct), so that the
// difference is the adapter's overhead. Both start a Python interpreter
// per read, which is most of the cost.
func BenchmarkStatus(b *testing.B) {
	path := requireAgent(b, "fence_dummy")
	file := filepath.Join(b.TempDir(), "status")
	if err := os.WriteFile(file, []byte("on"), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("tool=adapter", func(b *testing.B) {
		d, err := New(ctx, Options{Path: path, Params: fence.NewParams("type", "file", "status_file", file)})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.ReportAllocs()
		for b.Loop() {
			st, err := d.Status(ctx, "")
			if err != nil || st != fence.StateOn {
				b.Fatal(st, err)
			}
		}
	})
	b.Run("tool=direct", func(b *testing.B) {
		in := "type=file\nstatus_file=" + file + "\naction=status\n"
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(path)
			cmd.Env = baseEnv
			cmd.Stdin = bytes.NewReader([]byte(in))
			out, err := cmd.Output()
			if err != nil || string(out) != "Status: ON\n" {
				b.Fatal(string(out), err)
			}
		}
	})
}
