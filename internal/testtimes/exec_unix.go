//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// runMeasured runs name with args and returns its exit code and the user
// and system time of it and of the processes it waited for (wait4's
// resource usage).
func runMeasured(name string, args []string) (code int, user, sys time.Duration, err error) {
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, 0, 0, err
	}
	code = cmd.ProcessState.ExitCode()
	if code < 0 { // killed by a signal
		code = 2
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		user = time.Duration(ru.Utime.Nano())
		sys = time.Duration(ru.Stime.Nano())
	}
	return code, user, sys, nil
}
