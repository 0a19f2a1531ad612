package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// SimWatchdog stands in for a hardware watchdog in tests: it records its
// kicks and, when it is not kicked within Timeout (or is closed armed and
// then not kicked), the moment it would have reset the machine. With Path
// set, its state is written there after each change ("kicks N", "last
// TIME" of the last kick, then "expired TIME" once expired), for a test
// watching another process: one that stops or kills that process reads
// when the watchdog would have reset the machine (the last kick and
// Timeout).
type SimWatchdog struct {
	Timeout time.Duration
	Path    string

	mu      sync.Mutex
	kicks   int
	last    time.Time
	expired time.Time
	closed  bool
	timer   *time.Timer
}

// NewSimWatchdog returns a SimWatchdog, armed: it expires Timeout from now
// unless kicked.
func NewSimWatchdog(timeout time.Duration, path string) *SimWatchdog {
	w := &SimWatchdog{Timeout: timeout, Path: path}
	w.timer = time.AfterFunc(timeout, w.expire)
	w.write()
	return w
}

func (w *SimWatchdog) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expired.IsZero() {
		w.expired = time.Now()
		w.writeLocked()
	}
}

// ErrExpired means the simulated watchdog has expired: the machine would
// have been reset.
var ErrExpired = errors.New("nodeagent: the watchdog expired")

// Kick resets its timer.
func (w *SimWatchdog) Kick() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.expired.IsZero() {
		return ErrExpired
	}
	if w.closed {
		return errors.New("nodeagent: the watchdog is closed")
	}
	w.kicks++
	w.last = time.Now()
	w.timer.Reset(w.Timeout)
	w.writeLocked()
	return nil
}

// Close stops it (disarm) or leaves it to expire.
func (w *SimWatchdog) Close(disarm bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if disarm && w.expired.IsZero() {
		w.timer.Stop()
	}
	return nil
}

// State returns the kicks so far and when it expired (zero while not).
func (w *SimWatchdog) State() (kicks int, expired time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kicks, w.expired
}

func (w *SimWatchdog) write() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked()
}

func (w *SimWatchdog) writeLocked() {
	if w.Path == "" {
		return
	}
	s := fmt.Sprintf("kicks %d\n", w.kicks)
	if !w.last.IsZero() {
		s += "last " + w.last.UTC().Format(time.RFC3339Nano) + "\n"
	}
	if !w.expired.IsZero() {
		s += "expired " + w.expired.UTC().Format(time.RFC3339Nano) + "\n"
	}
	tmp := w.Path + ".tmp"
	if os.WriteFile(tmp, []byte(s), 0o600) == nil {
		_ = os.Rename(tmp, w.Path)
	}
}
