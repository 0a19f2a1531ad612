//go:build !unix

package fencegroup

import "os/exec"

// killGroup kills the command alone where process groups are not available.
func killGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
