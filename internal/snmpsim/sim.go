// Package snmpsim runs simulated switched PDUs for the tests and benchmarks
// of the SNMP PDU drivers: net-snmp's snmpd, in the foreground, on a free
// UDP port of 127.0.0.1, with a configuration of its own (no /etc/snmp, its
// own persistent directory), SNMPv1 and v2c communities and SNMPv3 users,
// and a pass_persist handler that serves the outlet objects of one PDU
// model, so that a SET of an outlet's command really changes what its state
// object reports.
//
// The handler is the test binary itself (see the package's init): no build
// and no interpreter are needed, only snmpd (Debian package snmpd). The
// outlets' states live in a JSON file of the simulator's directory, which
// Truth and SetTruth read and write, beside a log of the SETs the handler
// received. A missing snmpd skips the test, or fails it when the
// environment variable CI is "true".
//
// NewResponder runs the same models in the test process instead (SNMPv1
// and v2c only, no snmpd), for examples that must run everywhere, and for
// tests that feed a driver replies no agent would send (Responder.Tamper).
package snmpsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testtool"
)

// Host is the address every simulator listens on.
const Host = "127.0.0.1"

// Default credentials of a simulator. They are fence_apc_snmp's and
// fence_eaton_snmp's default community and test credentials, not secrets.
const (
	DefaultCommunity   = "private" // read-write
	DefaultROCommunity = "public"  // read-only
	DefaultUser        = "fence"
	DefaultAuthPass    = "fenceauth123" // SHA
	DefaultPrivPass    = "fencepriv123" // AES
)

// User is an SNMPv3 user of a simulator, with write access at its security
// level: authPriv with both protocols, authNoPriv with Auth only, else
// noAuthNoPriv. Protocols are written as net-snmp's createUser has them:
// MD5, SHA, SHA-224, SHA-256, SHA-384, SHA-512; DES, AES, AES-192, AES-256.
type User struct {
	Name               string // the user (security name)
	Auth, AuthPassword string // authentication protocol and passphrase; "" for none
	Priv, PrivPassword string // privacy protocol and passphrase; "" for none
}

// level returns the user's net-snmp security level for rwuser.
func (u User) level() string {
	switch {
	case u.Auth == "":
		return "noauth"
	case u.Priv == "":
		return "auth"
	}
	return "priv"
}

// DefaultUsers is the one SNMPv3 user of a simulator when Options.Users is
// nil: fence, SHA and AES.
var DefaultUsers = []User{{Name: DefaultUser, Auth: "SHA", AuthPassword: DefaultAuthPass, Priv: "AES", PrivPassword: DefaultPrivPass}}

// Options configure a simulator. The zero value of each field gives its
// default.
type Options struct {
	// Model is the PDU model; default APC.
	Model Model
	// Outlets is the number of outlets; default 8.
	Outlets int
	// Names are outlet names by number, for the models that have names;
	// the others are nodeN.
	Names map[int]string
	// SysObjectID, when set, replaces the model's sysObjectID (to test a
	// model a driver does not know).
	SysObjectID string
	// Community and ROCommunity are the read-write and read-only
	// communities; default DefaultCommunity and DefaultROCommunity.
	Community, ROCommunity string
	// Users are the SNMPv3 users; default DefaultUsers.
	Users []User
}

// Sim is one running simulator.
type Sim struct {
	// Port is the simulator's UDP port on Host.
	Port int
	// Dir is its directory: snmpd.conf, snmpd.log, the state file.
	Dir string
	// Options are the options it runs with, defaults filled in.
	Options Options

	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// Bounds of the harness.
const (
	startTimeout = 20 * time.Second // snmpd and its handler answer
	stopTimeout  = 3 * time.Second  // after SIGTERM, before SIGKILL
	portTries    = 5
)

// Snmpd returns the path of snmpd, or skips t when it is missing (fails t
// when the environment variable CI is "true").
func Snmpd(t testing.TB) string {
	t.Helper()
	return RequireTool(t, "snmpd", "snmpd")
}

// RequireTool returns the path of a program the tests need (snmpd, or an
// agent such as fence_apc_snmp), or skips t when it is missing; under
// CI=true it fails t instead. pkg names the Debian package that has it.
func RequireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	return testtool.Require(t, name, pkg)
}

// Start starts a simulator with o, waits until it answers (at most 20 s),
// and stops it when t ends.
func Start(t testing.TB, o Options) *Sim {
	t.Helper()
	snmpd := Snmpd(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("snmpsim: %v", err)
	}
	o = withDefaults(o)
	return testtool.StartOnFreePort(t, "snmpsim: snmpd", portTries, func() (*Sim, error) { return start(t, snmpd, self, o) })
}

func withDefaults(o Options) Options {
	if o.Model == 0 {
		o.Model = APC
	}
	if o.Outlets <= 0 {
		o.Outlets = 8
	}
	if o.Community == "" {
		o.Community = DefaultCommunity
	}
	if o.ROCommunity == "" {
		o.ROCommunity = DefaultROCommunity
	}
	if o.Users == nil {
		o.Users = DefaultUsers
	}
	if o.SysObjectID == "" {
		o.SysObjectID = o.Model.SysObjectID()
	}
	return o
}

var errPortTaken = testtool.ErrPortTaken

func start(t testing.TB, snmpd, self string, o Options) (*Sim, error) {
	sp, ok := specs[o.Model]
	if !ok {
		return nil, fmt.Errorf("unknown model %d", o.Model)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "persist"), 0o700); err != nil {
		return nil, err
	}
	if err := writeState(dir, newState(o.Outlets, o.Names, sp.names)); err != nil {
		return nil, err
	}
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "[snmp] persistentDir %s\n", filepath.Join(dir, "persist"))
	fmt.Fprintf(&conf, "engineID fencekitsim%d\n", port)
	fmt.Fprintf(&conf, "agentAddress udp:%s:%d\n", Host, port)
	fmt.Fprintf(&conf, "sysDescr %s (simulated)\nsysObjectID %s\nsysName pdusim-%d\nsysLocation loopback\nsysContact nobody\n", sp.name, o.SysObjectID, port)
	fmt.Fprintf(&conf, "dontLogTCPWrappersConnects yes\n")
	fmt.Fprintf(&conf, "rocommunity %s %s\nrwcommunity %s %s\n", o.ROCommunity, Host, o.Community, Host)
	for _, u := range o.Users {
		line := "createUser " + u.Name
		if u.Auth != "" {
			line += fmt.Sprintf(" %s %q", u.Auth, u.AuthPassword)
			if u.Priv != "" {
				line += fmt.Sprintf(" %s %q", u.Priv, u.PrivPassword)
			}
		}
		fmt.Fprintf(&conf, "%s\nrwuser %s %s\n", line, u.Name, u.level())
	}
	fmt.Fprintf(&conf, "pass_persist %s %s %s %s %s %d\n", sp.subtree, self, passPersistArg, sp.name, dir, o.Outlets)
	confPath := filepath.Join(dir, "snmpd.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "snmpd.log")
	out, err := os.Create(filepath.Join(dir, "snmpd.out"))
	if err != nil {
		return nil, err
	}
	s := &Sim{Port: port, Dir: dir, Options: o, exited: make(chan struct{})}
	s.cmd = exec.Command(snmpd, "-f", "-C", "-c", confPath, "-Lf", logPath,
		"-I", "system_mib,snmpv3mibs,usmUser,usmConf,vacm_vars,vacm_conf,pass_persist",
		"-p", filepath.Join(dir, "snmpd.pid"))
	s.cmd.Env = append(os.Environ(), "MIBS=")
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !udpPortFree(port) {
		out.Close()
		return nil, fmt.Errorf("port %d/udp: %w before the start", port, errPortTaken)
	}
	if err := s.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		out.Close()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.Stop()
		logs, _ := os.ReadFile(logPath)
		more, _ := os.ReadFile(out.Name())
		msg := strings.TrimSpace(string(logs) + " " + string(more))
		if strings.Contains(msg, "Error opening specified endpoint") || strings.Contains(msg, "Address already in use") {
			err = fmt.Errorf("port %d/udp: %w", port, errPortTaken)
		}
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return nil, fmt.Errorf("port %d: %w (log: %s)", port, err, msg)
	}
	return s, nil
}

// waitReady waits until snmpd answers a GET of sysObjectID.0 and of the
// first outlet's state object (which its handler serves).
func (s *Sim) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for i := 0; time.Now().Before(deadline) && i < 1000; i++ {
		select {
		case <-s.exited:
			return errors.New("snmpd exited")
		default:
		}
		g := &gosnmp.GoSNMP{Target: Host, Port: uint16(s.Port), Community: s.Options.ROCommunity,
			Version: gosnmp.Version2c, Timeout: 500 * time.Millisecond, Retries: 0, Context: context.Background()}
		if err := g.Connect(); err != nil {
			// A loaded machine can make even a UDP socket slow to set up.
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		res, err := g.Get([]string{".1.3.6.1.2.1.1.2.0", s.firstObject()})
		g.Conn.Close()
		if err == nil && res.Error == gosnmp.NoError && len(res.Variables) == 2 &&
			res.Variables[1].Type != gosnmp.NoSuchObject && res.Variables[1].Type != gosnmp.NoSuchInstance {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("no answer from the handler yet: %v", res.Variables)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no answer within %v: %v", startTimeout, last)
}

// firstObject is an object the handler serves.
func (s *Sim) firstObject() string {
	st := newState(s.Options.Outlets, nil, false)
	objs := specs[s.Options.Model].objects(st, s.Options.Outlets)
	return formatOID(objs[0].oid)
}

// freeUDPPort returns a UDP port on Host that was free a moment ago.
func freeUDPPort() (int, error) { return testtool.FreeUDPPort(Host) }

// udpPortFree reports whether port can be bound on Host right now.
func udpPortFree(port int) bool { return testtool.UDPPortFree(Host, port) }

// Stop stops snmpd and its handler: SIGTERM to their process group, then
// SIGKILL after 3 s. It is safe to call more than once; Start calls it when
// the test ends.
func (s *Sim) Stop() {
	s.once.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		pgid := s.cmd.Process.Pid // snmpd leads its own group (Setpgid)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.exited
		}
		// The handler may outlive snmpd by a moment: end the group.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// Addr returns the simulator's address, host:port.
func (s *Sim) Addr() string { return net.JoinHostPort(Host, strconv.Itoa(s.Port)) }

// Model returns the simulator's model.
func (s *Sim) Model() Model { return s.Options.Model }

// outlet reads a plug as an outlet number of the simulator.
func (s *Sim) outlet(plug string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(plug))
	if err != nil || n < 1 || n > s.Options.Outlets {
		return "", fmt.Errorf("snmpsim: no outlet %q (outlets 1 to %d)", plug, s.Options.Outlets)
	}
	return strconv.Itoa(n), nil
}

// Truth returns an outlet's true state, by number (a value set with SetRaw
// changes what the device reports, not this).
func (s *Sim) Truth(plug string) (fence.State, error) {
	k, err := s.outlet(plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	st, err := readState(s.Dir)
	if err != nil {
		return fence.StateUnknown, err
	}
	switch st.Outlets[k] {
	case "on":
		return fence.StateOn, nil
	case "off":
		return fence.StateOff, nil
	}
	return fence.StateUnknown, fmt.Errorf("snmpsim: outlet %s has state %q", k, st.Outlets[k])
}

// TruthFunc returns Truth in the shape of fencetest.Fixture's Truth.
func (s *Sim) TruthFunc() func(context.Context, string) (fence.State, error) {
	return func(_ context.Context, plug string) (fence.State, error) { return s.Truth(plug) }
}

// SetTruth sets an outlet's state, by number, as a person at the PDU would,
// and clears a raw value set with SetRaw.
func (s *Sim) SetTruth(plug string, v fence.State) error {
	k, err := s.outlet(plug)
	if err != nil {
		return err
	}
	if !v.Known() {
		return fmt.Errorf("snmpsim: cannot set state %v", v)
	}
	return update(s.Dir, func(st *state) bool {
		st.Outlets[k] = v.String()
		delete(st.Raw, k)
		return true
	})
}

// SetAll sets every outlet's state.
func (s *Sim) SetAll(v fence.State) error {
	for i := 1; i <= s.Options.Outlets; i++ {
		if err := s.SetTruth(strconv.Itoa(i), v); err != nil {
			return err
		}
	}
	return nil
}

// SetRaw makes an outlet's state object report v, whatever the outlet's
// state, until the outlet is switched or SetTruth sets it: a value outside
// the model's mapping, or the Eaton Switched ePDU's 0 for a missing outlet.
func (s *Sim) SetRaw(outlet int, v int) error {
	k, err := s.outlet(strconv.Itoa(outlet))
	if err != nil {
		return err
	}
	return update(s.Dir, func(st *state) bool {
		st.Raw[k] = v
		return true
	})
}

// SetName renames an outlet, for the models that have names.
func (s *Sim) SetName(outlet int, name string) error {
	k, err := s.outlet(strconv.Itoa(outlet))
	if err != nil {
		return err
	}
	if strings.ContainsAny(name, "\r\n") {
		return fmt.Errorf("snmpsim: an outlet name is one line")
	}
	return update(s.Dir, func(st *state) bool {
		st.Names[k] = name
		return true
	})
}

// SetDelay delays the handler's answer to every SET by d (the change itself
// is made at once), so that a client's request times out after the PDU
// acted. 0 ends the delay.
func (s *Sim) SetDelay(d time.Duration) error {
	return update(s.Dir, func(st *state) bool {
		st.SetDelayMS = int(d / time.Millisecond)
		return true
	})
}

// Sets returns the last SETs the handler received (at most 256), and how
// many it received in all.
func (s *Sim) Sets() ([]SetRequest, int, error) {
	st, err := readState(s.Dir)
	if err != nil {
		return nil, 0, err
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, setsFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, err
	}
	var sets []SetRequest
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r SetRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, 0, fmt.Errorf("snmpsim: %s: %w", setsFile, err)
		}
		sets = append(sets, r)
	}
	if len(sets) > maxSets {
		sets = sets[len(sets)-maxSets:]
	}
	return sets, st.SetCount, nil
}

// Events returns the log of outlet switches, for debugging.
func (s *Sim) Events() []string {
	b, err := os.ReadFile(filepath.Join(s.Dir, eventsFile))
	if err != nil {
		return []string{err.Error()}
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
