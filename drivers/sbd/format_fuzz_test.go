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

// A mailbox sector from the disk (any bytes another host or a fault left):
// its stamp decodes without a panic, a stamp without its boot clock (or
// with a zero one) gives no boot to trust, and a stamp written decodes back
// to itself.
func FuzzMailboxStamp(f *testing.F) {
	b := make([]byte, 512)
	Mailbox{Message: MessageOff, From: "fencer"}.encodeStamped(b, written{wall: time.Unix(0, 1e18), boot: [16]byte{1, 2}, uptime: time.Hour})
	f.Add(b)
	f.Add(b[:stampAt+16])
	f.Add(make([]byte, 512))
	f.Fuzz(func(t *testing.T, in []byte) {
		w := stamp(in)
		if w.booted() && (w.uptime <= 0 || !w.stamped()) {
			t.Fatalf("a boot without its clock, or without its mark: %+v", w)
		}
		if !w.stamped() {
			return
		}
		out := make([]byte, 512)
		decodeMailbox(in).encodeStamped(out, w)
		if back := stamp(out); !back.equal(w) {
			t.Fatalf("round trip: %+v, then %+v", w, back)
		}
	})
}
