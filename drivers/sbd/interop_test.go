package sbd_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
)

const sbdPath = "/usr/sbin/sbd"

// need fails under CI=true, and skips otherwise, when what is missing.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (make deps installs it)", what)
	}
	t.Skip(what)
}

// loopDevice returns a loop block device over a new file of size bytes,
// detached when t ends. The real sbd needs a block device (it asks the
// kernel for the sector size, and opens it O_DIRECT).
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	_, err := exec.LookPath("losetup")
	need(t, err == nil, "losetup is missing (util-linux)")
	f := filepath.Join(t.TempDir(), "sbd.img")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	require.NoError(t, os.Truncate(f, size))
	out, err := exec.Command("losetup", "--find", "--show", f).CombinedOutput()
	need(t, err == nil, "no loop device: "+strings.TrimSpace(string(out)))
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// sbdRun runs the real sbd.
func sbdRun(t *testing.T, args ...string) string {
	t.Helper()
	_, err := os.Stat(sbdPath)
	need(t, err == nil, sbdPath+" is missing: install Debian's sbd")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, sbdPath, args...).CombinedOutput()
	require.NoError(t, err, "sbd %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// dump reads sbd dump's fields.
func dump(t *testing.T, dev string) map[string]string {
	out := sbdRun(t, "-d", dev, "dump")
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return fields
}

// list reads sbd list: slot, node, message, sender.
func list(t *testing.T, dev string) map[string][2]string {
	out := sbdRun(t, "-d", dev, "list")
	m := map[string][2]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, "\t")
		if len(f) >= 3 {
			from := ""
			if len(f) > 3 {
				from = f[3]
			}
			m[f[1]] = [2]string{f[2], from}
		}
	}
	return m
}

// A header sbd creates is read by the driver; one the driver creates is
// read by sbd; slots and messages both ways.
func TestInteropFormat(t *testing.T) {
	ctx := t.Context()
	dev := loopDevice(t, 4<<20)

	sbdRun(t, "-d", dev, "-1", "3", "-2", "4", "-3", "2", "-4", "6", "create")
	h, err := sbd.ReadHeader(ctx, dev)
	require.NoError(t, err)
	f := dump(t, dev)
	assert.Equal(t, "255", f["Number of slots"])
	assert.Equal(t, 255, h.Slots)
	assert.Equal(t, 512, h.SectorSize)
	assert.Equal(t, 3*time.Second, h.Watchdog)
	assert.Equal(t, 4*time.Second, h.Allocate)
	assert.Equal(t, 2*time.Second, h.Loop)
	assert.Equal(t, 6*time.Second, h.MsgWait)
	assert.Equal(t, f["UUID"], uuidString(h.UUID))

	// Created by the driver, read by sbd.
	nh := sbd.DefaultHeader(512)
	nh.Watchdog, nh.MsgWait = 2*time.Second, 4*time.Second
	require.NoError(t, sbd.Create(ctx, dev, nh))
	f = dump(t, dev)
	assert.Equal(t, "2.1", f["Header version"])
	assert.Equal(t, "512", f["Sector size"])
	assert.Equal(t, "2", f["Timeout (watchdog)"])
	assert.Equal(t, "4", f["Timeout (msgwait)"])
	assert.Equal(t, "1", f["Timeout (loop)"])
	assert.Empty(t, list(t, dev), "no slot in use")

	// Slots: allocated by either, found by both.
	sbdRun(t, "-d", dev, "allocate", "node-a")
	slot, err := sbd.Allocate(ctx, dev, "node-a")
	require.NoError(t, err)
	assert.Equal(t, 0, slot, "sbd's slot found")
	slot, err = sbd.Allocate(ctx, dev, "node-b")
	require.NoError(t, err)
	assert.Equal(t, 1, slot)
	l := list(t, dev)
	assert.Equal(t, [2]string{"clear", ""}, l["node-a"])
	assert.Equal(t, [2]string{"clear", ""}, l["node-b"])
}

func uuidString(u [16]byte) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// The agreement cases, on one device: what the driver writes, sbd list
// reads; what sbd message writes, the driver reads, off only once msgwait
// has passed since it first saw it (unknown until then).
func TestInteropMessages(t *testing.T) {
	ctx := t.Context()
	dev := loopDevice(t, 4<<20)
	sbdRun(t, "-d", dev, "-1", "1", "-4", "1", "create")
	sbdRun(t, "-d", dev, "allocate", "node-a")
	sbdRun(t, "-d", dev, "allocate", "node-b")
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{dev}, From: "fencer"})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	status := func(node string) fence.State {
		st, err := d.Status(ctx, node)
		require.NoError(t, err)
		return st
	}

	tests := []struct {
		name   string
		act    func()
		list   [2]string   // sbd list's message and sender for node-a
		before fence.State // at once: unknown while a fencing message has not stood msgwait
		after  fence.State // msgwait later
	}{
		{"driver off", func() { require.NoError(t, d.Set(ctx, "node-a", fence.StateOff)) }, [2]string{"off", "fencer"}, fence.StateUnknown, fence.StateOff},
		{"driver on (clear)", func() { require.NoError(t, d.Set(ctx, "node-a", fence.StateOn)) }, [2]string{"clear", ""}, fence.StateOn, fence.StateOn},
		{"sbd message off", func() { sbdRun(t, "-d", dev, "message", "node-a", "off") }, [2]string{"off", hostname(t)}, fence.StateUnknown, fence.StateOff},
		{"sbd message reset", func() { sbdRun(t, "-d", dev, "message", "node-a", "reset") }, [2]string{"reset", hostname(t)}, fence.StateUnknown, fence.StateOff},
		{"sbd message clear", func() { sbdRun(t, "-d", dev, "message", "node-a", "clear") }, [2]string{"clear", hostname(t)}, fence.StateOn, fence.StateOn},
		{"sbd message test", func() { sbdRun(t, "-d", dev, "message", "node-a", "test") }, [2]string{"test", hostname(t)}, fence.StateOn, fence.StateOn},
		{"sbd message crashdump", func() { sbdRun(t, "-d", dev, "message", "node-a", "crashdump") }, [2]string{"crashdump", hostname(t)}, fence.StateUnknown, fence.StateOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.act()
			assert.Equal(t, tt.list, list(t, dev)["node-a"], "sbd list")
			assert.Equal(t, tt.before, status("node-a"), "at once")
			time.Sleep(1100 * time.Millisecond)
			assert.Equal(t, tt.after, status("node-a"), "msgwait later")
			assert.Equal(t, fence.StateOn, status("node-b"), "the other slot")
			assert.Equal(t, [2]string{"clear", ""}, list(t, dev)["node-b"])
		})
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	require.NoError(t, err)
	return h
}

// fence_sbd and fencectl as fence_sbd on one device, side by side, each
// through the agreement cases in order: the same exit codes and standard output for
// list, list-status, off (each waits for msgwait: the agent in its sbd
// message, fencectl in its verification), status, on (a clear), reboot (a
// reset, which fencectl clears once it stood msgwait), status of a node
// without a slot, monitor. sbd list reads the same mailbox after each
// tool's off, on and reboot.
func TestAgreeFenceSBD(t *testing.T) {
	_, err := os.Stat("/usr/sbin/fence_sbd")
	need(t, err == nil, "fence_sbd is missing: install fence-agents")
	dev := loopDevice(t, 4<<20)
	sbdRun(t, "-d", dev, "-1", "1", "-4", "2", "create")
	sbdRun(t, "-d", dev, "allocate", "node-a")
	sbdRun(t, "-d", dev, "allocate", "node-b")
	bin := fencectlAs(t, "fence_sbd")

	run := func(tool string, args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, tool, append([]string{"--devices", dev}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String()
	}
	cases := []struct {
		args []string
		code int
		out  string
		list string // sbd list's message for node-a after the case, "" not checked
		// listAgent, when set, is sbd list's message after the agent's
		// run, where it differs from fencectl's.
		listAgent string
	}{
		{[]string{"-o", "list"}, 0, "node-a,node-a\nnode-b,node-b\n", "clear", ""},
		{[]string{"-o", "list-status"}, 0, "node-a,node-a,on\nnode-b,node-b,on\n", "", ""},
		{[]string{"-n", "node-a", "-o", "off", "--power-timeout", "10"}, 0, "Success: Powered OFF\n", "off", ""},
		{[]string{"-n", "node-a", "-o", "status"}, 2, "Status: OFF\n", "off", ""},
		// The agent's reset cleared ("Powered ON"; after fencectl's
		// reboot, "Already ON"), for the next tool.
		{[]string{"-n", "node-a", "-o", "on"}, 0, "*", "clear", ""},
		{[]string{"-n", "node-a", "-o", "status"}, 0, "Status: ON\n", "", ""},
		// A reboot (the method cycle, both tools' default): a reset;
		// fencectl clears it once it stood msgwait, the agent leaves it.
		{[]string{"-n", "node-a", "-o", "reboot", "--power-timeout", "10"}, 0, "Success: Rebooted\n", "clear", "reset"},
		// The agent's reset cleared ("Powered ON"; after fencectl's
		// reboot, "Already ON"), for the next tool.
		{[]string{"-n", "node-a", "-o", "on"}, 0, "*", "clear", ""},
		{[]string{"-n", "node-z", "-o", "status"}, 1, "", "", ""},
		{[]string{"-o", "monitor"}, 0, "", "", ""},
	}
	for _, tool := range []string{"/usr/sbin/fence_sbd", bin} {
		name := "agent"
		if tool == bin {
			name = "fencectl"
		}
		for _, c := range cases {
			code, out := run(tool, c.args...)
			assert.Equal(t, c.code, code, "%s %v: %s", name, c.args, out)
			if c.out != "*" {
				assert.Equal(t, c.out, out, "%s %v", name, c.args)
			}
			want := c.list
			if c.listAgent != "" && tool != bin {
				want = c.listAgent
			}
			if want != "" {
				assert.Equal(t, want, list(t, dev)["node-a"][0], "%s %v: sbd list", name, c.args)
			}
		}
	}
}

// watcherRunning reports whether the real sbd's watcher of dev runs.
func watcherRunning(t *testing.T, dev string) bool {
	out, err := exec.Command("ps", "-eo", "args").Output()
	require.NoError(t, err)
	return strings.Contains(string(out), "sbd: watcher: "+dev+" ")
}

// The real sbd's watcher (sbd watch) obeys what the driver writes: it
// answers the driver's test message, and on the driver's off it stops
// (in its debug mode 2, -Z -Z, sbd shuts itself down where it would fence
// the machine). It runs in a PID namespace of its own, its watchdog
// /dev/null: even a reboot call there ends only the namespace.
func TestRealSBDWatchObeysTheDriver(t *testing.T) {
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare is missing (util-linux)")
	ctx := t.Context()
	dev := loopDevice(t, 4<<20)
	sbdRun(t, "-d", dev, "-1", "1", "-4", "2", "create")
	sbdRun(t, "-d", dev, "allocate", "node-r")
	wctx, cancel := context.WithCancel(ctx)
	watch := exec.CommandContext(wctx, "unshare", "--pid", "--fork", "--kill-child", "sh", "-c",
		sbdPath+" -d "+dev+" -n node-r -w /dev/null -Z -Z -R watch && sleep 600")
	require.NoError(t, watch.Start())
	t.Cleanup(func() {
		cancel()
		_ = watch.Wait()
	})
	require.Eventually(t, func() bool { return watcherRunning(t, dev) }, 10*time.Second, 50*time.Millisecond, "sbd watch started")

	require.NoError(t, sbd.SendMessage(ctx, dev, "node-r", sbd.MessageTest, "fencer"))
	require.Eventually(t, func() bool { return list(t, dev)["node-r"][0] == "clear" }, 5*time.Second, 50*time.Millisecond, "sbd answered the test")

	d, err := sbd.New(ctx, sbd.Options{Devices: []string{dev}, From: "fencer"})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	require.NoError(t, d.Set(ctx, "node-r", fence.StateOff))
	require.Eventually(t, func() bool { return !watcherRunning(t, dev) }, 5*time.Second, 50*time.Millisecond, "sbd obeyed the off")
	assert.Equal(t, [2]string{"off", "fencer"}, list(t, dev)["node-r"], "the message stays")
	time.Sleep(2100 * time.Millisecond)
	st, err := d.Status(ctx, "node-r")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
}
