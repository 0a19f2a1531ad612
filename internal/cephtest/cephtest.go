//go:build linux

// Package cephtest starts a throwaway Ceph cluster on loopback for tests:
// Debian's ceph-mon, ceph-mgr and ceph-osd (memstore) as children of the
// test, killed when it ends.
package cephtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/procgroup"
	"github.com/stretchr/testify/require"
)

// cephBinaries are the programs a throwaway Ceph cluster needs: Debian's
// ceph-mon, ceph-mgr, ceph-osd and ceph-common.
var cephBinaries = []string{"ceph", "ceph-mon", "ceph-mgr", "ceph-osd", "ceph-authtool", "monmaptool", "rados"}

// Cluster is a throwaway Ceph cluster on loopback: one monitor, one
// manager, one memstore OSD on each of the given CRUSH hosts, and a
// replicated pool of size 2 holding a few objects. Its daemons run in the
// foreground as children of the test and are killed when it ends.
type Cluster struct {
	T                  *testing.T
	Dir, Conf, Keyring string
	OSDs               map[string]int // host -> OSD id
	daemons            map[string]*daemon
}

// daemon is one running daemon; done is closed once it has been reaped.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts the cluster, or skips the test when Ceph is not
// installed (fails it with CI=true, so that CI never passes by skipping).
func Start(t *testing.T, hosts ...string) *Cluster {
	t.Helper()
	for _, b := range cephBinaries {
		if _, err := exec.LookPath(b); err != nil {
			msg := fmt.Sprintf("Ceph is not installed (%s missing): apt-get install ceph-mon ceph-mgr ceph-osd ceph-common", b)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	dir, err := os.MkdirTemp("", "fgceph")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &Cluster{T: t, Dir: dir, Conf: filepath.Join(dir, "ceph.conf"), Keyring: filepath.Join(dir, "keyring"),
		OSDs: map[string]int{}, daemons: map[string]*daemon{}}
	t.Cleanup(c.stop)

	fsid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xfff, rand.Uint32()&0xfff, rand.Uint64()&0xffffffffffff)
	monPort := FreePort(t)
	portMin := 20000 + rand.IntN(400)*100
	conf := fmt.Sprintf(`[global]
fsid = %[1]s
mon host = v2:127.0.0.1:%[2]d
public addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr1 = false
ms bind port min = %[3]d
ms bind port max = %[4]d
keyring = %[5]s/keyring
run dir = %[5]s/run
admin socket = %[5]s/run/$name.asok
log file = %[5]s/log/$name.log
osd objectstore = memstore
memstore device bytes = 134217728
osd pool default size = 2
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
mon data avail warn = 1
osd crush chooseleaf type = 1
mon osd down out interval = 5
mon tick interval = 1
mgr stats period = 1
osd mon report interval = 1
osd heartbeat grace = 6
osd heartbeat interval = 2
mon osd min down reporters = 1
osd data = %[5]s/osd$id
mon data = %[5]s/mon
mgr data = %[5]s/mgr
`, fsid, monPort, portMin, portMin+99, dir)
	for _, d := range []string{"mon", "mgr", "run", "log"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o700))
	}
	require.NoError(t, os.WriteFile(c.Conf, []byte(conf), 0o600))

	c.Run("ceph-authtool", "--create-keyring", c.Keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
	c.Run("ceph-authtool", c.Keyring, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *")
	c.Run("ceph-authtool", c.Keyring, "--gen-key", "-n", "mgr.x", "--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *")
	monmap := filepath.Join(dir, "monmap")
	c.Run("monmaptool", "--create", "--addv", "a", fmt.Sprintf("[v2:127.0.0.1:%d]", monPort), "--fsid", fsid, monmap)
	c.Run("ceph-mon", "-c", c.Conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", c.Keyring)
	c.daemon("mon.a", "ceph-mon", "-f", "-c", c.Conf, "-i", "a")
	c.WaitFor("the monitor", func() bool { _, err := c.Try("status"); return err == nil })
	c.daemon("mgr.x", "ceph-mgr", "-f", "-c", c.Conf, "-i", "x")
	for _, h := range hosts {
		uuid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xfff, rand.Uint32()&0xfff, rand.Uint64()&0xffffffffffff)
		id, err := strconv.Atoi(strings.TrimSpace(c.Ceph("osd", "new", uuid)))
		require.NoError(t, err)
		data := filepath.Join(dir, "osd"+strconv.Itoa(id))
		require.NoError(t, os.MkdirAll(data, 0o700))
		key := filepath.Join(data, "keyring")
		c.Run("ceph-authtool", "--create-keyring", key, "--gen-key", "-n", "osd."+strconv.Itoa(id))
		c.Ceph("auth", "add", "osd."+strconv.Itoa(id), "osd", "allow *", "mon", "allow profile osd", "mgr", "allow profile osd", "-i", key)
		c.Run("ceph-osd", "-c", c.Conf, "-i", strconv.Itoa(id), "--mkfs", "--osd-uuid", uuid, "--keyring", key)
		c.OSDs[h] = id
		c.StartOSD(h)
	}
	c.Ceph("osd", "pool", "create", "rbd", "16", "16")
	c.Ceph("osd", "pool", "application", "enable", "rbd", "rbd")
	obj := filepath.Join(dir, "object")
	require.NoError(t, os.WriteFile(obj, bytes.Repeat([]byte("fencekit"), 1024), 0o600))
	for i := range 16 {
		c.Run("rados", "-c", c.Conf, "-p", "rbd", "put", "object-"+strconv.Itoa(i), obj)
	}
	return c
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func FreePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Run runs a command to completion, within a minute.
func (c *Cluster) Run(name string, args ...string) string {
	c.T.Helper()
	out, err := c.TryRun(name, args...)
	require.NoError(c.T, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return out
}

// TryRun runs a command to completion, within a minute, and returns its
// output and error.
func (c *Cluster) TryRun(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// Ceph runs a ceph command as the admin; Try runs one and returns its error.
func (c *Cluster) Ceph(args ...string) string {
	c.T.Helper()
	return c.Run("ceph", append([]string{"-c", c.Conf, "--connect-timeout", "20"}, args...)...)
}

func (c *Cluster) Try(args ...string) (string, error) {
	return c.TryRun("ceph", append([]string{"-c", c.Conf, "--connect-timeout", "5"}, args...)...)
}

// daemon starts a daemon in the foreground. The kernel kills it if the
// thread that started it dies (so a crashed test leaves nothing behind):
// that thread stays locked until the daemon has been reaped
// (procgroup.StartAndWait).
func (c *Cluster) daemon(name, path string, args ...string) {
	c.T.Helper()
	logf, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	require.NoError(c.T, err)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	err = procgroup.StartAndWait(cmd, func(error) {
		logf.Close()
		close(d.done)
	})
	if err != nil {
		logf.Close()
		close(d.done)
	}
	require.NoError(c.T, err)
	c.daemons[name] = d
}

// StartOSD starts the OSD of host, linked under that CRUSH host.
func (c *Cluster) StartOSD(host string) {
	id := strconv.Itoa(c.OSDs[host])
	c.daemon("osd."+id, "ceph-osd", "-f", "-c", c.Conf, "-i", id, "--keyring", filepath.Join(c.Dir, "osd"+id, "keyring"),
		"--crush-location", "root=default host="+host)
}

// Kill kills a daemon, as a crash would, and reaps it.
func (c *Cluster) Kill(name string) {
	d := c.daemons[name]
	if d == nil {
		return
	}
	delete(c.daemons, name)
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		c.T.Errorf("%s not reaped within 10 s", name)
	}
}

func (c *Cluster) stop() {
	for name := range c.daemons {
		if strings.HasPrefix(name, "osd.") {
			c.Kill(name)
		}
	}
	for name := range c.daemons {
		c.Kill(name)
	}
}

// WaitFor polls cond every half second for at most 90 s.
func (c *Cluster) WaitFor(what string, cond func() bool) {
	c.T.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.T.Fatalf("%s: not within 90 s", what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
