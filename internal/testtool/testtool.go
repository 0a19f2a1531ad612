// Package testtool finds the programs the integration tests run (the
// reference agents, the simulators' daemons, promtool), and skips a test
// whose program is missing, or fails it under CI=true, where every peer
// must be there.
package testtool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// dirs are searched after PATH: agents and daemons live in sbin, which a
// user's PATH may lack.
var dirs = []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}

// Find returns the path of program name: on PATH, else in the sbin and bin
// directories, else in extra directories.
func Find(name string, extra ...string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range append(dirs[:len(dirs):len(dirs)], extra...) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// Require returns the path of program name, or, when it is missing, skips
// t (fails it when the environment has CI=true) with a message that names
// the Debian package pkg that has it.
func Require(t testing.TB, name, pkg string, extra ...string) string {
	t.Helper()
	if p, ok := Find(name, extra...); ok {
		return p
	}
	Missing(t, "%s is missing: install the Debian package %s", name, pkg)
	return ""
}

// Missing skips t, or fails it under CI=true, with the message.
func Missing(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Timeout returns a context for one step of t, ended after d or by t's
// cleanup, whichever comes first. It is not t.Context(), which ends before
// t's other cleanups run: a cleanup given it may still use it.
func Timeout(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}
