package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The exec mode passes the binary's exit status through and logs the CPU
// time of the binary and of what it started, against its directory.
func TestExecLogsCPU(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	log := filepath.Join(t.TempDir(), "cpu.log")
	// The child spins in a grandchild it waits for: its time counts.
	code := execMain([]string{log, "/bin/sh", "-c", "sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'; exit 3"})
	if code != 3 {
		t.Fatalf("exit code %d, want the binary's 3", code)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(b)), "\t")
	wd, _ := os.Getwd()
	if len(f) != 3 || f[0] != wd || f[1] == "0.000" && f[2] == "0.000" {
		t.Fatalf("log line %q: want this directory and the grandchild's CPU time", b)
	}

	s := &summary{packages: map[string]*result{"github.com/fencekit/fencekit/internal/testtimes": {name: "x"}}}
	// readCPU resolves directories against the module's root, where go.mod is.
	t.Chdir("../..")
	if err := s.readCPU(log); err != nil {
		t.Fatal(err)
	}
	if s.packages["github.com/fencekit/fencekit/internal/testtimes"].cpu <= 0 {
		t.Fatal("the package's CPU time was not read")
	}
	if d := s.packages["github.com/fencekit/fencekit/internal/testtimes"].cpu; d > time.Minute {
		t.Fatalf("CPU time %v", d)
	}
}

// A missing program is an error of the wrapper, not a test's failure code.
func TestExecMissingProgram(t *testing.T) {
	if code := execMain([]string{filepath.Join(t.TempDir(), "log"), "/nonexistent/prog"}); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if code := execMain([]string{"only-the-log"}); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
}
