package testtool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	if _, ok := Find("sh"); !ok {
		t.Fatal("sh not found")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "fencekit-test-tool")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := Find("fencekit-test-tool", dir); ok {
		t.Fatal("a file that is not executable is not a program")
	}
	if err := os.Chmod(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, ok := Find("fencekit-test-tool", dir); !ok || got != p {
		t.Fatalf("Find = %q, %v; want %q", got, ok, p)
	}
	if _, ok := Find("fencekit-no-such-tool"); ok {
		t.Fatal("found a missing program")
	}
}
