package kubetest

import (
	"os/exec"
	"syscall"
)

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to cmd's process
// group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// pauseGroup stops (SIGSTOP) or continues (SIGCONT) cmd's process group.
func pauseGroup(cmd *exec.Cmd, pause bool) error {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}
