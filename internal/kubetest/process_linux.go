package kubetest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that stopping it
// stops everything it started, and has the kernel kill it if the thread that
// started it dies, so that a crashed test binary leaves nothing behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startAndWait starts cmd and calls exited with Wait's result once it ends.
// The parent-death signal fires when the starting OS thread exits, not the
// process, so the goroutine that starts the child keeps its thread locked
// until the child has been reaped.
func startAndWait(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}

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
