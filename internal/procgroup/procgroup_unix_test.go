//go:build unix

package procgroup

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A cancelled command takes what it started with it: a shell's background
// sleep does not outlive the shell.
func TestKillGroupKillsWhatTheCommandStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $!; wait")
	KillGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The child is gone, or a zombie waiting for init to reap it.
		if err := syscall.Kill(child, 0); errors.Is(err, syscall.ESRCH) || zombie(child) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's child %d outlived the cancelled shell", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether process pid has ended and waits to be reaped.
func zombie(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}
