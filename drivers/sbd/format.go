package sbd

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The on-disk format of SBD, version 2 (as ClusterLabs' sbd 1.5 writes
// it). Sector 0 holds the header; slot i holds a node's name in sector
// 1+2i and its mailbox in sector 2+2i. Every sector is the device's
// logical sector size (the header records it; 512 on most disks).
//
//	header:  magic "SBD_SBD_" [8], version (2) [1], slots [1], padding [2],
//	         sector size, watchdog, allocate, loop and msgwait timeouts
//	         (seconds) [4 each, big-endian], minor version [1], UUID [16]
//	node:    in use [1], name [64, NUL-terminated]
//	mailbox: command [1, signed], sender's name [64, NUL-terminated]
const (
	magic        = "SBD_SBD_"
	version      = 2
	nameMax      = 63 // a name's bytes, its NUL excluded
	headerLen    = 49 // the header's bytes as written (the C struct's, unpadded tail)
	DefaultSlots = 255
)

// Message is the command in a node's mailbox.
type Message int8

// The messages sbd knows. The watcher of a node acts on each; Reset, Off
// and Crashdump self-fence the node.
const (
	MessageClear     Message = 0 // an empty mailbox ("clear")
	MessageTest      Message = 1 // answered by clearing the mailbox
	MessageReset     Message = 2 // the node resets itself
	MessageOff       Message = 3 // the node powers itself off
	MessageExit      Message = 4 // the node's sbd stops (a clean stop)
	MessageCrashdump Message = 5 // the node crashes into its kdump kernel
)

var messageNames = map[Message]string{
	MessageClear: "clear", MessageTest: "test", MessageReset: "reset",
	MessageOff: "off", MessageExit: "exit", MessageCrashdump: "crashdump",
}

// String returns sbd's name of the message ("off"), as sbd list prints it.
func (m Message) String() string {
	if s, ok := messageNames[m]; ok {
		return s
	}
	return fmt.Sprintf("unknown(%d)", int8(m))
}

// Kills reports whether the message makes its node fence itself.
func (m Message) Kills() bool {
	return m == MessageReset || m == MessageOff || m == MessageCrashdump
}

// ParseMessage reads a message's name, as sbd message takes it.
func ParseMessage(s string) (Message, error) {
	for m, n := range messageNames {
		if n == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("sbd: %q is not a message (clear, test, reset, off, exit, crashdump)", s)
}

// Header is a device's header: how many slots it has and the timeouts every
// node's sbd follows.
type Header struct {
	Slots      int
	SectorSize int
	// Watchdog is how long a node's watchdog waits to reset it when its
	// sbd stops tickling it; MsgWait how long a message takes to be sure to
	// have been acted upon (twice Watchdog by default): a node that has not
	// cleared a message msgwait after it was written has fenced itself or
	// lost its disk, and then its watchdog has fired.
	Watchdog, Allocate, Loop, MsgWait time.Duration
	MinorVersion                      int
	UUID                              [16]byte
}

// DefaultHeader is what sbd create writes by default: 255 slots, watchdog
// 5 s, allocate 2 s, loop 1 s, msgwait 10 s.
func DefaultHeader(sectorSize int) Header {
	return Header{Slots: DefaultSlots, SectorSize: sectorSize, Watchdog: 5 * time.Second,
		Allocate: 2 * time.Second, Loop: time.Second, MsgWait: 10 * time.Second, MinorVersion: 1}
}

// ErrNotSBD means the device holds no SBD header (or one of another
// version, or another sector size than the device's).
var ErrNotSBD = errors.New("not an SBD device")

// decodeHeader reads a header sector.
func decodeHeader(b []byte, sectorSize int) (Header, error) {
	if len(b) < headerLen || string(b[:8]) != magic {
		return Header{}, fmt.Errorf("%w: no SBD header (magic)", ErrNotSBD)
	}
	if b[8] != version {
		return Header{}, fmt.Errorf("%w: header version %d, want %d", ErrNotSBD, b[8], version)
	}
	secs := func(off int) time.Duration {
		return time.Duration(binary.BigEndian.Uint32(b[off:off+4])) * time.Second
	}
	h := Header{
		Slots:        int(b[9]),
		SectorSize:   int(binary.BigEndian.Uint32(b[12:16])),
		Watchdog:     secs(16),
		Allocate:     secs(20),
		Loop:         secs(24),
		MsgWait:      secs(28),
		MinorVersion: int(b[32]),
	}
	copy(h.UUID[:], b[33:49])
	if sectorSize > 0 && h.SectorSize != sectorSize {
		return Header{}, fmt.Errorf("%w: header sector size %d, the device's %d", ErrNotSBD, h.SectorSize, sectorSize)
	}
	// What Create refuses to write, reading refuses: a field checked only
	// on the way out would reach the watcher unchecked (a loop of 0 s
	// stops its ticker, one of years never kicks the watchdog again). A
	// message proves a fence only once it has stood for msgwait, the
	// watchdog having fired by then: a header whose msgwait is zero or
	// shorter than its watchdog timeout proves nothing.
	if err := h.validate(); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrNotSBD, err)
	}
	return h, nil
}

// encode writes the header into a sector.
func (h Header) encode(b []byte) {
	clear(b)
	copy(b, magic)
	b[8] = version
	b[9] = byte(h.Slots)
	put := func(off int, v uint32) { binary.BigEndian.PutUint32(b[off:off+4], v) }
	put(12, uint32(h.SectorSize))
	put(16, uint32(h.Watchdog/time.Second))
	put(20, uint32(h.Allocate/time.Second))
	put(24, uint32(h.Loop/time.Second))
	put(28, uint32(h.MsgWait/time.Second))
	b[32] = byte(h.MinorVersion)
	copy(b[33:49], h.UUID[:])
}

// MaxTimeout bounds each of a header's timeouts (watchdog, allocate, loop,
// msgwait): a larger one is a corrupted header, never a setting.
const MaxTimeout = time.Hour

// validate checks a header: what Create writes, and what a read header
// must be.
func (h Header) validate() error {
	switch {
	case h.Slots < 1 || h.Slots > 255:
		return fmt.Errorf("sbd: %d slots: want 1 to 255", h.Slots)
	case h.SectorSize < 512 || h.SectorSize > 1<<16 || h.SectorSize&(h.SectorSize-1) != 0:
		return fmt.Errorf("sbd: sector size %d: want a power of two from 512 to 65536", h.SectorSize)
	case h.MsgWait < h.Watchdog:
		// sbd's own rule: a message is acted upon within msgwait only if
		// the watchdog fires before it.
		return fmt.Errorf("sbd: msgwait %v is less than the watchdog timeout %v: msgwait must be at least the watchdog timeout", h.MsgWait, h.Watchdog)
	case h.Watchdog < time.Second || h.Loop < time.Second || h.Allocate < time.Second || h.MsgWait < time.Second:
		return fmt.Errorf("sbd: timeouts watchdog %v, loop %v, allocate %v, msgwait %v: each is whole seconds, 1 or more", h.Watchdog, h.Loop, h.Allocate, h.MsgWait)
	case h.Watchdog > MaxTimeout || h.Loop > MaxTimeout || h.Allocate > MaxTimeout || h.MsgWait > MaxTimeout:
		return fmt.Errorf("sbd: timeouts watchdog %v, loop %v, allocate %v, msgwait %v: each is at most %v", h.Watchdog, h.Loop, h.Allocate, h.MsgWait, MaxTimeout)
	}
	return nil
}

// Sectors of a slot.
func nodeSector(slot int) int64    { return int64(1 + 2*slot) }
func mailboxSector(slot int) int64 { return int64(2 + 2*slot) }

// slotName reads a node sector: the name, and whether the slot is used.
func slotName(b []byte) (string, bool) {
	if b[0] == 0 {
		return "", false
	}
	return cString(b[1 : 1+nameMax+1]), true
}

// encodeSlot writes a node sector.
func encodeSlot(b []byte, name string) {
	clear(b)
	b[0] = 1
	copy(b[1:1+nameMax], name)
}

// Mailbox is a node's mailbox: a message and its sender's name.
type Mailbox struct {
	Message Message
	From    string
}

// When fencekit wrote a message, in the mailbox sector's bytes that sbd
// neither reads nor keeps (sbd writes and clears whole sectors, so any
// other write erases it): a mark, the Unix time in nanoseconds (for people
// reading the disk), then the writer's boot (the kernel's boot_id) and the
// time since it in nanoseconds (CLOCK_BOOTTIME), all big-endian. Only the
// last two tell a reader how long the message has stood: they never step.
const (
	stampAt   = 128
	stampMark = "fencekit"
	stampLen  = 8 + 8 + 16 + 8
)

// written is a message's stamp: zero when it has none.
type written struct {
	wall   time.Time
	boot   [16]byte // zero: no boot clock (an older stamp, or none)
	uptime time.Duration
}

func (w written) stamped() bool { return !w.wall.IsZero() }

// booted reports whether w has its writer's boot clock.
func (w written) booted() bool { return w.boot != [16]byte{} }

func (w written) equal(v written) bool {
	return w.wall.Equal(v.wall) && w.boot == v.boot && w.uptime == v.uptime
}

// parseBootID parses the kernel's boot_id (a UUID in its text form).
func parseBootID(s string) ([16]byte, error) {
	var id [16]byte
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return id, fmt.Errorf("sbd: boot_id %q is not a UUID", s)
	}
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return id, fmt.Errorf("sbd: boot_id %q is not a UUID", s)
	}
	return id, nil
}

func decodeMailbox(b []byte) Mailbox {
	return Mailbox{Message: Message(int8(b[0])), From: cString(b[1 : 1+nameMax+1])}
}

// stamp returns when fencekit wrote the mailbox sector b, if it did.
func stamp(b []byte) written {
	if len(b) < stampAt+16 || string(b[stampAt:stampAt+8]) != stampMark {
		return written{}
	}
	w := written{wall: time.Unix(0, int64(binary.BigEndian.Uint64(b[stampAt+8:stampAt+16])))}
	if len(b) >= stampAt+stampLen {
		copy(w.boot[:], b[stampAt+16:stampAt+32])
		if up := int64(binary.BigEndian.Uint64(b[stampAt+32 : stampAt+40])); up > 0 && w.booted() {
			w.uptime = time.Duration(up)
		} else {
			w.boot = [16]byte{}
		}
	}
	return w
}

func (m Mailbox) encode(b []byte) {
	clear(b)
	b[0] = byte(m.Message)
	copy(b[1:1+nameMax], m.From)
}

// encodeStamped writes the mailbox with its stamp w.
func (m Mailbox) encodeStamped(b []byte, w written) {
	m.encode(b)
	copy(b[stampAt:], stampMark)
	binary.BigEndian.PutUint64(b[stampAt+8:stampAt+16], uint64(w.wall.UnixNano()))
	if w.booted() && len(b) >= stampAt+stampLen {
		copy(b[stampAt+16:stampAt+32], w.boot[:])
		binary.BigEndian.PutUint64(b[stampAt+32:stampAt+40], uint64(w.uptime))
	}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
