package sbd_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/fencetest"
)

// clock is a settable wall clock (Now, Step) with the boot's clock beside
// it (Uptime, which Add moves too). The wall clock is a named field, not
// embedded, so that no method of it moves the wall clock alone unseen.
type clock struct {
	wall *fencetest.Clock
	mu   sync.Mutex
	up   time.Duration // the boot's clock (CLOCK_BOOTTIME), from 1 h
	// boot is the boot's identity; zero stands for a first boot.
	boot [16]byte
}

func newClock() *clock {
	return &clock{wall: fencetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
}

// Uptime is the boot's clock, for sbd.Options.Uptime.
func (c *clock) Uptime() ([16]byte, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	boot := c.boot
	boot[0] |= 1
	return boot, time.Hour + c.up, nil
}

// Step moves the wall clock alone, as an administrator or a bad NTP
// server does.
func (c *clock) Step(d time.Duration) { c.wall.Add(d) }

// Now is the wall clock.
func (c *clock) Now() time.Time { return c.wall.Now() }

// Reboot starts another boot.
func (c *clock) Reboot() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boot[1]++
	c.up = -time.Hour + time.Minute
}

// Add moves both clocks.
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall.Add(d)
	c.up += d
}

// fileDevice creates a file-backed SBD device with nodes' slots.
func fileDevice(t *testing.T, msgwait time.Duration, nodes ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sbd.img")
	require.NoError(t, os.WriteFile(p, make([]byte, 1<<20), 0o600))
	h := sbd.DefaultHeader(512)
	h.Watchdog, h.MsgWait = msgwait/2, msgwait
	require.NoError(t, sbd.Create(t.Context(), p, h))
	for _, n := range nodes {
		_, err := sbd.Allocate(t.Context(), p, n)
		require.NoError(t, err)
	}
	return p
}

// A message stands for msgwait before its node is reported off (unknown
// until then: it may still run); one that was overwritten or cleared
// starts the wait again; a clear is on.
func TestStatusWaitsForMsgwait(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second, "n1", "n2")
	c := newClock()
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	st, err := d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "a clear mailbox")

	require.NoError(t, d.Set(ctx, "n1", fence.StateOff))
	c.Add(9 * time.Second)
	st, err = d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "9 s of a 10 s msgwait: not yet off, and not known on")
	c.Add(time.Second)
	st, err = d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "msgwait passed, the message stands")
	st, _ = d.Status(ctx, "n2")
	assert.Equal(t, fence.StateOn, st, "the other node's slot is untouched")

	// Overwritten by another sender's message: the wait starts again.
	require.NoError(t, sbd.SendMessage(ctx, p, "n1", sbd.MessageReset, "another"))
	st, _ = d.Status(ctx, "n1")
	assert.Equal(t, fence.StateUnknown, st, "another message: no proof yet")
	c.Add(10 * time.Second)
	st, _ = d.Status(ctx, "n1")
	assert.Equal(t, fence.StateOff, st, "it stood msgwait since first seen")

	// Cleared, then the same message again: no proof either.
	require.NoError(t, sbd.SendMessage(ctx, p, "n1", sbd.MessageClear, ""))
	st, _ = d.Status(ctx, "n1")
	assert.Equal(t, fence.StateOn, st)
	require.NoError(t, sbd.SendMessage(ctx, p, "n1", sbd.MessageReset, "another"))
	st, err = d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "a fencing message, not yet msgwait: neither proven off nor known on")

	// On clears.
	require.NoError(t, d.Set(ctx, "n1", fence.StateOn))
	boxes, errs := d.Mailbox(ctx, "n1")
	require.NoError(t, errs[0])
	assert.Equal(t, sbd.Mailbox{}, boxes[0])

	// Unknown node.
	_, err = d.Status(ctx, "n9")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	err = d.Set(ctx, "n9", fence.StateOff)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.True(t, fence.IsNotDone(err))
}

// Another process of this host (fencectl's next run) knows when this host
// wrote a message from the boot's clock stamped in the sector; another
// sender's stamp is not trusted (its clock may be ahead).
func TestStampedMessages(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second, "n1")
	c := newClock()
	first, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	require.NoError(t, first.Set(ctx, "n1", fence.StateOff))
	first.Close()
	c.Add(11 * time.Second)

	same, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	defer same.Close()
	st, err := same.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "this host's stamp: the message stood 11 s")

	other, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "another-host", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	defer other.Close()
	st, err = other.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "another host's stamp is not trusted: the wait starts at the first read")
}

// Elapsed time is the boot's clock, never the wall clock: in a new process
// of this host, a wall clock stepped forward an hour after the write does
// not make the message stand longer (it used to read off at once), nor one
// stepped back shorter; a stamp of another boot (the host restarted since)
// counts from the first read, as no clock of this boot knows it.
func TestStampedMessagesAcrossClockSteps(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second, "n1")
	c := newClock()
	open := func() *sbd.Device {
		d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return d
	}
	status := func(d *sbd.Device) fence.State {
		st, err := d.Status(ctx, "n1")
		require.NoError(t, err)
		return st
	}
	require.NoError(t, open().Set(ctx, "n1", fence.StateOff))
	c.Add(2 * time.Second)
	c.Step(time.Hour)
	assert.Equal(t, fence.StateUnknown, status(open()), "2 s of 10, though the wall clock says an hour")
	c.Step(-2 * time.Hour)
	c.Add(8 * time.Second)
	assert.Equal(t, fence.StateOff, status(open()), "10 s of 10, though the wall clock went back an hour")

	// Written in an earlier boot of this host: from the first read on.
	c.Reboot()
	fresh := open()
	assert.Equal(t, fence.StateUnknown, status(fresh), "another boot's stamp tells nothing")
	c.Add(10 * time.Second)
	assert.Equal(t, fence.StateOff, status(fresh), "it stood msgwait since this Device first read it")
}

// A message of this host cleared and written again between two reads of
// another Device (fencectl's next run) has a new stamp: its wait starts
// again, though the mailbox reads the same.
func TestRewrittenMessageStartsAgain(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second, "n1")
	c := newClock()
	writer, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	defer writer.Close()
	reader, err := sbd.New(ctx, sbd.Options{Devices: []string{p}, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	defer reader.Close()

	require.NoError(t, writer.Set(ctx, "n1", fence.StateOff))
	c.Add(9 * time.Second)
	st, err := reader.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "9 s of 10")
	require.NoError(t, writer.Set(ctx, "n1", fence.StateOn))
	c.Add(500 * time.Millisecond)
	require.NoError(t, writer.Set(ctx, "n1", fence.StateOff))
	c.Add(time.Second)
	st, err = reader.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "the message standing now was written 1 s ago")
	c.Add(9 * time.Second)
	st, err = reader.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
}

// A header whose msgwait is shorter than its watchdog timeout (or zero)
// proves nothing: the devices are refused.
func TestHeaderWithoutProofRefused(t *testing.T) {
	p := fileDevice(t, 10*time.Second, "n1")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0, 0, 0, 0}, 28) // msgwait 0
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = sbd.New(t.Context(), sbd.Options{Devices: []string{p}})
	require.ErrorIs(t, err, sbd.ErrNotSBD)
	assert.Contains(t, err.Error(), "msgwait must be at least the watchdog timeout")
}

// Three devices: a message counts on more than half; a device lost is
// tolerated, two are not.
func TestQuorumOfDevices(t *testing.T) {
	ctx := t.Context()
	paths := []string{fileDevice(t, 4*time.Second, "n1"), fileDevice(t, 4*time.Second, "n1"), fileDevice(t, 4*time.Second, "n1")}
	c := newClock()
	d, err := sbd.New(ctx, sbd.Options{Devices: paths, From: "fencer", Now: c.Now, Uptime: c.Uptime})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	require.NoError(t, os.Truncate(paths[2], 0)) // a device lost
	require.NoError(t, d.Set(ctx, "n1", fence.StateOff), "two of three written")
	c.Add(4 * time.Second)
	st, err := d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "two of three hold it for msgwait")

	// Cleared behind its back on one more device: no majority for off.
	require.NoError(t, sbd.SendMessage(ctx, paths[1], "n1", sbd.MessageClear, ""))
	st, err = d.Status(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateUnknown, st, "one of three is no proof, and one of three off is not on")

	require.NoError(t, os.Truncate(paths[1], 0))
	_, err = d.Status(ctx, "n1")
	assert.ErrorIs(t, err, sbd.ErrIO, "one device of three read: no majority")
	err = d.Set(ctx, "n1", fence.StateOff)
	require.Error(t, err)
}

// The header as Create writes it, read back; a device without one is
// refused.
func TestHeader(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second)
	h, err := sbd.ReadHeader(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, 255, h.Slots)
	assert.Equal(t, 512, h.SectorSize)
	assert.Equal(t, 5*time.Second, h.Watchdog)
	assert.Equal(t, 10*time.Second, h.MsgWait)
	assert.Equal(t, time.Second, h.Loop)
	assert.NotEqual(t, [16]byte{}, h.UUID)

	blank := filepath.Join(t.TempDir(), "blank")
	require.NoError(t, os.WriteFile(blank, make([]byte, 4096), 0o600))
	_, err = sbd.ReadHeader(ctx, blank)
	assert.ErrorIs(t, err, sbd.ErrNotSBD)
	_, err = sbd.New(ctx, sbd.Options{Devices: []string{blank}})
	assert.ErrorIs(t, err, sbd.ErrNotSBD)

	bad := sbd.DefaultHeader(512)
	bad.MsgWait = time.Second
	assert.Error(t, sbd.Create(ctx, blank, bad), "msgwait below the watchdog timeout")
}

// The driver through the registry: its parameters, and a power_timeout
// that could never see msgwait pass is refused.
func TestDriverOpen(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 10*time.Second, "n1")
	open := func(kv ...string) (*fence.Method, error) {
		return fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "n1", Name: "sbd", Driver: "fence_sbd", Params: fence.NewParams(append([]string{"devices", p, "plug", "n1"}, kv...)...)})
	}
	m, err := open("power_timeout", "15")
	require.NoError(t, err)
	assert.Equal(t, "sbd", m.Driver)
	if c, ok := m.Device.(interface{ Close() error }); ok {
		c.Close()
	}
	_, err = open("power_timeout", "10")
	var pe *fence.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "power_timeout", pe.Key)
	_, err = open("power_timeout", "30", "off_message", "test")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "off_message", pe.Key)
	_, err = fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "n1", Name: "sbd", Driver: "sbd", Params: fence.NewParams("devices", "a,b,c,d", "plug", "n1")})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "devices", pe.Key)
}

// fence.Do: an off verified once msgwait has passed (a real clock: the
// message stands one second).
func TestDoOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := fileDevice(t, 2*time.Second, "n1")
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	m := &fence.Method{Name: "sbd", Node: "n1", Driver: "sbd", Device: d, Plug: "n1",
		Options: fence.Options{PowerTimeout: 5 * time.Second, PollInterval: 100 * time.Millisecond}}
	start := time.Now()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "not before msgwait")
}

// A reboot by the method cycle (fence_sbd's default) writes a reset, is
// done only once the reset has stood for msgwait, and leaves the mailbox
// clear, verified on; a reset cleared by another writer before msgwait is
// no proof: the cycle fails and fence.Do reports the reboot unconfirmed.
func TestDoRebootCycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := fileDevice(t, 2*time.Second, "n1")
	d, err := sbd.New(ctx, sbd.Options{Devices: []string{p}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	m := &fence.Method{Name: "sbd", Node: "n1", Driver: "sbd", Device: d, Plug: "n1",
		Options: fence.Options{PowerTimeout: 5 * time.Second, PollInterval: 100 * time.Millisecond, RebootMethod: fence.RebootCycle}}

	// The reset stands while the cycle waits.
	seen := make(chan sbd.Message, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		boxes, _ := d.Mailbox(ctx, "n1")
		seen <- boxes[0].Message
	}()
	start := time.Now()
	res, err := fence.Do(ctx, m, fence.ActionReboot)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "not before msgwait")
	assert.Equal(t, fence.StateOn, res.State)
	assert.Equal(t, sbd.MessageReset, <-seen)
	boxes, errs := d.Mailbox(ctx, "n1")
	require.NoError(t, errs[0])
	assert.Equal(t, sbd.MessageClear, boxes[0].Message, "cleared once the reset stood msgwait")

	// Another writer clears the reset half-way.
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = sbd.SendMessage(ctx, p, "n1", sbd.MessageClear, "")
	}()
	res, err = fence.Do(ctx, m, fence.ActionReboot)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cleared before it stood for msgwait")
	assert.False(t, res.Fenced())
	assert.False(t, fence.IsNotDone(err), "a reset was written: the outcome is unknown, not 'nothing done'")
}

// The controller's configuration takes the driver like any other, by its
// name or fence_sbd's: a method is checked against its parameters (an
// unknown key, a missing or excess device named by ConfigMap and key),
// and its defaults are fence_sbd's.
func TestConfigTakesSBD(t *testing.T) {
	cms := func(method string) []config.ConfigMap {
		return []config.ConfigMap{
			{Name: "fence-method-pill-n1", Data: map[string]string{"method.properties": method}},
			{Name: "fence-config-n1", Data: map[string]string{"config.properties": "power_management=pill\n"}},
		}
	}
	for _, ok := range []string{
		"driver=sbd\ndevices=/dev/disk/by-id/sbd-a,/dev/disk/by-id/sbd-b,/dev/disk/by-id/sbd-c\nplug=n1\naction=off\n",
		"agent_name=fence_sbd\ndevices=/dev/sdb\nport=n1\nsbd_path=/usr/sbin/sbd\nmethod=cycle\n",
	} {
		assert.NoError(t, config.ValidateConfigMaps(cms(ok), fence.DefaultRegistry()), ok)
	}
	for body, key := range map[string]string{
		"driver=sbd\nplug=n1\n":                  "devices",
		"driver=sbd\ndevices=a,b,c,d\nplug=n1\n": "devices",
		// An unknown key near no parameter is named by its line alone (it
		// may be part of a secret written on a line of its own).
		"driver=sbd\ndevices=/dev/sdb\nplug=n1\nmsgwait=5\n":        "",
		"driver=sbd\ndevices=/dev/sdb\nplug=n1\noff_message=test\n": "off_message",
	} {
		err := config.ValidateConfigMaps(cms(body), fence.DefaultRegistry())
		var ce *config.Error
		require.ErrorAs(t, err, &ce, body)
		assert.Equal(t, "fence-method-pill-n1", ce.ConfigMap, body)
		assert.Equal(t, key, ce.Key, body)
	}

	ctx := t.Context()
	p := fileDevice(t, 2*time.Second, "n1")
	m, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "n1", Name: "pill", Driver: "fence_sbd", Params: fence.NewParams("devices", p, "plug", "n1")})
	require.NoError(t, err)
	t.Cleanup(func() { m.Device.(*sbd.Device).Close() })
	assert.Equal(t, 30*time.Second, m.Options.PowerTimeout, "fence_sbd's default")
	assert.Equal(t, fence.RebootCycle, m.Options.RebootMethod, "fence_sbd's default")
}
