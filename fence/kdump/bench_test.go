package kdump_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence/kdump"
)

var sinkPacket kdump.Packet

// BenchmarkDecode measures Decode of a valid message in each byte order
// and of refused datagrams. The goal is a few nanoseconds and no
// allocation.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   []byte
	}{
		{"little-endian", kdump.Encode(kdump.NewPacket())},
		{"big-endian", kdump.Encode(kdump.Packet{Magic: kdump.Magic, Version: kdump.Version1, BigEndian: true})},
		{"bad-magic", make([]byte, kdump.Size)},
		{"bad-length", make([]byte, 64)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkPacket, _ = kdump.Decode(bc.in)
			}
		})
	}
}

// BenchmarkReceive measures the whole receive path on loopback: a Go client
// writes a message, the listener reads, decodes, resolves and records it,
// and OnMessage tells the benchmark, one message at a time (so the figure
// is a round of both goroutines and the kernel, not the listener's
// throughput). Allocations counted are the process's: the goal is none
// per message.
func BenchmarkReceive(b *testing.B) {
	var book kdump.AddressBook
	if err := book.Set("node-2", addr("127.0.0.1")); err != nil {
		b.Fatal(err)
	}
	seen := make(chan struct{}, 1)
	l, err := kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{
		Resolve:   book.Resolve,
		OnMessage: func(kdump.Message) { seen <- struct{}{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	conn, err := net.DialUDP("udp", nil, l.Addr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	msg := kdump.Encode(kdump.NewPacket())
	timer := time.NewTimer(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(msg); err != nil {
			b.Fatal(err)
		}
		timer.Reset(wait)
		select {
		case <-seen:
		case <-timer.C:
			b.Fatalf("message not received within %v", wait)
		}
	}
	if st := l.Stats(); st.Accepted == 0 || st.Accepted != st.Received {
		b.Fatalf("stats %+v", st)
	}
}

// BenchmarkDetect compares, side by side, how long it takes to see a node
// dumping once its kdump kernel sends: from the start of the real sender
// (fence_kdump_send -c 1 -f ipv4 -p PORT 127.0.0.1, a process per
// iteration, as a kdump kernel runs it) to the moment the node is seen
// dumping by
//
//   - tool=fencekit: a Listener on 127.0.0.1, started once: the span ends
//     when OnMessage has handed the message to the benchmark and Dumping
//     answers true. Forget, untimed, makes every message the first of a
//     new dump;
//   - tool=fence_kdump: ClusterLabs' agent (fence_kdump -n 127.0.0.1 -f
//     ipv4 -p PORT), started afresh for every iteration as Pacemaker runs
//     it, with its start untimed (the timer starts once its socket is
//     bound and it waits in select): the span ends when the benchmark
//     sees it exit 0, which it does on a valid message from the node's
//     address, after logging it through syslog(3) (to /dev/console where
//     no syslog daemon listens on /dev/log).
//
// Both spans hold the sender's fork and exec (os/exec Start), its run up
// to its sendto and the loopback delivery, then the receiver's wake-up and
// check, and a hand-over to the benchmark's goroutine (a channel from the
// listener's goroutine; the exit of the agent, reaped by a goroutine
// waiting on it). The sender's own exit is reaped untimed. Allocations are
// the benchmark process's: os/exec's in both, the Listener's besides.
func BenchmarkDetect(b *testing.B) {
	b.Run("tool=fencekit", func(b *testing.B) {
		sender := senderPath(b)
		var book kdump.AddressBook
		if err := book.Set("node-2", addr("127.0.0.1")); err != nil {
			b.Fatal(err)
		}
		seen := make(chan kdump.Message, 1)
		l, err := kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{
			Resolve: book.Resolve,
			OnMessage: func(m kdump.Message) {
				select {
				case seen <- m:
				default:
				}
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		_, port, err := net.SplitHostPort(l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		out := outputFile(b)
		timer := time.NewTimer(time.Hour)
		b.ReportAllocs()
		for b.Loop() {
			cmd := senderCommand(sender, port, out)
			if err := cmd.Start(); err != nil {
				b.Fatalf("start %s: %v", sender, err)
			}
			timer.Reset(wait)
			var m kdump.Message
			select {
			case m = <-seen:
			case <-timer.C:
				b.Fatalf("no message from %s within %v", sender, wait)
			}
			dumping, detail := l.Dumping("node-2", time.Now())
			b.StopTimer()
			if m.Err != nil || !m.NewDump || !dumping {
				b.Fatalf("message %+v: dumping %v, %s", m, dumping, detail)
			}
			reap(b, cmd, out)
			l.Forget("node-2")
			b.StartTimer()
		}
		if st := l.Stats(); st.Received != st.Accepted {
			b.Fatalf("stats %+v", st)
		}
	})

	b.Run("tool=fence_kdump", func(b *testing.B) {
		sender := senderPath(b)
		agent := agentPath(b)
		port := freeUDPPort(b)
		out, agentOut := outputFile(b), outputFile(b)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			rewind(b, agentOut)
			ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
			// -t bounds the agent's wait for the message (seconds).
			fk := exec.CommandContext(ctx, agent, "-n", "127.0.0.1", "-f", "ipv4", "-p", port, "-t", "10")
			fk.Stdout, fk.Stderr = agentOut, agentOut
			fk.WaitDelay = wait
			if err := fk.Start(); err != nil {
				cancel()
				b.Fatalf("start %s: %v", agent, err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = fk.Wait(); close(exited) }()
			if err := waitBound(fk.Process.Pid, port, exited); err != nil {
				cancel()
				<-exited
				b.Fatalf("%s: %v (wait: %v): %s", agent, err, waitErr, readAll(agentOut))
			}
			b.StartTimer()
			cmd := senderCommand(sender, port, out)
			if err := cmd.Start(); err != nil {
				b.Fatalf("start %s: %v", sender, err)
			}
			<-exited
			b.StopTimer()
			cancel()
			if waitErr != nil {
				b.Fatalf("%s did not take the message: %v: %s", agent, waitErr, readAll(agentOut))
			}
			reap(b, cmd, out)
			b.StartTimer()
		}
	})
}

// senderCommand returns the command that sends one message to
// 127.0.0.1:port, its output to out.
func senderCommand(sender, port string, out *os.File) *exec.Cmd {
	cmd := exec.Command(sender, "-c", "1", "-i", "1", "-f", "ipv4", "-p", port, "127.0.0.1")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = wait
	return cmd
}

// reap waits for the sender of cmd to exit 0, at most wait.
func reap(b *testing.B, cmd *exec.Cmd, out *os.File) {
	b.Helper()
	t := time.AfterFunc(wait, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	t.Stop()
	if err != nil {
		b.Fatalf("%s: %v: %s", cmd.Path, err, readAll(out))
	}
	rewind(b, out)
}

// defaultAgent is where Debian installs fence_kdump.
const defaultAgent = "/usr/sbin/fence_kdump"

// agentPath returns the path of the reference agent fence_kdump
// ($FENCE_KDUMP, which must exist when set; else the Debian path, or the
// PATH), or skips b when it is missing (fails b when the environment
// variable CI is "true").
func agentPath(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("FENCE_KDUMP"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			b.Fatalf("FENCE_KDUMP=%s is not a program (%v)", p, err)
		}
		return p
	}
	if st, err := os.Stat(defaultAgent); err == nil && !st.IsDir() {
		return defaultAgent
	}
	if p, err := exec.LookPath("fence_kdump"); err == nil {
		return p
	}
	msg := "fence_kdump is missing: install the Debian package fence-agents, or set FENCE_KDUMP"
	if os.Getenv("CI") == "true" {
		b.Fatal(msg)
	}
	b.Skip(msg)
	return ""
}

// outputFile returns a file for a program's output: a file, not a pipe,
// so that waiting for the program does not wait for a copy of its output.
func outputFile(b *testing.B) *os.File {
	b.Helper()
	f, err := os.CreateTemp(b.TempDir(), "out-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// rewind empties f for the next program's output.
func rewind(b *testing.B, f *os.File) {
	b.Helper()
	if err := f.Truncate(0); err != nil {
		b.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		b.Fatal(err)
	}
}

// readAll returns what f holds, for an error message.
func readAll(f *os.File) string {
	buf := make([]byte, 4096)
	n, _ := f.ReadAt(buf, 0)
	return strings.TrimSpace(string(buf[:n]))
}

// freeUDPPort returns a UDP port of 127.0.0.1 that was free a moment ago.
func freeUDPPort(b *testing.B) string {
	b.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_, port, err := net.SplitHostPort(c.LocalAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	return port
}

// waitBound waits (at most wait) until the process pid holds a UDP socket
// bound to port and sleeps waiting for it, as /proc tells: one of its
// descriptors is a socket whose inode /proc/net/udp lists with that local
// port, and its wait channel is the kernel's select and poll wait. The
// latter matters: between its bind and its select, fence_kdump logs its
// start through syslog(3), which without a syslog daemon writes to
// /dev/console (a few milliseconds here) and would otherwise land in the
// timed span. It fails early when the process exits (exited is closed).
func waitBound(pid int, port string, exited <-chan struct{}) error {
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	suffix := fmt.Sprintf(":%04X", p)
	deadline := time.Now().Add(wait)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 5*time.Millisecond) {
		if ok, err := boundUDP(pid, suffix); err != nil || ok && selecting(pid) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no UDP socket bound to port %s within %v", port, wait)
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before waiting on port %s", port)
		case <-time.After(pause):
		}
	}
}

// selecting reports whether pid sleeps in select, poll or epoll_wait
// (/proc/PID/wchan is poll_schedule_timeout, or do_select on older
// kernels). Where the kernel hides wait channels (wchan reads 0) it
// reports true: the bound socket is then all there is to wait for.
func selecting(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	if err != nil {
		return false
	}
	w := string(b)
	return w == "0" || strings.Contains(w, "poll_schedule_timeout") || strings.Contains(w, "select")
}

// boundUDP reports whether pid has a socket that /proc/net/udp lists with
// a local address ending in suffix (":PORT" in hexadecimal).
func boundUDP(pid int, suffix string) (bool, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, nil // gone, or not yet readable: the caller waits
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	table, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return false, fmt.Errorf("reading /proc/net/udp: %w", err)
	}
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) > 9 && strings.HasSuffix(f[1], suffix) && inodes[f[9]] {
			return true, nil
		}
	}
	return false, nil
}
