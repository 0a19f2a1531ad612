package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/fencekit/fencekit/internal/procgroup"
)

// process is one child program (etcd or kube-apiserver) with its output in a
// log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the program has exited and been reaped
	err     error         // Wait's result; read only after done is closed
}

// startProcess starts path with args in its own process group, its stdout and
// stderr going to logPath.
func startProcess(name, path, logPath string, args ...string) (*process, error) {
	return startProcessWith(name, path, logPath, nil, procgroup.SysProcAttr(), args...)
}

// startProcessWith is startProcess with the child's environment (nil:
// this process's) and attributes.
func startProcessWith(name, path, logPath string, env []string, attr *syscall.SysProcAttr, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %s log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	cmd.SysProcAttr = attr
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	err = procgroup.StartAndWait(cmd, func(werr error) {
		p.err = werr
		_ = logFile.Close()
		close(p.done)
	})
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("kubetest: starting %s: %w", name, err)
	}
	return p, nil
}

// exited reports whether the program has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the program's process group to end (SIGTERM), kills it (SIGKILL)
// when it has not ended within grace (at once when grace is not positive),
// and waits at most 10 s more for it to be reaped.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if grace > 0 {
		signalGroup(p.cmd, false)
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
		}
	}
	signalGroup(p.cmd, true)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kubetest: %s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// logTail returns at most the last n lines of the program's log.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	b = bytes.TrimRight(b, "\n")
	for i, cut := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			cut++
			if cut == n {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// exitError describes how the program ended, with the end of its log.
func (p *process) exitError() error {
	return fmt.Errorf("kubetest: %s exited early (%v); last lines of %s:\n%s",
		p.name, p.err, p.logPath, p.logTail(30))
}

// errAddrInUse reports that a program could not bind the port picked for it;
// starting again on other ports may succeed.
var errAddrInUse = errors.New("kubetest: port taken by another program")
