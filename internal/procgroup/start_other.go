//go:build !linux

package procgroup

import (
	"os/exec"
	"syscall"
)

// SysProcAttr has nothing to add outside Linux.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// StartAndWait starts cmd and calls exited with Wait's result once it
// ends.
func StartAndWait(cmd *exec.Cmd, exited func(error)) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { exited(cmd.Wait()) }()
	return nil
}
