package ipmisim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// SimOptions configure an ipmi_sim instance. The zero value gives user
// DefaultUser with password DefaultPassword, powered on.
type SimOptions struct {
	User, Password string
	// Initial is the power state at start; default on.
	Initial fence.State
	// GUID is the BMC's GUID in lan.conf (32 hexadecimal digits, as the
	// bytes go on the wire), which ipmi_sim answers Get System GUID with:
	// the machine's identity. Default: random.
	GUID string
}

// Sim is a running OpenIPMI ipmi_sim on Host:Port. Its chassis power state
// lives in the file Dir/power ("1" on, "0" off), which its chassis-control
// script reads and writes for every power command; Truth and SetTruth use
// that file, not IPMI.
//
// How the simulator handles the chassis commands: power down and soft
// shutdown turn the power off, power up turns it on, hard reset changes
// nothing (it is counted, see Resets), and power cycle turns the power off,
// then ipmi_sim turns it back on about one second later (it also powers on
// a chassis that was off).
type Sim struct {
	Port           int
	User, Password string
	// Dir holds the configuration, the power file and the logs.
	Dir string

	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// Startup bounds.
const (
	simStartTimeout = 10 * time.Second
	simStopTimeout  = 3 * time.Second
	simPortTries    = 3
)

// chassisScript is the chassis-control program ipmi_sim runs for every
// power query and command:
//
//	chassis_control DIR get power [boot]
//	chassis_control DIR set power 0|1 | reset 1 | shutdown 1 | boot X
//	chassis_control DIR check
//
// A file DIR/stuck makes it accept power commands without acting.
const chassisScript = `#!/bin/sh
dir="$1"; shift
op="$1"; shift
pf="$dir/power"
[ -f "$pf" ] || echo 1 > "$pf"
case "$op" in
  get)
    for p in "$@"; do
      case "$p" in
        power) echo "power:$(cat "$pf")" ;;
        boot)  if [ -f "$dir/boot" ]; then echo "boot:$(cat "$dir/boot")"; else echo "boot:default"; fi ;;
        *) echo "unknown parm $p"; exit 1 ;;
      esac
    done ;;
  set)
    while [ $# -ge 2 ]; do
      p="$1"; v="$2"; shift 2
      case "$p" in
        power)    if [ ! -f "$dir/stuck" ]; then echo "$v" > "$pf.new"; mv "$pf.new" "$pf"; fi ;;
        reset)    echo reset >> "$dir/resets" ;;
        shutdown) if [ ! -f "$dir/stuck" ]; then echo 0 > "$pf.new"; mv "$pf.new" "$pf"; fi ;;
        boot)     echo "$v" > "$dir/boot.new"; mv "$dir/boot.new" "$dir/boot"; echo "$v" >> "$dir/boots" ;;
        *) echo "unknown parm $p"; exit 1 ;;
      esac
    done ;;
  check) : ;;
  *) echo "bad op $op"; exit 1 ;;
esac
exit 0
`

// StartIPMISim starts ipmi_sim on a free UDP port of 127.0.0.1, waits until
// it answers (at most 10 s), and stops it when t ends. It skips t when
// ipmi_sim is not installed (fails it under CI=true).
//
// ipmi_sim keeps running, silently, when its port is taken; so the port is
// checked free right before the start, and the simulator's answer is told
// from a stranger's by a product ID chosen at random for this instance. A
// port lost to another process in between is replaced by another, up to
// three times.
func StartIPMISim(t testing.TB, o SimOptions) *Sim {
	t.Helper()
	bin := requireTool(t, "ipmi_sim", "openipmi")
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Password == "" {
		o.Password = DefaultPassword
	}
	if o.Initial == fence.StateUnknown {
		o.Initial = fence.StateOn
	}
	dir := t.TempDir()
	if strings.ContainsAny(dir, " \t\n\"") {
		t.Fatalf("ipmisim: temporary directory %q has white space or quotes, which lan.conf cannot hold", dir)
	}
	var errs []string
	for try := 0; try < simPortTries; try++ {
		s, err := startSim(bin, dir, o)
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		errs = append(errs, err.Error())
	}
	t.Fatalf("ipmisim: ipmi_sim did not start: %s", strings.Join(errs, "; "))
	return nil
}

func startSim(bin, dir string, o SimOptions) (*Sim, error) {
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	product := uint16(rand.IntN(0xfff0) + 1)
	s := &Sim{Port: port, User: o.User, Password: o.Password, Dir: dir, exited: make(chan struct{})}
	if err := s.writeConfig(o, product); err != nil {
		return nil, err
	}
	// ipmi_sim keeps per-port persistent data (users, LAN parameters) under
	// its state directory; start afresh so that lan.conf's user wins.
	os.RemoveAll(filepath.Join(dir, "state"))
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		return nil, err
	}
	if !udpPortFree(port) {
		return nil, fmt.Errorf("port %d/udp was taken before the start", port)
	}
	log, err := os.Create(filepath.Join(dir, "ipmi_sim.log"))
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "-n", "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "bmc.emu"), "-s", filepath.Join(dir, "state"))
	s.cmd.Stdin = nil
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		log.Close()
		close(s.exited)
	}()
	if err := waitAnswer(Host, port, o.User, o.Password, product, s.exited, simStartTimeout); err != nil {
		s.Stop()
		out, _ := os.ReadFile(filepath.Join(dir, "ipmi_sim.log"))
		return nil, fmt.Errorf("port %d: %v (log: %s)", port, err, bytes.TrimSpace(out))
	}
	return s, nil
}

func (s *Sim) writeConfig(o SimOptions, product uint16) error {
	w, err := stateWord(o.Initial)
	if err != nil {
		return err
	}
	script := filepath.Join(s.Dir, "chassis_control")
	guid := o.GUID
	if guid == "" {
		guid = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	}
	lan := fmt.Sprintf(`name "bmc%d"
set_working_mc 0x20
  startlan 1
    addr %s %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid %s
  endlan
  chassis_control "%s %s"
  user 1 false "" "" user 10 none md2 md5 straight
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, s.Port, Host, s.Port, guid, script, s.Dir, o.User, o.Password)
	emu := fmt.Sprintf(`mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 %#x
sel_enable 0x20 1000 0x0a
mc_enable 0x20
`, product)
	for _, f := range []struct {
		name, body string
		mode       os.FileMode
	}{
		{"chassis_control", chassisScript, 0o755},
		{"lan.conf", lan, 0o600},
		{"bmc.emu", emu, 0o644},
		{"power", w + "\n", 0o644},
	} {
		if err := os.WriteFile(filepath.Join(s.Dir, f.name), []byte(f.body), f.mode); err != nil {
			return err
		}
	}
	os.Remove(filepath.Join(s.Dir, "stuck"))
	os.Remove(filepath.Join(s.Dir, "resets"))
	return nil
}

// Addr returns the simulator's address as host:port.
func (s *Sim) Addr() string { return fmt.Sprintf("%s:%d", Host, s.Port) }

// URL returns the simulator's address as an ipmi:// URL.
func (s *Sim) URL() string { return "ipmi://" + s.Addr() }

// BootDevice returns the boot device ipmi_sim last handed its chassis
// control for the next boot (what Set System Boot Options set: "pxe",
// "default", "cdrom", "bios", ...), "" when none was set.
func (s *Sim) BootDevice() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "boot"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Truth reads the chassis power state from the power file.
func (s *Sim) Truth() (fence.State, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, "power"))
	if err != nil {
		return fence.StateUnknown, err
	}
	return parseStateWord(b)
}

// SetTruth writes the chassis power state to the power file.
func (s *Sim) SetTruth(st fence.State) error {
	w, err := stateWord(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, "power.set")
	if err := os.WriteFile(tmp, []byte(w+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, "power"))
}

// SetStuck makes the chassis accept power commands without acting on them
// (true), or act again (false): a BMC that never reaches the state.
func (s *Sim) SetStuck(stuck bool) error {
	f := filepath.Join(s.Dir, "stuck")
	if stuck {
		return os.WriteFile(f, nil, 0o644)
	}
	if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Resets counts the hard resets the chassis received.
func (s *Sim) Resets() int {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "resets"))
	return bytes.Count(b, []byte("reset\n"))
}

// Stop stops the simulator: SIGTERM, then SIGKILL after 3 s. It is safe to
// call more than once; StartIPMISim calls it when the test ends.
func (s *Sim) Stop() {
	s.once.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		// The simulator and the chassis scripts it forks are one process
		// group of their own.
		pid := s.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(simStopTimeout):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-s.exited
		}
	})
}
