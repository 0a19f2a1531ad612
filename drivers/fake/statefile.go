package fake

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// maxStateFile bounds what is read of a state file: a valid one holds three
// bytes at most.
const maxStateFile = 64

// readStateFile reads a state file as fence_dummy --type file does: a
// missing file is off; the content, in any case, must be exactly "on" or
// "off" (fence_dummy accepts no white space either, not even a newline).
func readStateFile(path string) (fence.State, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fence.StateOff, nil
	}
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("state file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile))
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("state file: %w", err)
	}
	return ParseStateFile(b)
}

// ParseStateFile parses the content of a fence_dummy state file: "on" or
// "off" in any case, with nothing else, not even white space. Anything else
// is fence.StateUnknown with an error wrapping fence.ErrBadState, never a
// guess. (A missing file, which fence_dummy reads as off, is not for this
// function to decide.)
func ParseStateFile(b []byte) (fence.State, error) {
	switch strings.ToLower(string(b)) {
	case "on":
		return fence.StateOn, nil
	case "off":
		return fence.StateOff, nil
	}
	shown := string(b)
	if len(shown) > 16 {
		shown = shown[:16] + "..."
	}
	return fence.StateUnknown, fmt.Errorf("state file holds %q: %w", shown, fence.ErrBadState)
}

// writeStateFile replaces the state file with "on" or "off", no newline,
// as fence_dummy writes it. It writes a temporary file beside it and
// renames it over the old one, so that a reader sees the old state or the
// new one, never a partial write. The file keeps its permissions, or gets
// 0644 (fence_dummy's, under the usual umask) when new.
func writeStateFile(path string, s fence.State) error {
	if !s.Known() {
		return fmt.Errorf("state file: cannot write state %v", s)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.WriteString(s.String())
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}
