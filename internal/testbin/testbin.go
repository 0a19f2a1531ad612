// Package testbin gives tests the module's programs they run as processes
// (fencectl, the node agent, kubectl-fence, the reference BMC and FC
// switch simulators): built with the running toolchain's go command, or,
// when the environment variable FENCEKIT_TEST_BIN names a directory holding
// the program, taken from there. scripts/test-times.sh (and so make test)
// builds them all there in one go build before the tests, which links each
// once instead of once per test binary or per test.
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
)

// Env names the directory of prebuilt programs.
const Env = "FENCEKIT_TEST_BIN"

// Build returns the path of the program of the package pkg (an import
// path; the program is named as its last element): the prebuilt one in
// $FENCEKIT_TEST_BIN when there is one, else one built now into dir, with
// env added to the go command's environment (CGO_ENABLED=0, say).
func Build(pkg, dir string, env ...string) (string, error) {
	name := path.Base(pkg)
	if pre := os.Getenv(Env); pre != "" {
		p := filepath.Join(pre, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command(goBin, "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v: %s", pkg, err, bytes.TrimSpace(out))
	}
	return bin, nil
}
