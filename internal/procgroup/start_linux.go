package procgroup

import (
	"os/exec"
	"runtime"
	"syscall"
)

// SysProcAttr puts a child in its own process group, so that stopping it
// stops everything it started, and has the kernel kill it if the thread
// that started it dies. Start it with StartAndWait.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// StartAndWait starts cmd and calls exited with Wait's result once it
// ends. The parent-death signal fires when the starting OS thread exits,
// not the process, so the goroutine that starts the child keeps its thread
// locked until the child has been reaped.
func StartAndWait(cmd *exec.Cmd, exited func(error)) error {
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
