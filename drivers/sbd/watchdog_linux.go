//go:build linux

package sbd

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// LinuxWatchdog is a Watchdog on a Linux watchdog device (/dev/watchdog):
// opening it arms it; it resets the machine when no kick comes within its
// timeout; a close after the magic character 'V' disarms it.
type LinuxWatchdog struct {
	f        *os.File
	timeout  time.Duration
	identity string
	magic    bool
}

// OpenLinuxWatchdog opens path (/dev/watchdog when empty), arming it, and
// sets its timeout (left as the driver has it when zero), which must be
// whole seconds. The timeout is read back: a driver that rounds it up is
// refused (what the watchdog runs with is what a proof by time counts
// on), and the watchdog disarmed again.
func OpenLinuxWatchdog(path string, timeout time.Duration) (*LinuxWatchdog, error) {
	return OpenLinuxWatchdogArmed(path, timeout, false)
}

// OpenLinuxWatchdogArmed is OpenLinuxWatchdog for a watchdog that may be
// guarding the machine already (armed by an earlier process of this boot):
// with keepArmed, a failure leaves it armed rather than disarm it.
func OpenLinuxWatchdogArmed(path string, timeout time.Duration, keepArmed bool) (*LinuxWatchdog, error) {
	if path == "" {
		path = "/dev/watchdog"
	}
	if timeout%time.Second != 0 {
		return nil, fmt.Errorf("sbd: a watchdog's timeout is whole seconds, not %v", timeout)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("sbd: opening the watchdog: %w", err)
	}
	w := &LinuxWatchdog{f: f}
	fail := func(err error) (*LinuxWatchdog, error) {
		_ = w.Close(!keepArmed)
		return nil, err
	}
	fd := int(f.Fd())
	if timeout > 0 {
		if err := unix.IoctlSetPointerInt(fd, unix.WDIOC_SETTIMEOUT, int(timeout/time.Second)); err != nil {
			return fail(fmt.Errorf("sbd: setting the watchdog's timeout to %v: %w", timeout, err))
		}
	}
	secs, err := unix.IoctlGetInt(fd, unix.WDIOC_GETTIMEOUT)
	if err != nil {
		return fail(fmt.Errorf("sbd: reading the watchdog's timeout: %w", err))
	}
	w.timeout = time.Duration(secs) * time.Second
	if timeout > 0 && w.timeout > timeout {
		return fail(fmt.Errorf("sbd: the watchdog runs with a timeout of %v, more than the %v asked", w.timeout, timeout))
	}
	if info, err := unix.IoctlGetWatchdogInfo(fd); err == nil {
		w.identity = unix.ByteSliceToString(info.Identity[:])
		w.magic = info.Options&unix.WDIOF_MAGICCLOSE != 0
	}
	return w, nil
}

// Timeout is the timeout the watchdog runs with, as it reads back.
func (w *LinuxWatchdog) Timeout() time.Duration { return w.timeout }

// Identity is the driver's name for the watchdog ("Software Watchdog" for
// softdog).
func (w *LinuxWatchdog) Identity() string { return w.identity }

// MagicClose reports whether the watchdog stays armed when its device is
// closed without the magic character: what keeps a node guarded once the
// process that kicked it died. A watchdog without it stops at any close.
func (w *LinuxWatchdog) MagicClose() bool { return w.magic }

// Kick writes to the device, which restarts its countdown.
func (w *LinuxWatchdog) Kick() error {
	_, err := w.f.Write([]byte{'1'})
	return err
}

// Close closes the device, after the magic 'V' that disarms it when disarm
// is set; left armed, the watchdog resets the machine at its timeout.
func (w *LinuxWatchdog) Close(disarm bool) error {
	if disarm {
		if _, err := w.f.Write([]byte{'V'}); err != nil {
			w.f.Close()
			return err
		}
	}
	return w.f.Close()
}
