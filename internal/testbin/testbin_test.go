package testbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A program found in FENCEKIT_TEST_BIN is taken as it is, without a build.
func TestPrebuiltTaken(t *testing.T) {
	pre := t.TempDir()
	want := filepath.Join(pre, "fencectl")
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, pre)
	got, err := Build("github.com/fencekit/fencekit/cmd/fencectl", t.TempDir())
	if err != nil || got != want {
		t.Fatalf("Build = %q, %v; want the prebuilt %q", got, err, want)
	}
}

// A program missing there is built, and a build that fails says which
// package.
func TestBuiltWhenMissing(t *testing.T) {
	t.Setenv(Env, t.TempDir())
	_, err := Build("github.com/fencekit/fencekit/internal/testbin/nosuchcommand", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "go build github.com/fencekit/fencekit/internal/testbin/nosuchcommand") {
		t.Fatalf("Build of a missing package: %v", err)
	}
}
