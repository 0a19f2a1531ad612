//go:build !unix

package agent

import "os/exec"

// killGroup kills the agent alone where process groups are not available.
func killGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
