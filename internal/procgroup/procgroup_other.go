//go:build !unix

package procgroup

import "os/exec"

// KillGroup kills the command alone where process groups are not
// available.
func KillGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
