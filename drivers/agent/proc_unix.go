//go:build unix

package agent

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// killGroup makes the agent the leader of a process group of its own, and
// makes the command's cancellation kill that whole group: the agent and
// whatever it started (ipmitool, ssh, snmpget, a shell's sleep), which
// would otherwise outlive it holding its output pipes.
func killGroup(cmd *exec.Cmd) {
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
