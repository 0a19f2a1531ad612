package sbd_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/internal/proctest"
)

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }

func fencectlAs(t testing.TB, name string) string { return proctest.FencectlAs(t, name) }

// watchdog is a test double: it counts kicks and records how it closed.
type watchdog struct {
	mu       sync.Mutex
	kicks    int
	closed   bool
	disarmed bool
}

func (w *watchdog) Kick() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kicks++
	return nil
}

func (w *watchdog) Close(disarm bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed, w.disarmed = true, disarm
	return nil
}

func (w *watchdog) state() (kicks int, closed, disarmed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kicks, w.closed, w.disarmed
}

// watch runs a Watcher in the background; the returned function waits for
// its end.
func watch(t *testing.T, w *sbd.Watcher) (wait func(time.Duration) error, fenced func() []sbd.Message) {
	t.Helper()
	var mu sync.Mutex
	var got []sbd.Message
	w.Fence = func(m sbd.Message) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the watcher did not stop")
		}
	})
	wait = func(d time.Duration) error {
		select {
		case err := <-done:
			done <- err
			return err
		case <-time.After(d):
			return errors.New("still watching")
		}
	}
	fenced = func() []sbd.Message {
		mu.Lock()
		defer mu.Unlock()
		return append([]sbd.Message(nil), got...)
	}
	return wait, fenced
}

// The real sbd writes the messages; the node's Watcher answers a test,
// and fences itself on an off, the message left for the fencer's proof.
func TestWatcherAgainstRealSBD(t *testing.T) {
	dev := loopDevice(t, 4<<20)
	sbdRun(t, "-d", dev, "-1", "1", "-4", "2", "create")
	wd := &watchdog{}
	wait, fenced := watch(t, &sbd.Watcher{Devices: []string{dev}, Node: "node-w", Watchdog: wd})
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= 2 }, 10*time.Second, 50*time.Millisecond, "kicking")
	assert.Equal(t, [2]string{"clear", ""}, list(t, dev)["node-w"], "the slot allocated by the watcher")

	sbdRun(t, "-d", dev, "message", "node-w", "test") // waits msgwait
	assert.Equal(t, "clear", list(t, dev)["node-w"][0], "a test answered")
	assert.Error(t, wait(0), "still watching")

	sbdRun(t, "-d", dev, "message", "node-w", "off") // waits msgwait, by which time the node is gone
	require.ErrorIs(t, wait(5*time.Second), sbd.ErrSelfFenced)
	assert.Equal(t, []sbd.Message{sbd.MessageOff}, fenced())
	_, closed, disarmed := wd.state()
	assert.True(t, closed)
	assert.False(t, disarmed, "the watchdog left armed: it resets the node even if the fence action fails")
	assert.Equal(t, "off", list(t, dev)["node-w"][0], "the message stays: the fencer's proof, and the next start's warning")
}

// A node that loses its SBD device stops kicking its watchdog and fences
// itself within the watchdog timeout.
func TestWatcherLosesItsDisk(t *testing.T) {
	p := fileDevice(t, 2*time.Second)
	wd := &watchdog{}
	wait, fenced := watch(t, &sbd.Watcher{Devices: []string{p}, Node: "node-w", Watchdog: wd})
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= 2 }, 10*time.Second, 50*time.Millisecond)
	lost := time.Now()
	require.NoError(t, os.Truncate(p, 0))
	require.ErrorIs(t, wait(10*time.Second), sbd.ErrSelfFenced)
	assert.Less(t, time.Since(lost), 3*time.Second, "within the watchdog timeout (1 s) and a loop")
	assert.Equal(t, []sbd.Message{sbd.MessageReset}, fenced())
}

// A fencing message from before the start: a clean start refuses to run;
// otherwise it is cleared. An exit message stops the watcher cleanly.
func TestWatcherStartAndExit(t *testing.T) {
	ctx := t.Context()
	p := fileDevice(t, 2*time.Second, "node-w")
	require.NoError(t, sbd.SendMessage(ctx, p, "node-w", sbd.MessageOff, "fencer"))
	err := (&sbd.Watcher{Devices: []string{p}, Node: "node-w", Watchdog: &watchdog{}, StartClean: true}).Run(ctx)
	require.ErrorIs(t, err, sbd.ErrFencedBefore)

	wd := &watchdog{}
	wait, fenced := watch(t, &sbd.Watcher{Devices: []string{p}, Node: "node-w", Watchdog: wd})
	require.Eventually(t, func() bool { k, _, _ := wd.state(); return k >= 2 }, 10*time.Second, 50*time.Millisecond, "started after clearing")
	require.NoError(t, sbd.SendMessage(ctx, p, "node-w", sbd.MessageExit, "admin"))
	require.NoError(t, wait(5*time.Second), "a clean stop")
	_, closed, disarmed := wd.state()
	assert.True(t, closed && disarmed)
	assert.Empty(t, fenced())
}

// A header corrupted on the disk (a loop of 0 s, which would stop the
// watcher's ticker, or of years, which would never kick the watchdog again;
// a msgwait below the watchdog timeout) is refused when read, as Create
// refuses to write it: the watcher returns an error naming the field,
// never panics, and never kicks the watchdog.
func TestWatcherRefusesACorruptedHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int64
		value  uint32
	}{
		{"loop 0", 24, 0},
		{"loop of years", 24, 1 << 30},
		{"watchdog of years", 16, 1 << 31},
		{"msgwait 0", 28, 0},
		{"allocate 0", 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fileDevice(t, 2*time.Second)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], tc.value)
			_, err = f.WriteAt(b[:], tc.offset)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			wd := &watchdog{}
			err = (&sbd.Watcher{Devices: []string{p}, Node: "node-w", Watchdog: wd}).Run(t.Context())
			require.ErrorIs(t, err, sbd.ErrNotSBD)
			kicks, _, _ := wd.state()
			assert.Zero(t, kicks)
			_, err = sbd.ReadHeader(t.Context(), p)
			assert.ErrorIs(t, err, sbd.ErrNotSBD, "the fencing side refuses it too")
		})
	}
}
