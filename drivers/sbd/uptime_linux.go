//go:build linux

package sbd

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KernelUptime is the host's boot and the time since it as the kernel
// counts it (its boot_id, and CLOCK_BOOTTIME: suspended time included; no
// setting of the wall clock changes it): the clock by which a process of
// this host tells how long a message written by another process of this
// host has stood.
func KernelUptime() (boot [16]byte, up time.Duration, err error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return boot, 0, fmt.Errorf("sbd: the boot's identity: %w", err)
	}
	id, err := parseBootID(strings.TrimSpace(string(b)))
	if err != nil {
		return boot, 0, err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return boot, 0, fmt.Errorf("sbd: CLOCK_BOOTTIME: %w", err)
	}
	return id, time.Duration(ts.Nano()), nil
}
