package kdump

import (
	"encoding/binary"
	"errors"
)

// The fence_kdump wire format (fence-agents, agents/kdump/message.h): a
// packed struct of two 32-bit words, magic then version, written in the
// sender's native byte order (little-endian on x86-64 and arm64).
const (
	// Magic is the first word of every message.
	Magic uint32 = 0x1B302A40
	// Version1 is the only message version there is.
	Version1 uint32 = 1
	// Size is the length of a message in bytes.
	Size = 8
	// DefaultPort is the UDP port fence_kdump_send sends to and fence_kdump
	// listens on by default.
	DefaultPort = 7410
	// DefaultAddr is where Listen binds when given no address: the default
	// port on every local address.
	DefaultAddr = ":7410"
)

// Why a datagram is not a fence_kdump message, or why a message is ignored.
// Decode returns the first three; a Listener reports all four in
// Message.Err and counts them in Stats.
var (
	// ErrLength means the datagram is not Size bytes long.
	ErrLength = errors.New("kdump: message length is not 8 bytes")
	// ErrMagic means the first word is not Magic in either byte order.
	ErrMagic = errors.New("kdump: bad magic number")
	// ErrVersion means the magic matched but the version is not Version1.
	ErrVersion = errors.New("kdump: unsupported message version")
	// ErrUnknownSource means the message is valid but its source address
	// belongs to no node (Options.Resolve said no).
	ErrUnknownSource = errors.New("kdump: message from an unknown address")
)

// Packet is one fence_kdump message as it is on the wire.
type Packet struct {
	// Magic is the first word; Decode accepts only Magic.
	Magic uint32
	// Version is the second word; Decode accepts only Version1.
	Version uint32
	// BigEndian tells the byte order of both words: false for the
	// little-endian senders (x86-64, arm64), true for big-endian ones (s390x,
	// ppc64). fence_kdump itself compares the words in its own byte order
	// only; Decode recognises both, so that a big-endian node can hold off
	// its fencing by a little-endian controller.
	BigEndian bool
}

// NewPacket returns the message fence_kdump_send sends from a little-endian
// machine: Magic, Version1.
func NewPacket() Packet {
	return Packet{Magic: Magic, Version: Version1}
}

func (p Packet) order() binary.AppendByteOrder {
	if p.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// AppendEncode appends the Size bytes of p to dst. It writes the fields as
// they are, valid or not, so that tests can build bad messages.
func AppendEncode(dst []byte, p Packet) []byte {
	o := p.order()
	dst = o.AppendUint32(dst, p.Magic)
	return o.AppendUint32(dst, p.Version)
}

// Encode returns the Size bytes of p.
func Encode(p Packet) []byte {
	return AppendEncode(make([]byte, 0, Size), p)
}

// Decode reads a fence_kdump message. It accepts exactly what the reference
// agent accepts (Size bytes, Magic, Version1), in either byte order: a
// datagram of another length is ErrLength, a first word that is not Magic
// is ErrMagic, a version other than Version1 is ErrVersion. On ErrMagic and
// ErrVersion the returned Packet holds the words as read (little-endian
// when the magic matched in neither order), for logs. Decode never
// allocates.
func Decode(b []byte) (Packet, error) {
	if len(b) != Size {
		return Packet{}, ErrLength
	}
	p := Packet{Magic: binary.LittleEndian.Uint32(b), Version: binary.LittleEndian.Uint32(b[4:])}
	if p.Magic != Magic {
		be := Packet{Magic: binary.BigEndian.Uint32(b), Version: binary.BigEndian.Uint32(b[4:]), BigEndian: true}
		if be.Magic != Magic {
			return p, ErrMagic
		}
		p = be
	}
	if p.Version != Version1 {
		return p, ErrVersion
	}
	return p, nil
}
