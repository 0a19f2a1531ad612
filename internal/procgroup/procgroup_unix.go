//go:build unix

package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// KillGroup makes cmd the leader of a process group of its own, and makes
// its cancellation kill that whole group: the command and whatever it
// started (ipmitool, ssh, snmpget, a wrapper script's children), which
// would otherwise outlive it holding its output pipes.
func KillGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// A process already waited for has given up its ID, which may
		// name another group by now: leave it.
		if err := cmd.Process.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		gerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err := cmd.Process.Kill(); err != nil && gerr != nil {
			return err
		}
		return nil
	}
}
