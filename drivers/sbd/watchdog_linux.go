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
	f *os.File
}

// OpenLinuxWatchdog opens path (/dev/watchdog when empty), arming it, and
// sets its timeout (left as the driver has it when zero).
func OpenLinuxWatchdog(path string, timeout time.Duration) (*LinuxWatchdog, error) {
	if path == "" {
		path = "/dev/watchdog"
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("sbd: opening the watchdog: %w", err)
	}
	if timeout > 0 {
		if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.WDIOC_SETTIMEOUT, int(timeout/time.Second)); err != nil {
			f.Close()
			return nil, fmt.Errorf("sbd: setting the watchdog's timeout to %v: %w", timeout, err)
		}
	}
	return &LinuxWatchdog{f: f}, nil
}

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
