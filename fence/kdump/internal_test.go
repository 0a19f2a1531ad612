package kdump

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2030, 1, 2, 12, 0, 1, 0, time.UTC)

// bare returns a Listener without a socket, for handle.
func bare(t testing.TB, opts Options) *Listener {
	t.Helper()
	o, err := opts.withDefaults()
	require.NoError(t, err)
	return &Listener{opts: o, dumps: make(map[string]*Dump)}
}

// An IPv4 sender on a dual-stack socket shows as ::ffff:a.b.c.d: it is
// resolved and reported as IPv4.
func TestHandleUnmapsIPv4(t *testing.T) {
	var b AddressBook
	require.NoError(t, b.Set("node-2", netip.MustParseAddr("192.0.2.7")))
	var got []netip.Addr
	var msgs []Message
	l := bare(t, Options{
		Resolve:   func(a netip.Addr) (string, bool) { got = append(got, a); return b.Resolve(a) },
		OnMessage: func(m Message) { msgs = append(msgs, m) },
	})
	l.handle(netip.MustParseAddrPort("[::ffff:192.0.2.7]:40000"), Encode(NewPacket()), t0)
	require.Len(t, msgs, 1)
	require.NoError(t, msgs[0].Err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("192.0.2.7")}, got)
	assert.Equal(t, "192.0.2.7:40000", msgs[0].From.String())
	d, ok := l.Messages("node-2")
	require.True(t, ok)
	assert.Equal(t, "192.0.2.7", d.From.String())
}

// Resolve naming a node "" counts as unknown.
func TestHandleEmptyNodeIsUnknown(t *testing.T) {
	l := bare(t, Options{Resolve: func(netip.Addr) (string, bool) { return "", true }})
	l.handle(netip.MustParseAddrPort("192.0.2.7:1"), Encode(NewPacket()), t0)
	assert.Equal(t, uint64(1), l.Stats().UnknownSource)
	assert.Empty(t, l.Dumps())
}

// The dumps kept are bounded: stale ones make room, and a message from one
// node too many is dropped (and its node not held off).
func TestHandleMaxNodes(t *testing.T) {
	var logs bytes.Buffer
	var last Message
	l := bare(t, Options{
		Resolve:   func(a netip.Addr) (string, bool) { return "node-" + a.String(), true },
		MaxNodes:  2,
		Stale:     30 * time.Second,
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		OnMessage: func(m Message) { last = m },
	})
	msg := Encode(NewPacket())
	l.handle(netip.MustParseAddrPort("192.0.2.1:1"), msg, t0)
	l.handle(netip.MustParseAddrPort("192.0.2.2:1"), msg, t0.Add(10*time.Second))
	l.handle(netip.MustParseAddrPort("192.0.2.3:1"), msg, t0.Add(20*time.Second))
	assert.ErrorIs(t, last.Err, ErrTooManyNodes)
	assert.Equal(t, "node-192.0.2.3", last.Node)
	got, _ := l.Dumping("node-192.0.2.3", t0.Add(20*time.Second))
	assert.False(t, got)
	assert.Contains(t, logs.String(), `level=WARN msg="kdump: message dropped" from=192.0.2.3:1 size=8 node=node-192.0.2.3 reason="kdump: too many nodes with a dump"`)

	// A known node still records.
	l.handle(netip.MustParseAddrPort("192.0.2.1:1"), msg, t0.Add(25*time.Second))
	require.NoError(t, last.Err)

	// 30 s after node 2's only message, its dump is stale and makes room.
	l.handle(netip.MustParseAddrPort("192.0.2.3:1"), msg, t0.Add(40*time.Second))
	require.NoError(t, last.Err)
	assert.True(t, last.NewDump)
	var nodes []string
	for _, d := range l.Dumps() {
		nodes = append(nodes, d.Node)
	}
	assert.Equal(t, []string{"node-192.0.2.1", "node-192.0.2.3"}, nodes)
	assert.Equal(t, Stats{Received: 5, Accepted: 4, TooManyNodes: 1, Nodes: 2}, l.Stats())
}

// What the listener logs, at which level.
func TestHandleLogs(t *testing.T) {
	var logs bytes.Buffer
	var b AddressBook
	require.NoError(t, b.Set("node-2", netip.MustParseAddr("192.0.2.7")))
	l := bare(t, Options{Resolve: b.Resolve,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime}))})
	from := netip.MustParseAddrPort("192.0.2.7:5000")
	l.handle(from, Encode(NewPacket()), t0)
	l.handle(from, Encode(NewPacket()), t0.Add(time.Second))
	l.handle(from, []byte{1, 2, 3}, t0)
	l.handle(from, Encode(Packet{Magic: 0xdeadbeef, Version: 1}), t0)
	l.handle(from, Encode(Packet{Magic: Magic, Version: 9}), t0)
	l.handle(netip.MustParseAddrPort("192.0.2.8:5000"), Encode(NewPacket()), t0)
	want := []string{
		`level=INFO msg="kdump: node is dumping" from=192.0.2.7:5000 size=8 node=node-2`,
		`level=DEBUG msg="kdump: message" from=192.0.2.7:5000 size=8 node=node-2`,
		`level=DEBUG msg="kdump: datagram ignored" from=192.0.2.7:5000 size=3 reason="kdump: message length is not 8 bytes"`,
		`level=DEBUG msg="kdump: datagram ignored" from=192.0.2.7:5000 size=8 reason="kdump: bad magic number" magic=0xdeadbeef version=1`,
		`level=DEBUG msg="kdump: datagram ignored" from=192.0.2.7:5000 size=8 reason="kdump: unsupported message version" magic=0x1b302a40 version=9`,
		`level=DEBUG msg="kdump: datagram ignored" from=192.0.2.8:5000 size=8 reason="kdump: message from an unknown address" magic=0x1b302a40 version=1`,
	}
	assert.Equal(t, strings.Join(want, "\n")+"\n", logs.String())
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// BenchmarkHandle measures the receive path without the socket: decode,
// resolve through an AddressBook of 1000 nodes, record, count, with debug
// records disabled. The goal is no allocation for a message of a node that
// already has a dump, and none for an ignored datagram.
func BenchmarkHandle(b *testing.B) {
	var book AddressBook
	for i := range 1000 {
		if err := book.Set(fmt.Sprintf("node-%d", i), netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})); err != nil {
			b.Fatal(err)
		}
	}
	var seen int
	l := bare(b, Options{Resolve: book.Resolve, OnMessage: func(Message) { seen++ }})
	known := netip.MustParseAddrPort("10.0.3.231:40000")
	unknown := netip.MustParseAddrPort("10.9.9.9:40000")
	msg := Encode(NewPacket())
	bad := Encode(Packet{Magic: 1, Version: 1})
	for _, bc := range []struct {
		name string
		from netip.AddrPort
		b    []byte
	}{
		{"accepted", known, msg},
		{"unknown-source", unknown, msg},
		{"bad-magic", known, bad},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			at := t0
			for b.Loop() {
				at = at.Add(time.Millisecond)
				l.handle(bc.from, bc.b, at)
			}
		})
	}
	if seen == 0 {
		b.Fatal("no message seen")
	}
}
