package sbd

import (
	"testing"
	"time"
)

// FuzzDecodeHeader: whatever a disk holds, reading its header never
// panics, and a header it accepts is one Create would write (bounded
// timeouts of a second or more, msgwait at least the watchdog timeout), so
// that the watcher's loop and the fencer's wait are sane; it encodes back
// to the same header.
func FuzzDecodeHeader(f *testing.F) {
	b := make([]byte, 512)
	DefaultHeader(512).encode(b)
	f.Add(b[:headerLen])
	h := DefaultHeader(512)
	h.Loop = 0
	h.encode(b)
	f.Add(b[:headerLen])
	f.Fuzz(func(t *testing.T, in []byte) {
		sector := make([]byte, 512)
		copy(sector, in)
		h, err := decodeHeader(sector, 512)
		if err != nil {
			return
		}
		if err := h.validate(); err != nil {
			t.Fatalf("accepted a header Create refuses: %v", err)
		}
		if h.Loop < time.Second || h.Loop > MaxTimeout || h.MsgWait < h.Watchdog {
			t.Fatalf("accepted %+v", h)
		}
		out := make([]byte, 512)
		h.encode(out)
		back, err := decodeHeader(out, 512)
		if err != nil || back != h {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}
