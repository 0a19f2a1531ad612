// Package proctest runs programs for tests: the reference fence agents and
// the fencectl example built from this module, so that a driver's tests can
// compare both on the same simulated device.
package proctest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testbin"
)

// Timeout bounds one run of a program.
const Timeout = 60 * time.Second

// Result is what one run of a program printed and returned.
type Result struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
}

// Run runs bin with args, env added to the test's environment and
// PYTHONWARNINGS=ignore (the agents warn about a deprecated module on every
// run), for at most Timeout. A program that cannot be started fails t; a
// non-zero exit is a Result, not a failure.
func Run(t testing.TB, env []string, bin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "PYTHONWARNINGS=ignore"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String(), Took: time.Since(start)}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run %s: %v", bin, err)
		}
		r.Code = ee.ExitCode()
	}
	return r
}

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Fencectl builds cmd/fencectl once per test binary (or takes it prebuilt,
// see internal/testbin) and returns its path. When driver is not empty, it skips t unless that fencectl knows the
// driver, shown by option appearing in its --help for the driver. Call Main
// from the package's TestMain to remove the build.
func Fencectl(t testing.TB, driver, option string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fencectl-")
		if buildErr != nil {
			return
		}
		buildBin, buildErr = testbin.Build("github.com/fencekit/fencekit/cmd/fencectl", buildDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := buildBin
	if driver != "" {
		if r := Run(t, nil, bin, "--driver", driver, "--help"); r.Code != 0 || !strings.Contains(r.Stdout, option) {
			t.Skipf("this fencectl has no %s driver (cmd/fencectl/drivers.go does not import it): %s", driver, r.Stderr)
		}
	}
	return bin
}

// FencectlAs returns the built fencectl installed under name as well (a
// symbolic link in this test binary's build directory), so that it picks
// its driver by the agent's name, as the agents are invoked.
func FencectlAs(t testing.TB, name string) string {
	t.Helper()
	bin := Fencectl(t, "", "")
	link := filepath.Join(buildDir, name)
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(bin, link); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
	return link
}

// Main runs the tests of m, removes what Fencectl built, and exits.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// EqualsForm rewrites a command line of "--key value" pairs into the
// "--key=value" form that fence-agents-remediation builds from its
// templates. An option followed by another option (or by nothing) is a
// flag and stays bare, as that operator passes flags.
func EqualsForm(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}
