package kdump_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fencekit/fencekit/fence/kdump"
)

// FuzzDecode checks that Decode never panics, accepts only Size bytes with
// the magic and version 1 in one byte order, returns one of its three
// errors otherwise, and that an accepted message encodes back to the same
// bytes.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{0},
		captured,
		captured[:7],
		append(append([]byte{}, captured...), 0),
		{0x1b, 0x30, 0x2a, 0x40, 0, 0, 0, 1},
		{0x1b, 0x30, 0x2a, 0x40, 1, 0, 0, 0},
		{0x40, 0x2a, 0x30, 0x1b, 0, 0, 0, 1},
		{0x40, 0x2a, 0x30, 0x1b, 2, 0, 0, 0},
		bytes.Repeat([]byte{0xff}, 8),
		bytes.Repeat(captured, 8),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := kdump.Decode(b)
		switch {
		case err == nil:
			if len(b) != kdump.Size || p.Magic != kdump.Magic || p.Version != kdump.Version1 {
				t.Fatalf("accepted %x as %+v", b, p)
			}
			if got := kdump.Encode(p); !bytes.Equal(got, b) {
				t.Fatalf("%x decodes to %+v, which encodes to %x", b, p, got)
			}
		case errors.Is(err, kdump.ErrLength):
			if len(b) == kdump.Size {
				t.Fatalf("%x: length error on %d bytes", b, len(b))
			}
		case errors.Is(err, kdump.ErrMagic), errors.Is(err, kdump.ErrVersion):
			if len(b) != kdump.Size {
				t.Fatalf("%x: %v on %d bytes", b, err, len(b))
			}
			if errors.Is(err, kdump.ErrVersion) && (p.Magic != kdump.Magic || p.Version == kdump.Version1) {
				t.Fatalf("%x: version error with %+v", b, p)
			}
			if got := kdump.Encode(p); !bytes.Equal(got, b) {
				t.Fatalf("%x: refused packet %+v encodes to %x", b, p, got)
			}
		default:
			t.Fatalf("%x: unexpected error %v", b, err)
		}
	})
}
