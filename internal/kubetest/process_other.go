//go:build !linux

package kubetest

import (
	"errors"
	"os"
	"os/exec"
)

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
