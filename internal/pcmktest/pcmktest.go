// Package pcmktest runs a real one-node Pacemaker cluster on loopback for
// integration tests: Debian's corosync 3 (knet on 127.0.0.1, no crypto) and
// pacemakerd 2.1 in the foreground, without systemd, in a private directory,
// with helpers for cibadmin, stonith_admin and pcs. Devices may fence nodes
// that are not members (node2, node3, ...), which keeps the local node
// safe.
//
// Pacemaker keeps its state in /var/lib/pacemaker and talks to corosync by
// names that are global to the machine, so one cluster runs at a time: Start
// takes a lock file and cleans the state before and after. It needs root,
// and skips (or fails, with CI=true) when the packages are missing.
package pcmktest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds of the harness.
const (
	// startTimeout bounds the wait for the cluster to elect its DC (about
	// 25 s measured here).
	startTimeout = 90 * time.Second
	stopTimeout  = 15 * time.Second
	cmdTimeout   = 60 * time.Second
	lockFile     = "/run/fencekit-pacemaker.lock"
)

// Cluster is a running cluster.
type Cluster struct {
	t          testing.TB
	Dir        string
	corosync   *exec.Cmd
	pacemakerd *exec.Cmd
	lock       *os.File
}

// need returns the path of a program, or skips t (fails it under CI=true).
func need(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is missing: install pacemaker, corosync, pacemaker-cli-utils and pcs (make deps)", name)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

const corosyncConf = `totem {
  version: 2
  cluster_name: fencekit
  transport: knet
  crypto_cipher: none
  crypto_hash: none
}
logging {
  to_logfile: yes
  logfile: %s/corosync.log
  to_stderr: no
  to_syslog: no
}
quorum {
  provider: corosync_votequorum
}
nodelist {
  node {
    name: node1
    nodeid: 1
    ring0_addr: 127.0.0.1
  }
}
`

// Start starts a cluster and stops it when t ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a Pacemaker cluster needs root")
		}
		t.Skip("a Pacemaker cluster needs root")
	}
	corosync, pacemakerd := need(t, "corosync"), need(t, "pacemakerd")
	need(t, "cibadmin")
	need(t, "stonith_admin")
	lock, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		t.Fatal(err)
	}
	c := &Cluster{t: t, Dir: t.TempDir(), lock: lock}
	t.Cleanup(c.stop)
	cleanState()
	conf := filepath.Join(c.Dir, "corosync.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(corosyncConf, c.Dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(c.Dir, "log")
	if err := os.MkdirAll(logDir, 0o775); err != nil {
		t.Fatal(err)
	}
	_ = exec.Command("chown", "hacluster:haclient", logDir).Run()
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}

	c.corosync = exec.Command(corosync, "-f", "-c", conf)
	c.corosync.Stdout, c.corosync.Stderr = logTo(t, filepath.Join(c.Dir, "corosync.out"))
	if err := c.corosync.Start(); err != nil {
		t.Fatalf("corosync: %v", err)
	}
	c.pacemakerd = exec.Command(pacemakerd)
	c.pacemakerd.Env = append(os.Environ(), "PCMK_logfile="+filepath.Join(logDir, "pacemaker.log"), "PCMK_logfacility=none")
	c.pacemakerd.Stdout, c.pacemakerd.Stderr = logTo(t, filepath.Join(c.Dir, "pacemakerd.out"))
	// Give corosync its second to become quorate.
	time.Sleep(time.Second)
	if err := c.pacemakerd.Start(); err != nil {
		t.Fatalf("pacemakerd: %v", err)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		out, _ := c.run("crm_mon", "-1")
		if strings.Contains(out, "Current DC: node1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DC %v after start: %s\n%s", startTimeout, out, c.Logs())
		}
		time.Sleep(time.Second)
	}
	// No resources but the test's devices; fencing enabled.
	if out, err := c.run("crm_attribute", "--type", "crm_config", "--name", "stonith-enabled", "--update", "true"); err != nil {
		t.Fatalf("crm_attribute: %v: %s", err, out)
	}
	return c
}

func logTo(t testing.TB, path string) (*os.File, *os.File) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, f
}

// cleanState removes the cluster state Pacemaker keeps between runs.
func cleanState() {
	for _, g := range []string{"/var/lib/pacemaker/cib/*", "/var/lib/pacemaker/pengine/*"} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			_ = os.RemoveAll(f)
		}
	}
}

func (c *Cluster) stop() {
	for _, p := range []*exec.Cmd{c.pacemakerd, c.corosync} {
		if p == nil || p.Process == nil {
			continue
		}
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			_ = p.Process.Kill()
			<-done
		}
	}
	// Pacemaker's daemons end with pacemakerd; any left over would hold
	// the next cluster's names.
	_ = exec.Command("pkill", "-KILL", "-f", "/usr/lib/pacemaker/pacemaker-").Run()
	cleanState()
	if c.lock != nil {
		_ = syscall.Flock(int(c.lock.Fd()), syscall.LOCK_UN)
		c.lock.Close()
	}
}

// run runs a Pacemaker command and returns what it printed.
func (c *Cluster) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	var b bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// Run runs a Pacemaker command-line tool (cibadmin, stonith_admin, pcs,
// crm_mon, ...) and returns its combined output and error.
func (c *Cluster) Run(name string, args ...string) (string, error) { return c.run(name, args...) }

// CreateDevice adds a fencing device as an admin would with cibadmin: a
// stonith primitive of agent with the instance attributes attrs (name,
// value pairs).
func (c *Cluster) CreateDevice(id, agent string, attrs ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `<primitive id="%s" class="stonith" type="%s"><instance_attributes id="%s-ia">`, id, agent, id)
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&b, `<nvpair id="%s-%s" name="%s" value="%s"/>`, id, attrs[i], attrs[i], xmlEscape(attrs[i+1]))
	}
	b.WriteString(`</instance_attributes></primitive>`)
	if out, err := c.run("cibadmin", "--create", "-o", "resources", "--xml-text", b.String()); err != nil {
		c.t.Fatalf("cibadmin --create %s: %v: %s", id, err, out)
	}
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// WaitDevice waits until pacemaker-fenced has registered the device.
func (c *Cluster) WaitDevice(id string) {
	c.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		out, _ := c.run("stonith_admin", "--list-registered")
		if strings.Contains(out, id) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("device %s not registered: %s\n%s", id, out, c.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Stonith runs stonith_admin with args (such as --fence node2) and returns
// its output and error.
func (c *Cluster) Stonith(args ...string) (string, error) {
	return c.run("stonith_admin", args...)
}

// Logs returns the tail of the cluster's logs, for failure messages.
func (c *Cluster) Logs() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", "pacemaker.log"))
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
