package sbd_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
)

// ramfsEnv names the directory, a ramfs mount of a mount namespace of its
// own, where TestNoDirectIOOnRamfs's helper runs.
const ramfsEnv = "FENCEKIT_SBD_RAMFS"

// An SBD device on a shared file (a ReadWriteMany volume): the driver
// fences through it and the node's watcher obeys it, with the same msgwait
// rule as on a disk; the file is read and written with direct I/O, as a
// disk is, so that another host's message is read from the file, not from
// this host's page cache.
func TestSharedFile(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 2*time.Second)
	wd := &watchdog{}
	wait, fenced := watch(t, &sbd.Watcher{Devices: []string{p}, Node: "node-f", Watchdog: wd})
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= 2 }, 10*time.Second, 50*time.Millisecond, "the watcher kicks")
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer"})
	require.NoError(t, err)
	defer d.Close()
	m := &fence.Method{Name: "sbd", Node: "node-f", Driver: "sbd", Device: d, Plug: "node-f",
		Options: fence.Options{PowerTimeout: 10 * time.Second, PollInterval: 100 * time.Millisecond}}
	start := time.Now()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.OffConfirmed)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "off once the message has stood msgwait")
	require.ErrorIs(t, wait(5*time.Second), sbd.ErrSelfFenced, "the node's watcher obeyed the file")
	assert.Equal(t, []sbd.Message{sbd.MessageOff}, fenced())
}

// A file system that does not honour direct I/O (ramfs, in a mount
// namespace of this test's) is refused with ErrNoDirectIO, naming the
// file, and nothing is written: neither a header by Create nor a message
// by the driver.
func TestNoDirectIOOnRamfs(t *testing.T) {
	if dir := os.Getenv(ramfsEnv); dir != "" {
		// The helper, in the namespace.
		p := filepath.Join(dir, "sbd.img")
		require.NoError(t, os.WriteFile(p, make([]byte, 1<<20), 0o600))
		err := sbd.Create(t.Context(), p, sbd.DefaultHeader(512))
		require.ErrorIs(t, err, sbd.ErrNoDirectIO)
		assert.Contains(t, err.Error(), p)
		_, err = sbd.New(t.Context(), sbd.Options{Devices: []string{p}})
		require.ErrorIs(t, err, sbd.ErrNoDirectIO)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(b, make([]byte, 1<<20)), "nothing written")
		return
	}
	unshare, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare is missing (util-linux)")
	need(t, os.Geteuid() == 0, "mounting a ramfs needs root")
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t ramfs ramfs "$1" && exec "$2" -test.run '^TestNoDirectIOOnRamfs$' -test.v`, "sh", dir, os.Args[0])
	cmd.Env = append(os.Environ(), ramfsEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestNoDirectIOOnRamfs", "%s", out)
}

// replaceFile puts a copy of the file at p in its place (a restore, a copy
// renamed over it): the same bytes, another file.
func replaceFile(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	tmp := p + ".new"
	require.NoError(t, os.WriteFile(tmp, b, 0o600))
	require.NoError(t, os.Rename(tmp, p))
}

// A shared SBD file replaced under its watcher: the watcher notices that
// its path names another file, watches the new one, and obeys the message
// the fencer writes there, so that the fencer's off by msgwait is true. A
// fencer that opened the old file refuses to write or read through it
// (ErrIO), so that it never proves an off from a file nobody watches.
func TestSharedFileReplaced(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 2*time.Second)
	wd := &watchdog{}
	wait, fenced := watch(t, &sbd.Watcher{Devices: []string{p}, Node: "node-r", Watchdog: wd})
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= 2 }, 10*time.Second, 50*time.Millisecond, "the watcher kicks")

	early, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer"})
	require.NoError(t, err)
	defer early.Close()
	replaceFile(t, p)
	// The watcher goes on kicking: it watches the new file.
	k0, _, _ := wd.state()
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= k0+2 }, 10*time.Second, 50*time.Millisecond, "still kicking, on the new file")

	// The fencer that opened the old file switches and proves nothing.
	err = early.Set(ctx, "node-r", fence.StateOff)
	require.ErrorIs(t, err, sbd.ErrIO)
	assert.Contains(t, err.Error(), "was replaced since it was opened")
	_, err = early.Status(ctx, "node-r")
	require.ErrorIs(t, err, sbd.ErrIO)

	// One that opens the new file fences the node, which obeys.
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer"})
	require.NoError(t, err)
	defer d.Close()
	m := &fence.Method{Name: "sbd", Node: "node-r", Driver: "sbd", Device: d, Plug: "node-r",
		Options: fence.Options{PowerTimeout: 10 * time.Second, PollInterval: 100 * time.Millisecond}}
	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.OffConfirmed)
	require.ErrorIs(t, wait(5*time.Second), sbd.ErrSelfFenced, "the watcher read the new file's message")
	assert.Equal(t, []sbd.Message{sbd.MessageOff}, fenced())
}
