package kdump_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
)

// captured is what fence_kdump_send (fence-agents 4.12.1, x86-64) sent to a
// UDP socket on 127.0.0.1; TestRealSenderWireFormat checks it again on
// every run where the program is installed.
var captured = []byte{0x40, 0x2a, 0x30, 0x1b, 0x01, 0x00, 0x00, 0x00}

func TestEncode(t *testing.T) {
	assert.Equal(t, captured, kdump.Encode(kdump.NewPacket()))
	assert.Equal(t, []byte{0x1b, 0x30, 0x2a, 0x40, 0, 0, 0, 1},
		kdump.Encode(kdump.Packet{Magic: kdump.Magic, Version: kdump.Version1, BigEndian: true}))
	assert.Equal(t, append([]byte("x"), captured...), kdump.AppendEncode([]byte("x"), kdump.NewPacket()))
	assert.Len(t, kdump.Encode(kdump.Packet{}), kdump.Size)
}

func TestDecode(t *testing.T) {
	le := func(magic, version uint32) []byte {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, magic), version)
	}
	be := func(magic, version uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, magic), version)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want kdump.Packet
		err  error
	}{
		{"captured", captured, kdump.NewPacket(), nil},
		{"big-endian", be(kdump.Magic, 1), kdump.Packet{Magic: kdump.Magic, Version: 1, BigEndian: true}, nil},
		{"empty", nil, kdump.Packet{}, kdump.ErrLength},
		{"short", captured[:7], kdump.Packet{}, kdump.ErrLength},
		{"magic only", captured[:4], kdump.Packet{}, kdump.ErrLength},
		{"long", append(append([]byte{}, captured...), 0), kdump.Packet{}, kdump.ErrLength},
		{"twice", append(append([]byte{}, captured...), captured...), kdump.Packet{}, kdump.ErrLength},
		{"zeros", make([]byte, 8), kdump.Packet{}, kdump.ErrMagic},
		{"bad magic", le(kdump.Magic+1, 1), kdump.Packet{Magic: kdump.Magic + 1, Version: 1}, kdump.ErrMagic},
		{"version 0", le(kdump.Magic, 0), kdump.Packet{Magic: kdump.Magic}, kdump.ErrVersion},
		{"version 2", le(kdump.Magic, 2), kdump.Packet{Magic: kdump.Magic, Version: 2}, kdump.ErrVersion},
		{"big-endian version 2", be(kdump.Magic, 2), kdump.Packet{Magic: kdump.Magic, Version: 2, BigEndian: true}, kdump.ErrVersion},
		// The version in the other byte order than the magic: the sender
		// writes both words in one order, so this is not version 1.
		{"mixed orders", append(le(kdump.Magic, 0)[:4], be(0, 1)[4:]...), kdump.Packet{Magic: kdump.Magic, Version: 1 << 24}, kdump.ErrVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kdump.Decode(tc.in)
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, p := range []kdump.Packet{
		kdump.NewPacket(),
		{Magic: kdump.Magic, Version: kdump.Version1, BigEndian: true},
	} {
		got, err := kdump.Decode(kdump.Encode(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
}
