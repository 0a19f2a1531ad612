//go:build linux

package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fencekit/fencekit/internal/procgroup"
	"golang.org/x/sys/unix"
)

// The network namespace shim: a program that must listen on every
// interface (Cluster API's manager serves its webhooks so, with no flag for
// the address) runs in a network namespace of its own, whose only
// interface is its loopback, started by the test binary itself (the shim).
// Its TCP connections to the cluster go through a Unix socket in the
// shared file system, and the harness reaches its probes the same way.
const (
	shimEnv = "FENCEKIT_KUBETEST_NETNS_SHIM"
	// shimIn lists TCP addresses on the namespace's loopback whose
	// connections go to a Unix socket outside: "127.0.0.1:6443=/x.sock,...".
	shimInEnv = "FENCEKIT_KUBETEST_NETNS_IN"
	// shimOut lists Unix sockets whose connections go to a TCP address on
	// the namespace's loopback: "/y.sock=127.0.0.1:9440,...".
	shimOutEnv = "FENCEKIT_KUBETEST_NETNS_OUT"
)

// runShim runs the shim when this process is one (the test binary started
// by startInNetns): it never returns then.
func runShim() {
	if os.Getenv(shimEnv) == "" {
		return
	}
	os.Exit(shim(os.Args[1:]))
}

// shim brings the namespace's loopback up, relays the connections, and
// runs args, returning its exit code; SIGTERM is passed on.
func shim(args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "kubetest netns shim: %v\n", err)
		return 125
	}
	if len(args) == 0 {
		return fail(errors.New("no program to run"))
	}
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	for _, pair := range splitPairs(os.Getenv(shimInEnv)) {
		l, err := net.Listen("tcp", pair[0])
		if err != nil {
			return fail(err)
		}
		go relay(l, "unix", pair[1])
	}
	for _, pair := range splitPairs(os.Getenv(shimOutEnv)) {
		_ = os.Remove(pair[0])
		l, err := net.Listen("unix", pair[0])
		if err != nil {
			return fail(err)
		}
		go relay(l, "tcp", pair[1])
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = slicesWithout(os.Environ(), shimEnv, shimInEnv, shimOutEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return fail(err)
}

// loopbackUp sets the namespace's loopback interface up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// relay accepts connections on l and joins each to a new one to addr on
// network, until l is closed.
func relay(l net.Listener, network, addr string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d, err := net.Dial(network, addr)
			if err != nil {
				return
			}
			defer d.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(d, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, d); done <- struct{}{} }()
			<-done
		}()
	}
}

func splitPairs(s string) [][2]string {
	var out [][2]string
	for _, p := range strings.Split(s, ",") {
		if a, b, ok := strings.Cut(p, "="); ok {
			out = append(out, [2]string{a, b})
		}
	}
	return out
}

func slicesWithout(env []string, names ...string) []string {
	out := env[:0:0]
	for _, e := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(e, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

// netnsRelay is the outside end of a shim's connections: a Unix socket
// whose connections go to a TCP address of this namespace.
type netnsRelay struct{ l net.Listener }

func (r *netnsRelay) Close() error { return r.l.Close() }

// startInNetns starts path with args as startProcess does, in a network
// namespace of its own (and a user namespace that maps this user to root
// in it, when this process is not root): in lists TCP addresses the
// program dials, each relayed to the same address here through a Unix
// socket in dir; out lists TCP addresses it listens on, each reachable
// here through the Unix socket it is mapped to.
func startInNetns(name, path, logPath, dir string, in []string, out map[string]string, args ...string) (*process, []io.Closer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: %w", err)
	}
	var closers []io.Closer
	var inPairs, outPairs []string
	for i, addr := range in {
		sock := fmt.Sprintf("%s/in-%d.sock", dir, i)
		_ = os.Remove(sock)
		l, err := net.Listen("unix", sock)
		if err != nil {
			return nil, closers, fmt.Errorf("kubetest: %w", err)
		}
		closers = append(closers, &netnsRelay{l})
		go relay(l, "tcp", addr)
		inPairs = append(inPairs, addr+"="+sock)
	}
	for sock, addr := range out {
		outPairs = append(outPairs, sock+"="+addr)
	}
	env := append(os.Environ(), shimEnv+"=1", shimInEnv+"="+strings.Join(inPairs, ","), shimOutEnv+"="+strings.Join(outPairs, ","))
	attr := procgroup.SysProcAttr()
	attr.Cloneflags = unix.CLONE_NEWNET
	if os.Geteuid() != 0 {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	p, err := startProcessWith(name, self, logPath, env, attr, append([]string{path}, args...)...)
	return p, closers, err
}

// unixHTTPTransport dials sock for every request, whatever its URL.
func unixDialer(sock string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
}
