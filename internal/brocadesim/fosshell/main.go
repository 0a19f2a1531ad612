// Command fosshell is the Brocade Fabric OS command-line emulator that the
// brocadesim test harness installs as the forced command of its sshd:
//
//	fosshell STATEDIR
//
// See package fos for the commands and the state directory.
package main

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/fencekit/fencekit/internal/brocadesim/fos"
)

func main() {
	os.Exit(fos.MainDone(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, gone()))
}

// gone returns a channel closed when the session has ended: the reader of
// standard output went away (sshd closed its end, or the terminal hung
// up), or the parent process did.
func gone() <-chan struct{} {
	done := make(chan struct{})
	ppid := os.Getppid()
	go func() {
		defer close(done)
		for {
			fds := []unix.PollFd{{Fd: 1}}
			n, err := unix.Poll(fds, 100)
			if err != nil && err != unix.EINTR {
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				return
			}
			if os.Getppid() != ppid {
				return
			}
		}
	}()
	return done
}
