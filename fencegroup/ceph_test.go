//go:build linux

package fencegroup_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/policy"
)

// cephBinaries are the programs a throwaway Ceph cluster needs: Debian's
// ceph-mon, ceph-mgr, ceph-osd and ceph-common.
var cephBinaries = []string{"ceph", "ceph-mon", "ceph-mgr", "ceph-osd", "ceph-authtool", "monmaptool", "rados"}

// cephCluster is a throwaway Ceph cluster on loopback: one monitor, one
// manager, one memstore OSD on each of the given CRUSH hosts, and a
// replicated pool of size 2 holding a few objects. Its daemons run in the
// foreground as children of the test and are killed when it ends.
type cephCluster struct {
	t                  *testing.T
	dir, conf, keyring string
	osds               map[string]int // host -> OSD id
	daemons            map[string]*daemon
}

// daemon is one running daemon; done is closed once it has been reaped.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startCeph starts the cluster, or skips the test when Ceph is not
// installed (fails it with CI=true, so that CI never passes by skipping).
func startCeph(t *testing.T, hosts ...string) *cephCluster {
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
	c := &cephCluster{t: t, dir: dir, conf: filepath.Join(dir, "ceph.conf"), keyring: filepath.Join(dir, "keyring"),
		osds: map[string]int{}, daemons: map[string]*daemon{}}
	t.Cleanup(c.stop)

	fsid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xfff, rand.Uint32()&0xfff, rand.Uint64()&0xffffffffffff)
	monPort := freePort(t)
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
	require.NoError(t, os.WriteFile(c.conf, []byte(conf), 0o600))

	c.run("ceph-authtool", "--create-keyring", c.keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
	c.run("ceph-authtool", c.keyring, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *")
	c.run("ceph-authtool", c.keyring, "--gen-key", "-n", "mgr.x", "--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *")
	monmap := filepath.Join(dir, "monmap")
	c.run("monmaptool", "--create", "--addv", "a", fmt.Sprintf("[v2:127.0.0.1:%d]", monPort), "--fsid", fsid, monmap)
	c.run("ceph-mon", "-c", c.conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", c.keyring)
	c.daemon("mon.a", "ceph-mon", "-f", "-c", c.conf, "-i", "a")
	c.waitFor("the monitor", func() bool { _, err := c.try("status"); return err == nil })
	c.daemon("mgr.x", "ceph-mgr", "-f", "-c", c.conf, "-i", "x")
	for _, h := range hosts {
		uuid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xfff, rand.Uint32()&0xfff, rand.Uint64()&0xffffffffffff)
		id, err := strconv.Atoi(strings.TrimSpace(c.ceph("osd", "new", uuid)))
		require.NoError(t, err)
		data := filepath.Join(dir, "osd"+strconv.Itoa(id))
		require.NoError(t, os.MkdirAll(data, 0o700))
		key := filepath.Join(data, "keyring")
		c.run("ceph-authtool", "--create-keyring", key, "--gen-key", "-n", "osd."+strconv.Itoa(id))
		c.ceph("auth", "add", "osd."+strconv.Itoa(id), "osd", "allow *", "mon", "allow profile osd", "mgr", "allow profile osd", "-i", key)
		c.run("ceph-osd", "-c", c.conf, "-i", strconv.Itoa(id), "--mkfs", "--osd-uuid", uuid, "--keyring", key)
		c.osds[h] = id
		c.startOSD(h)
	}
	c.ceph("osd", "pool", "create", "rbd", "16", "16")
	c.ceph("osd", "pool", "application", "enable", "rbd", "rbd")
	obj := filepath.Join(dir, "object")
	require.NoError(t, os.WriteFile(obj, bytes.Repeat([]byte("fencekit"), 1024), 0o600))
	for i := range 16 {
		c.run("rados", "-c", c.conf, "-p", "rbd", "put", "object-"+strconv.Itoa(i), obj)
	}
	return c
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs a command to completion, within a minute.
func (c *cephCluster) run(name string, args ...string) string {
	c.t.Helper()
	out, err := c.tryRun(name, args...)
	require.NoError(c.t, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return out
}

func (c *cephCluster) tryRun(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// ceph runs a ceph command as the admin.
func (c *cephCluster) ceph(args ...string) string {
	c.t.Helper()
	return c.run("ceph", append([]string{"-c", c.conf, "--connect-timeout", "20"}, args...)...)
}

func (c *cephCluster) try(args ...string) (string, error) {
	return c.tryRun("ceph", append([]string{"-c", c.conf, "--connect-timeout", "5"}, args...)...)
}

// daemon starts a daemon in the foreground. The kernel kills it if the
// thread that started it dies (so a crashed test leaves nothing behind):
// that thread stays locked until the daemon has been reaped.
func (c *cephCluster) daemon(name, path string, args ...string) {
	c.t.Helper()
	logf, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	require.NoError(c.t, err)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(d.done)
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	require.NoError(c.t, <-started)
	c.daemons[name] = d
}

// startOSD starts the OSD of host, linked under that CRUSH host.
func (c *cephCluster) startOSD(host string) {
	id := strconv.Itoa(c.osds[host])
	c.daemon("osd."+id, "ceph-osd", "-f", "-c", c.conf, "-i", id, "--keyring", filepath.Join(c.dir, "osd"+id, "keyring"),
		"--crush-location", "root=default host="+host)
}

// kill kills a daemon, as a crash would, and reaps it.
func (c *cephCluster) kill(name string) {
	d := c.daemons[name]
	if d == nil {
		return
	}
	delete(c.daemons, name)
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("%s not reaped within 10 s", name)
	}
}

func (c *cephCluster) stop() {
	for name := range c.daemons {
		if strings.HasPrefix(name, "osd.") {
			c.kill(name)
		}
	}
	for name := range c.daemons {
		c.kill(name)
	}
}

// waitFor polls cond every half second for at most 90 s.
func (c *cephCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within 90 s", what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// The CLI source, the health, the labels and the gate on a real Ceph
// cluster through both flows of the design: an OSD node stops answering
// with its OSDs up (fenced, clean PGs), then its OSD dies (the PGs degrade,
// another node of the group waits), Ceph marks the OSD out and recovers
// (clean again), and the OSD comes back.
func TestRealCeph(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Ceph cluster")
	}
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	c := startCeph(t, "worker-0", "worker-1", "worker-2")
	phase("cluster started")
	cli := &fencegroup.CLI{Conf: c.conf, ID: "admin", Keyring: c.keyring, Timeout: 20 * time.Second}
	h, err := fencegroup.NewHealth("rook-ceph", cli, fencegroup.HealthOptions{})
	require.NoError(t, err)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{})
	require.NoError(t, err)
	var snap fencegroup.Snapshot
	budget := func() fencegroup.Budget {
		snap, err = h.Refresh(t.Context())
		require.NoError(t, err)
		return snap.Budget(fencegroup.Rules{})
	}
	// Before the manager's first statistics, the monitors report no PGs
	// and no pools: the CLI counts the pools from the OSD map then, and
	// the budget is not clean until the PGs are.
	c.waitFor("all PGs clean", func() bool { return budget().Clean })
	phase("all PGs clean")
	assert.Equal(t, "all 17 PGs active+clean", snap.Budget(fencegroup.Rules{}).Reason)
	assert.Equal(t, fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}, snap.Status.OSDs)
	assert.Equal(t, 2, snap.Status.NumPools)
	pools, err := fencegroup.ParsePoolList([]byte(c.ceph("osd", "pool", "ls", "--format", "json")))
	require.NoError(t, err)
	assert.Equal(t, 2, pools, "the OSD map's pools, as the status counts them")

	// The labels from the real CRUSH map.
	machines := []fencegroup.Machine{{Name: "worker-0"}, {Name: "worker-1"}, {Name: "worker-2"}, {Name: "gpu-0"}}
	plan, err := fencegroup.Rules{}.Labels("rook-ceph", snap.Status.Placement, machines)
	require.NoError(t, err)
	var changes []string
	for _, ch := range plan.Changes {
		changes = append(changes, ch.String())
	}
	assert.Equal(t, []string{
		"add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0 of Ceph cluster rook-ceph)",
		"add fencegroup.rook.io/rook-ceph to worker-1 (runs osd.1 of Ceph cluster rook-ceph)",
		"add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2 of Ceph cluster rook-ceph)",
	}, changes)

	in := map[string]string{fencegroup.Label("rook-ceph"): ""}
	nodes := []policy.Node{{Name: "worker-0", Labels: in}, {Name: "worker-1", Labels: in}, {Name: "worker-2", Labels: in}}
	ask := func(i int) policy.Decision {
		cl := policy.Cluster{Now: time.Now(), Nodes: nodes}
		return g.Admit(t.Context(), policy.Candidate{Node: nodes[i], Step: "power-management"}, cl)
	}

	// worker-1 stops answering, its OSD up: admitted.
	nodes[1].Unresponsive = true
	assert.True(t, ask(1).Admit)
	nodes[1].Fencing = true

	// The fencing takes its OSD down: the PGs degrade.
	c.kill("osd.1")
	c.waitFor("PGs degraded", func() bool { return !budget().Clean })
	phase("osd.1 killed: " + snap.Budget(fencegroup.Rules{}).Reason)
	osd1 := slicesIndex(snap.Status.Placement, 1)
	require.GreaterOrEqual(t, osd1, 0)

	// worker-2 stops answering meanwhile: it waits, first for worker-1,
	// then, once worker-1 is back, for the PGs.
	nodes[2].Unresponsive = true
	d := ask(2)
	assert.False(t, d.Admit)
	assert.Contains(t, d.Reason, "in Ceph cluster rook-ceph; worker-2 is in its fence group")
	assert.Contains(t, d.Reason, "PGs not active+clean (")
	nodes[1].Fencing, nodes[1].Unresponsive = false, false
	assert.False(t, ask(2).Admit)

	// Ceph marks osd.1 out and recovers without it: worker-2 may go.
	c.waitFor("recovered without osd.1", func() bool {
		return budget().Clean && snap.Status.OSDs == fencegroup.OSDCounts{Total: 3, Up: 2, In: 2}
	})
	phase("recovered without osd.1")
	assert.Equal(t, fencegroup.OSDDown, snap.Status.Placement[slicesIndex(snap.Status.Placement, 1)].State)
	assert.True(t, ask(2).Admit)

	// With ReleaseDownMachines, worker-1 (its only OSD down) leaves the
	// group; by default it stays.
	plan, err = fencegroup.Rules{ReleaseDownMachines: true}.Labels("rook-ceph", snap.Status.Placement, []fencegroup.Machine{
		{Name: "worker-1", Labels: in}, {Name: "worker-2", Labels: in},
	})
	require.NoError(t, err)
	require.Len(t, plan.Changes, 1)
	assert.Equal(t, "remove fencegroup.rook.io/rook-ceph from worker-1 (its OSDs of Ceph cluster rook-ceph are all down (osd.1))", plan.Changes[0].String())

	// osd.1 comes back: Ceph moves data back, clean again in the end.
	c.startOSD("worker-1")
	c.waitFor("osd.1 back and clean", func() bool {
		return budget().Clean && snap.Status.OSDs == fencegroup.OSDCounts{Total: 3, Up: 3, In: 3}
	})
	phase("osd.1 back, all PGs clean")

	// The real ceph command's failures: credentials refused, monitors
	// unreachable.
	bad := filepath.Join(c.dir, "bad.keyring")
	c.run("ceph-authtool", "--create-keyring", bad, "--gen-key", "-n", "client.admin")
	_, err = (&fencegroup.CLI{Conf: c.conf, ID: "admin", Keyring: bad, Timeout: 10 * time.Second}).Fetch(t.Context())
	var ce *fencegroup.CommandError
	require.ErrorAs(t, err, &ce)
	t.Logf("bad key: %v", err)
	assert.Positive(t, ce.Exit)
	assert.Contains(t, err.Error(), "fencegroup: ceph status --format json: exit status ")
	assert.NotContains(t, err.Error(), bad, "the keyring path is not quoted")
	key, err := os.ReadFile(bad)
	require.NoError(t, err)
	for _, f := range strings.Fields(string(key)) {
		if strings.HasPrefix(f, "AQ") {
			assert.NotContains(t, ce.Error(), f, "the key is not quoted")
		}
	}

	dead := filepath.Join(c.dir, "dead.conf")
	require.NoError(t, os.WriteFile(dead, []byte(fmt.Sprintf("[global]\nmon host = v2:127.0.0.1:%d\nms bind msgr1 = false\n", freePort(t))), 0o600))
	began := time.Now()
	_, err = (&fencegroup.CLI{Conf: dead, ID: "admin", Keyring: c.keyring, Timeout: 10 * time.Second}).Fetch(t.Context())
	require.ErrorAs(t, err, &ce)
	t.Logf("no monitor: %v (after %v)", err, time.Since(began).Round(time.Millisecond))
	assert.Positive(t, ce.Exit, "ceph gave up by itself (--connect-timeout 5), before the kill at 10 s")
	assert.Contains(t, err.Error(), "timed out")
}

// slicesIndex returns the index of OSD id in osds, -1 when absent.
func slicesIndex(osds []fencegroup.OSD, id int) int {
	for i, o := range osds {
		if o.ID == id {
			return i
		}
	}
	return -1
}
