//go:build !linux

package sbd

import (
	"errors"
	"time"
)

// KernelUptime is the host's boot and the time since it; only Linux tells
// them here, so elsewhere a message written by another process counts
// from when this one first reads it.
func KernelUptime() (boot [16]byte, up time.Duration, err error) {
	return boot, 0, errors.New("sbd: no boot clock on this system")
}
