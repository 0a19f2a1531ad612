// Package brocadesim runs an emulated Brocade FC switch for tests: a real
// OpenSSH sshd (Debian's openssh-server) on a free TCP port of 127.0.0.1,
// with its own configuration and host key, whose only user is a dedicated
// system account (User) with a password and an authorized key, and whose
// forced command is a Fabric OS command-line emulator (package fos, built
// from ./fosshell once per test binary). Clients log in with a password or
// the client key, and verify the switch's host key with the known_hosts
// file or the fingerprint the Switch gives.
//
//	sw := brocadesim.Start(t, brocadesim.Options{Ports: 8})
//	// ssh -p sw.Port -o UserKnownHostsFile=sw.KnownHosts fencekit-fc@127.0.0.1 switchshow
//	st, _ := sw.Truth("3") // fence.StateOn: port 3 is enabled
//
// Start needs root (it creates the system user and runs sshd) and
// /usr/sbin/sshd; without them it skips the test, or fails it when the
// environment has CI=true. Everything it starts is stopped, and everything
// it writes is removed, when the test ends; the system user stays.
package brocadesim

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim/fos"
	"github.com/fencekit/fencekit/internal/procgroup"
	"github.com/fencekit/fencekit/internal/testbin"
	"github.com/fencekit/fencekit/internal/testtool"
)

// The switch's login. The account is shared by every Switch of the
// machine, so its password is fixed: setting a per-switch password would
// race between test binaries that run at the same time.
const (
	// User is the system account the switch's sshd lets in.
	User = "fencekit-fc"
	// Password is User's password.
	Password = "fc-Sim-pass-4711"
	// Host is the address every Switch listens on.
	Host = "127.0.0.1"
	// SSHD is the OpenSSH server the harness runs.
	SSHD = "/usr/sbin/sshd"
)

// Bounds of the harness.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 3 * time.Second
	portTries    = 3
)

// Options configure a Switch. The zero value gives 16 enabled ports on a
// switch named fcsim, with no banner.
type Options struct {
	// Ports is the number of ports (0 to Ports-1). Default 16.
	Ports int
	// Name is the switch name (prompt and switchshow). Default fcsim.
	Name string
	// Banner is printed by the shell before its first prompt, as FOS
	// prints its login notices.
	Banner string
	// SSHBanner is sent by sshd before authentication (its Banner file).
	SSHBanner string
	// OddWhitespace makes the shell print tabs, runs of blanks, "\r\r\n"
	// line ends and blank lines, even inside switchshow's port table.
	OddWhitespace bool
	// Echo makes the shell print each command line back, as a terminal
	// with echo on does.
	Echo bool
	// Director lays the switch out as a director: switchshow has a Slot
	// column and port commands take slot/port (see fos.Config).
	Director bool
	// Fault is a misbehaviour in force from the start (see SetFault).
	Fault fos.Fault
	// Disabled lists ports that start persistently disabled (fenced).
	Disabled []int
}

// Switch is a running emulated switch.
type Switch struct {
	// Port is the TCP port sshd listens on, on Host.
	Port int
	// Dir is the state directory: configuration, keys, the emulator,
	// the ports' state and the logs (sshd.log, commands.log).
	Dir string
	// User and Password are the login.
	User, Password string
	// KnownHosts is a known_hosts file with the switch's host key for
	// [127.0.0.1]:Port.
	KnownHosts string
	// HostKey is the switch's host key (ed25519).
	HostKey ssh.PublicKey
	// Fingerprint is the host key's SHA256 fingerprint ("SHA256:..."), as
	// ssh-keygen -l prints it.
	Fingerprint string
	// ClientKey is the path of an unencrypted private key (OpenSSH
	// format) that the switch authorizes for User.
	ClientKey string
	// Ports is the number of ports.
	Ports int

	director bool
	srv      *inproc // Serve's server; nil for sshd
	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
}

// Require returns the path of a program the tests need (such as
// fence_brocade or ssh), or skips t when it is missing; under CI=true it
// fails t instead. pkg names the Debian package that has it.
func Require(t testing.TB, name, pkg string) string {
	t.Helper()
	return testtool.Require(t, name, pkg)
}

// missing skips t, or fails it under CI=true.
func missing(t testing.TB, format string, a ...any) {
	t.Helper()
	testtool.Missing(t, "brocadesim: "+format, a...)
}

// Start starts a switch and stops it when t ends. See the package
// documentation for what it needs.
func Start(t testing.TB, o Options) *Switch {
	t.Helper()
	if st, err := os.Stat(SSHD); err != nil || st.IsDir() {
		missing(t, "%s is missing: install the Debian package openssh-server", SSHD)
	}
	if os.Geteuid() != 0 {
		missing(t, "not root: the emulated switch needs a system user (%s) and an sshd run as root", User)
	}
	if o.Ports <= 0 {
		o.Ports = 16
	}
	if err := ensureUser(); err != nil {
		t.Fatalf("brocadesim: %v", err)
	}
	shellBin, err := buildShell()
	if err != nil {
		t.Fatalf("brocadesim: %v", err)
	}
	dir, err := os.MkdirTemp(tempBase(), "fencekit-fcsim-")
	if err != nil {
		t.Fatalf("brocadesim: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Switch{Dir: dir, User: User, Password: Password, Ports: o.Ports, director: o.Director}
	if err := s.prepare(o, shellBin, true); err != nil {
		t.Fatalf("brocadesim: set up %s: %v", dir, err)
	}
	return testtool.StartOnFreePort(t, "brocadesim: sshd", portTries, func() (*Switch, error) { return s, s.start() })
}

// tempBase returns a directory that the switch's user can traverse, to
// hold the state directory: sshd reads authorized_keys, and the emulator
// its state, as that user.
func tempBase() string {
	base := os.TempDir()
	for d := base; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

var (
	userOnce sync.Once
	userErr  error
)

// ensureUser creates User if it is missing and sets its password, once
// per process. Another test binary may do the same at the same time: a
// useradd that loses the race, and a chpasswd that finds the password
// files locked, are tried again.
func ensureUser() error {
	userOnce.Do(func() {
		if _, err := user.Lookup(User); err != nil {
			out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/",
				"--shell", "/bin/sh", "--comment", "fencekit emulated FC switch", User).CombinedOutput()
			if err != nil {
				if _, lerr := user.Lookup(User); lerr != nil {
					userErr = fmt.Errorf("useradd %s: %v: %s", User, err, bytes.TrimSpace(out))
					return
				}
			}
		}
		var last error
		for try := 0; try < 20; try++ {
			cmd := exec.Command("chpasswd")
			cmd.Stdin = strings.NewReader(User + ":" + Password + "\n")
			out, err := cmd.CombinedOutput()
			if err == nil {
				return
			}
			last = fmt.Errorf("chpasswd for %s: %v: %s", User, err, bytes.TrimSpace(out))
			time.Sleep(100 * time.Millisecond)
		}
		userErr = last
	})
	return userErr
}

var (
	buildOnce sync.Once
	shellBin  []byte
	buildErr  error
)

// shellPkg is the emulator program.
const shellPkg = "github.com/fencekit/fencekit/internal/brocadesim/fosshell"

// buildShell builds the emulator (static: CGO_ENABLED=0) once per process,
// or takes it prebuilt (internal/testbin), and returns the binary.
func buildShell() ([]byte, error) {
	buildOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "fencekit-fosshell-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(tmp)
		bin, err := testbin.Build(shellPkg, tmp, "CGO_ENABLED=0")
		if err != nil {
			buildErr = err
			return
		}
		shellBin, buildErr = os.ReadFile(bin)
	})
	return shellBin, buildErr
}

// prepare writes the keys, the emulator (when bin is given), its state
// and configuration; with chown, it gives the files the emulator writes
// to User.
func (s *Switch) prepare(o Options, bin []byte, chown bool) error {
	uid, gid := 0, 0
	if chown {
		var err error
		if uid, gid, err = lookupIDs(); err != nil {
			return err
		}
	}
	hostPub, err := writeKey(filepath.Join(s.Dir, "ssh_host_ed25519_key"))
	if err != nil {
		return err
	}
	s.HostKey = hostPub
	s.Fingerprint = ssh.FingerprintSHA256(hostPub)
	s.ClientKey = filepath.Join(s.Dir, "client_key")
	clientPub, err := writeKey(s.ClientKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o644); err != nil {
		return err
	}
	if bin != nil {
		if err := os.WriteFile(filepath.Join(s.Dir, "fosshell"), bin, 0o755); err != nil {
			return err
		}
	}
	if o.SSHBanner != "" {
		if err := os.WriteFile(filepath.Join(s.Dir, "banner"), []byte(o.SSHBanner), 0o644); err != nil {
			return err
		}
	}
	cfg := fos.Config{Ports: o.Ports, Name: o.Name, Banner: o.Banner, OddWhitespace: o.OddWhitespace, Echo: o.Echo, Director: o.Director, Fault: o.Fault}
	if err := fos.WriteConfig(s.Dir, cfg); err != nil {
		return err
	}
	st := make(map[int]fos.Port, o.Ports)
	for i := 0; i < o.Ports; i++ {
		st[i] = fos.Port{}
	}
	for _, p := range o.Disabled {
		if p < 0 || p >= o.Ports {
			return fmt.Errorf("Options.Disabled: port %d out of range", p)
		}
		st[p] = fos.Port{Disabled: true, Persistent: true}
	}
	if err := fos.WritePorts(s.Dir, st); err != nil {
		return err
	}
	for _, name := range []string{fos.StateFile, fos.LockFile, fos.CommandsFile, fos.EventsFile} {
		p := filepath.Join(s.Dir, name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Close()
		if chown {
			if err := os.Chown(p, uid, gid); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		return err
	}
	if chown {
		return os.Chown(s.Dir, uid, gid)
	}
	return nil
}

func lookupIDs() (int, int, error) {
	u, err := user.Lookup(User)
	if err != nil {
		return 0, 0, err
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %s: uid %q gid %q", User, u.Uid, u.Gid)
	}
	return uid, gid, nil
}

// writeKey writes a new ed25519 key pair, the private key (mode 0600) to
// path in OpenSSH's format and the public key to path.pub.
func writeKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "fencekit-fcsim")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return sp, os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644)
}

// errPortTaken means sshd could not bind its port: another one is tried.
var errPortTaken = testtool.ErrPortTaken

// sshdConfig is the server's configuration.
func (s *Switch) sshdConfig() string {
	banner := "none"
	if _, err := os.Stat(filepath.Join(s.Dir, "banner")); err == nil {
		banner = filepath.Join(s.Dir, "banner")
	}
	return fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s/ssh_host_ed25519_key
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication yes
PermitEmptyPasswords no
PubkeyAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers %s
ForceCommand %s/fosshell %s
PermitTTY yes
PrintMotd no
PrintLastLog no
Banner %s
UseDNS no
DisableForwarding yes
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
PermitTunnel no
PermitUserEnvironment no
MaxStartups 100:30:200
MaxSessions 64
LoginGraceTime 30
ClientAliveInterval 0
LogLevel INFO
`, s.Port, Host, s.Dir, s.Dir, s.Dir, User, s.Dir, s.Dir, banner)
}

// start starts sshd on a free port and waits until it accepts.
func (s *Switch) start() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	conf := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(s.sshdConfig()), 0o644); err != nil {
		return err
	}
	kh := knownHostsLine(s) + "\n"
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	if err := os.WriteFile(s.KnownHosts, []byte(kh), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(s.Dir, "sshd.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if !portFree(port) {
		logf.Close()
		return fmt.Errorf("%w: %d/tcp was taken before the start", errPortTaken, port)
	}
	cmd := exec.Command(SSHD, "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procgroup.SysProcAttr()
	s.cmd, s.exited = cmd, make(chan struct{})
	s.stopOnce = sync.Once{}
	if err := procgroup.StartAndWait(cmd, func(error) { logf.Close(); close(s.exited) }); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", SSHD, err)
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("Address already in use")) {
			return fmt.Errorf("%w: port %d: %s", errPortTaken, port, bytes.TrimSpace(log))
		}
		return fmt.Errorf("port %d: %v; sshd.log: %s", port, err, bytes.TrimSpace(log))
	}
	return nil
}

// knownHostsLine is the known_hosts line of the switch's host key.
func knownHostsLine(s *Switch) string {
	return knownhosts.Line([]string{net.JoinHostPort(Host, strconv.Itoa(s.Port))}, s.HostKey)
}

// waitReady waits until sshd sends its identification, or exits.
func (s *Switch) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("sshd exited")
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			line, rerr := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if rerr == nil && strings.HasPrefix(line, "SSH-2.0-OpenSSH") {
				return nil
			}
			last = fmt.Errorf("identification %q: %v", line, rerr)
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not ready within %v: %v", startTimeout, last)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp4", net.JoinHostPort(Host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp4", net.JoinHostPort(Host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Addr returns the switch's host:port.
func (s *Switch) Addr() string { return net.JoinHostPort(Host, strconv.Itoa(s.Port)) }

// Stop stops sshd and every process it started (the connections' sshd
// processes and the emulators), SIGTERM first and SIGKILL after 3 s. It is
// safe to call more than once; Start calls it when the test ends.
func (s *Switch) Stop() {
	s.stopOnce.Do(func() {
		if s.srv != nil {
			s.srv.close()
			os.RemoveAll(s.Dir)
			return
		}
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		pid := s.cmd.Process.Pid
		// The deepest processes first, so that each is reaped by its
		// parent, and sshd last.
		levels := descendantLevels(pid)
		var all []int
		for i := len(levels) - 1; i >= 0; i-- {
			signalAll(levels[i], syscall.SIGTERM)
			waitGone(levels[i], time.Second)
			all = append(all, levels[i]...)
		}
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-s.exited
		}
		signalAll(all, syscall.SIGKILL)
		emus := s.emulators()
		signalAll(emus, syscall.SIGKILL)
		waitGone(emus, stopTimeout)
	})
}

// DropConnections ends every connection to the switch at once, as a
// switch that restarts its SSH service does: the processes sshd runs for
// them are killed, the deepest first. sshd itself keeps listening.
func (s *Switch) DropConnections() {
	if s.srv != nil {
		s.srv.dropAll()
		return
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	levels := descendantLevels(s.cmd.Process.Pid)
	for i := len(levels) - 1; i >= 0; i-- {
		signalAll(levels[i], syscall.SIGKILL)
		waitGone(levels[i], stopTimeout)
	}
}

// procs returns the parent of every process.
func procs() map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = ppid
		}
	}
	return out
}

// descendantLevels returns the processes descended from pid, by
// generation: its children first, then theirs.
func descendantLevels(pid int) [][]int {
	parent := procs()
	var levels [][]int
	frontier := []int{pid}
	for n := 0; len(frontier) > 0 && n < 64; n++ {
		var next []int
		for c, pp := range parent {
			for _, p := range frontier {
				if pp == p {
					next = append(next, c)
				}
			}
		}
		if len(next) > 0 {
			levels = append(levels, next)
		}
		frontier = next
	}
	return levels
}

// emulators returns the emulator processes of this switch, found by their
// command line, which names the state directory.
func (s *Switch) emulators() []int {
	var out []int
	want := []byte(filepath.Join(s.Dir, "fosshell"))
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, want) {
			out = append(out, pid)
		}
	}
	return out
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		_ = syscall.Kill(p, sig)
	}
}

// waitGone waits until the processes have exited, for at most d.
func waitGone(pids []int, d time.Duration) {
	deadline := time.Now().Add(d)
	for _, p := range pids {
		for time.Now().Before(deadline) {
			if syscall.Kill(p, 0) != nil {
				break
			}
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); err == nil {
				if i := bytes.LastIndexByte(b, ')'); i >= 0 && len(b) > i+2 && b[i+2] == 'Z' {
					break // a zombie, reaped by its parent in time
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// portIndex reads a plug: a port index, or slot/port on a director.
func (s *Switch) portIndex(plug string) (int, error) {
	plug = strings.TrimSpace(plug)
	if slot, port, ok := strings.Cut(plug, "/"); ok && s.director {
		sl, err1 := strconv.Atoi(slot)
		pn, err2 := strconv.Atoi(port)
		if err1 == nil && err2 == nil && sl >= 1 && pn >= 0 && pn < fos.PortsPerSlot {
			if i := (sl-1)*fos.PortsPerSlot + pn; i < s.Ports {
				return i, nil
			}
		}
	} else if n, err := strconv.Atoi(plug); err == nil && n >= 0 && n < s.Ports {
		return n, nil
	}
	return 0, fmt.Errorf("brocadesim: no port %q: %w", plug, fence.ErrUnknownPlug)
}

// Truth returns a port's state as the switch holds it: fence.StateOff
// when it is disabled (persistently or not), fence.StateOn when enabled.
// plug is a port index, or slot/port on a director.
func (s *Switch) Truth(plug string) (fence.State, error) {
	i, err := s.portIndex(plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	unlock, err := fos.Lock(s.Dir)
	if err != nil {
		return fence.StateUnknown, err
	}
	defer unlock()
	st, err := fos.ReadPorts(s.Dir, s.Ports)
	if err != nil {
		return fence.StateUnknown, err
	}
	if st[i].Disabled || st[i].Persistent {
		return fence.StateOff, nil
	}
	return fence.StateOn, nil
}

// SetTruth enables a port (fence.StateOn) or disables it persistently
// (fence.StateOff), behind the emulator's back.
func (s *Switch) SetTruth(plug string, st fence.State) error {
	if !st.Known() {
		return fmt.Errorf("brocadesim: SetTruth wants on or off, not %v", st)
	}
	off := st == fence.StateOff
	return s.setPort(plug, fos.Port{Disabled: off, Persistent: off})
}

// setPort sets a port's flags under the emulator's lock.
func (s *Switch) setPort(plug string, p fos.Port) error {
	i, err := s.portIndex(plug)
	if err != nil {
		return err
	}
	unlock, err := fos.Lock(s.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	ports, err := fos.ReadPorts(s.Dir, s.Ports)
	if err != nil {
		return err
	}
	ports[i] = p
	return fos.WritePorts(s.Dir, ports)
}

// PortFlags returns a port's disable flags as the switch holds them: disabled,
// and persistently so.
func (s *Switch) PortFlags(plug string) (disabled, persistent bool, err error) {
	i, err := s.portIndex(plug)
	if err != nil {
		return false, false, err
	}
	unlock, err := fos.Lock(s.Dir)
	if err != nil {
		return false, false, err
	}
	defer unlock()
	st, err := fos.ReadPorts(s.Dir, s.Ports)
	if err != nil {
		return false, false, err
	}
	return st[i].Disabled, st[i].Persistent, nil
}

// DisableNow disables a port only for now, as FOS's portdisable does
// (switchshow: Disabled; portshow: DISABLED without PERSISTENT_DISABLE),
// behind the emulator's back.
func (s *Switch) DisableNow(plug string) error {
	return s.setPort(plug, fos.Port{Disabled: true})
}

// Configure changes the switch's configuration; sessions see the change
// from their next command on.
func (s *Switch) Configure(change func(*fos.Config)) error {
	c, err := fos.ReadConfig(s.Dir)
	if err != nil {
		return err
	}
	change(&c)
	return fos.WriteConfig(s.Dir, c)
}

// SetFault puts a fault in force (fos.NoFault to end it), from the
// sessions' next command on.
func (s *Switch) SetFault(f fos.Fault) error {
	return s.Configure(func(c *fos.Config) { c.Fault = f })
}

// Commands returns the command lines the switch received so far, in
// order, words separated by one space.
func (s *Switch) Commands() ([]string, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, fos.CommandsFile))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if _, cmd, ok := strings.Cut(l, "\t"); ok {
			out = append(out, cmd)
		}
	}
	return out, nil
}

// Logins returns how many logins (by password or key) the switch accepted
// so far: for sshd, its log's "Accepted" lines.
func (s *Switch) Logins() int {
	if s.srv != nil {
		return int(s.srv.logins.Load())
	}
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return bytes.Count(b, []byte("Accepted "))
}
