//go:build !linux

package kubetest

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr has nothing to add outside Linux; the binaries that
// scripts/kube-binaries.sh builds are only tested there.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// startAndWait starts cmd and calls exited with Wait's result once it ends.
func startAndWait(cmd *exec.Cmd, exited func(error)) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { exited(cmd.Wait()) }()
	return nil
}

// signalGroup asks cmd to end, or kills it when kill is set.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}

// pauseGroup is not supported outside Linux.
func pauseGroup(*exec.Cmd, bool) error {
	return errors.New("kubetest: pausing a process is supported on Linux only")
}
