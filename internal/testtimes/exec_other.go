//go:build !unix

package main

import (
	"os"
	"os/exec"
	"time"
)

// runMeasured runs name with args and returns its exit code; the CPU
// times are known on Unix only.
func runMeasured(name string, args []string) (code int, user, sys time.Duration, err error) {
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if cmd.ProcessState == nil {
			return 0, 0, 0, err
		}
	}
	return cmd.ProcessState.ExitCode(), cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime(), nil
}
