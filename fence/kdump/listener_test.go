package kdump_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
)

// The Listener implements what a fence controller consumes.
var _ interface {
	Dumping(node string, now time.Time) (dumping bool, detail string)
} = (*kdump.Listener)(nil)

func TestListenerDumpingAndStale(t *testing.T) {
	clk := newClock()
	h := listen(t, "", book(t, "node-2", "127.0.0.2"), kdump.Options{Now: clk.Now})
	assert.Equal(t, kdump.DefaultStale, h.l.Stale())
	assert.Equal(t, kdump.DefaultTimeout, h.l.Timeout())
	s := h.dial(t, "127.0.0.2")

	got, detail := h.l.Dumping("node-2", clk.Now())
	assert.False(t, got)
	assert.Equal(t, `no kdump message from node "node-2"`, detail)

	s.send(t, kdump.Encode(kdump.NewPacket()))
	m := h.next(t)
	require.NoError(t, m.Err)
	assert.Equal(t, "node-2", m.Node)
	assert.True(t, m.NewDump)
	assert.Equal(t, "127.0.0.2", m.From.Addr().String())
	assert.Equal(t, t0, m.At)
	assert.Equal(t, kdump.Size, m.Size)
	assert.Equal(t, kdump.NewPacket(), m.Packet)

	got, detail = h.l.Dumping("node-2", t0.Add(3*time.Second))
	assert.True(t, got)
	assert.Equal(t, "kdump messages from 127.0.0.2 since 12:00:01, last 3s ago (1 message, hold ends at 12:10:01)", detail)

	// The sender's default interval: every message keeps the dump alive.
	for i := 2; i <= 4; i++ {
		clk.Add(10 * time.Second)
		s.send(t, kdump.Encode(kdump.NewPacket()))
		m := h.next(t)
		require.NoError(t, m.Err)
		assert.False(t, m.NewDump)
	}
	d, ok := h.l.Messages("node-2")
	require.True(t, ok)
	assert.Equal(t, kdump.Dump{Node: "node-2", From: addr("127.0.0.2"), First: t0, Last: t0.Add(30 * time.Second), Count: 4}, d)
	assert.Equal(t, []kdump.Dump{d}, h.l.Dumps())

	got, _ = h.l.Dumping("node-2", d.Last.Add(kdump.DefaultStale-time.Nanosecond))
	assert.True(t, got)
	got, detail = h.l.Dumping("node-2", d.Last.Add(kdump.DefaultStale))
	assert.False(t, got)
	assert.Equal(t, "kdump messages from 127.0.0.2 stopped: last 30s ago, stale after 30s (4 messages)", detail)

	got, _ = h.l.Dumping("node-other", clk.Now())
	assert.False(t, got)

	st := h.l.Stats()
	assert.Equal(t, kdump.Stats{Received: 4, Accepted: 4, Nodes: 1}, st)
}

func TestListenerTimeout(t *testing.T) {
	clk := newClock()
	h := listen(t, "", book(t, "node-2", "127.0.0.2"), kdump.Options{Now: clk.Now, Stale: 30 * time.Second, Timeout: time.Minute})
	s := h.dial(t, "127.0.0.2")
	msg := func() kdump.Message {
		s.send(t, kdump.Encode(kdump.NewPacket()))
		m := h.next(t)
		require.NoError(t, m.Err)
		return m
	}

	assert.True(t, msg().NewDump)
	for range 3 {
		clk.Add(20 * time.Second)
		assert.False(t, msg().NewDump)
	}
	// 60 s after the first message, with the last one just received: the
	// hold has expired all the same.
	got, detail := h.l.Dumping("node-2", clk.Now())
	assert.False(t, got)
	assert.Equal(t, "kdump hold expired after 1m0s (messages from 127.0.0.2 since 12:00:01, last 0s ago, 4 messages)", detail)
	got, _ = h.l.Dumping("node-2", clk.Now().Add(-time.Nanosecond))
	assert.True(t, got)

	// Messages that keep coming do not renew the hold.
	clk.Add(20 * time.Second)
	assert.False(t, msg().NewDump)
	got, _ = h.l.Dumping("node-2", clk.Now())
	assert.False(t, got)

	// After Forget (the fencing completed), the next message is a new dump.
	h.l.Forget("node-2")
	_, ok := h.l.Messages("node-2")
	assert.False(t, ok)
	got, _ = h.l.Dumping("node-2", clk.Now())
	assert.False(t, got)
	clk.Add(time.Second)
	assert.True(t, msg().NewDump)
	got, detail = h.l.Dumping("node-2", clk.Now())
	assert.True(t, got)
	assert.Equal(t, "kdump messages from 127.0.0.2 since 12:01:22, last 0s ago (1 message, hold ends at 12:02:22)", detail)
}

func TestListenerNewDumpAfterGap(t *testing.T) {
	clk := newClock()
	h := listen(t, "", book(t, "node-2", "127.0.0.2"), kdump.Options{Now: clk.Now, Stale: 30 * time.Second})
	s := h.dial(t, "127.0.0.2")
	s.send(t, kdump.Encode(kdump.NewPacket()))
	assert.True(t, h.next(t).NewDump)

	clk.Add(29 * time.Second)
	s.send(t, kdump.Encode(kdump.NewPacket()))
	assert.False(t, h.next(t).NewDump)

	// A gap of Stale: the node stopped dumping, so this is another dump.
	second := clk.Add(30 * time.Second)
	s.send(t, kdump.Encode(kdump.NewPacket()))
	assert.True(t, h.next(t).NewDump)
	d, ok := h.l.Messages("node-2")
	require.True(t, ok)
	assert.Equal(t, kdump.Dump{Node: "node-2", From: addr("127.0.0.2"), First: second, Last: second, Count: 1}, d)
}

// Every datagram that is not a valid message from a known node is counted
// and ignored: it creates no dump, and the listener keeps working.
func TestListenerIgnores(t *testing.T) {
	clk := newClock()
	h := listen(t, "", book(t, "node-2", "127.0.0.2"), kdump.Options{Now: clk.Now})
	known, unknown := h.dial(t, "127.0.0.2"), h.dial(t, "127.0.0.3")
	bad := func(magic, version uint32) []byte {
		return kdump.Encode(kdump.Packet{Magic: magic, Version: version})
	}
	for _, tc := range []struct {
		name string
		from *sender
		b    []byte
		size int
		err  error
	}{
		{"unknown source", unknown, kdump.Encode(kdump.NewPacket()), 8, kdump.ErrUnknownSource},
		{"empty", known, []byte{}, 0, kdump.ErrLength},
		{"short", known, captured[:7], 7, kdump.ErrLength},
		{"long", known, append(append([]byte{}, captured...), 0), 9, kdump.ErrLength},
		{"larger than the buffer", known, make([]byte, 1500), 64, kdump.ErrLength},
		{"bad magic", known, bad(kdump.Magic^1, 1), 8, kdump.ErrMagic},
		{"version 0", known, bad(kdump.Magic, 0), 8, kdump.ErrVersion},
		{"version 2", known, bad(kdump.Magic, 2), 8, kdump.ErrVersion},
		{"unknown source, bad magic", unknown, bad(0, 1), 8, kdump.ErrMagic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.from.send(t, tc.b)
			m := h.next(t)
			require.ErrorIs(t, m.Err, tc.err)
			assert.Equal(t, tc.size, m.Size)
			assert.Empty(t, m.Node)
			assert.False(t, m.NewDump)
			got, _ := h.l.Dumping("node-2", clk.Now())
			assert.False(t, got)
		})
	}
	assert.Equal(t, kdump.Stats{Received: 9, BadLength: 4, BadMagic: 2, BadVersion: 2, UnknownSource: 1}, h.l.Stats())
	assert.Empty(t, h.l.Dumps())

	known.send(t, kdump.Encode(kdump.NewPacket()))
	require.NoError(t, h.next(t).Err)
	got, _ := h.l.Dumping("node-2", clk.Now())
	assert.True(t, got)
}

// A big-endian node (s390x) writes both words in its own order.
func TestListenerBigEndianSender(t *testing.T) {
	clk := newClock()
	h := listen(t, "", book(t, "node-z", "127.0.0.2"), kdump.Options{Now: clk.Now})
	h.dial(t, "127.0.0.2").send(t, []byte{0x1b, 0x30, 0x2a, 0x40, 0, 0, 0, 1})
	m := h.next(t)
	require.NoError(t, m.Err)
	assert.True(t, m.Packet.BigEndian)
	got, _ := h.l.Dumping("node-z", clk.Now())
	assert.True(t, got)
}

func TestListenerIPv6(t *testing.T) {
	if c, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	clk := newClock()
	h := listen(t, "[::1]:0", book(t, "node-6", "::1"), kdump.Options{Now: clk.Now})
	h.dial(t, "::1").send(t, kdump.Encode(kdump.NewPacket()))
	m := h.next(t)
	require.NoError(t, m.Err)
	assert.Equal(t, "::1", m.From.Addr().String())
	got, detail := h.l.Dumping("node-6", clk.Now())
	assert.True(t, got)
	assert.Contains(t, detail, "kdump messages from ::1 since 12:00:01")
}

// Several nodes send at once while the controller asks: the race detector
// checks the locking, the counts check that nothing is lost or mixed.
func TestListenerConcurrent(t *testing.T) {
	const nodes, each = 4, 50
	b := book(t)
	for i := range nodes {
		require.NoError(t, b.Set(fmt.Sprintf("node-%d", i), addr(fmt.Sprintf("127.0.0.%d", 10+i))))
	}
	var got sync.WaitGroup
	got.Add(nodes * each)
	clk := newClock()
	l, err := kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{
		Resolve: b.Resolve, Now: clk.Now, OnMessage: func(kdump.Message) { got.Done() }})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	h := &harness{l: l}

	var wg sync.WaitGroup
	for i := range nodes {
		s := h.dial(t, fmt.Sprintf("127.0.0.%d", 10+i))
		wg.Go(func() {
			for range each {
				_, err := s.conn.Write(kdump.Encode(kdump.NewPacket()))
				assert.NoError(t, err)
				l.Dumping(fmt.Sprintf("node-%d", i), clk.Now())
			}
		})
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { got.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("received %d of %d datagrams", l.Stats().Received, nodes*each)
	}
	for i := range nodes {
		d, ok := l.Messages(fmt.Sprintf("node-%d", i))
		require.True(t, ok)
		assert.Equal(t, each, d.Count)
		assert.Equal(t, fmt.Sprintf("127.0.0.%d", 10+i), d.From.String())
	}
	assert.Len(t, l.Dumps(), nodes)
}

func TestListenerCloseAndContext(t *testing.T) {
	b := book(t, "node-2", "127.0.0.2")
	ctx, cancel := context.WithCancel(context.Background())
	l, err := kdump.Listen(ctx, "127.0.0.1:0", kdump.Options{Resolve: b.Resolve})
	require.NoError(t, err)
	cancel()
	select {
	case <-l.Done():
	case <-time.After(wait):
		t.Fatal("the listener did not stop when its context ended")
	}
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")
	got, _ := l.Dumping("node-2", time.Now())
	assert.False(t, got, "a stopped listener still answers")

	l, err = kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{Resolve: b.Resolve})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	<-l.Done()
	// The port is free again.
	c, err := net.ListenPacket("udp", l.Addr().String())
	require.NoError(t, err)
	c.Close()
}

func TestListenErrors(t *testing.T) {
	var b kdump.AddressBook
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		addr string
		opts kdump.Options
		err  string
	}{
		{"no resolver", "127.0.0.1:0", kdump.Options{}, "kdump: Options.Resolve is required (an address book's Resolve, for one)"},
		{"negative stale", "127.0.0.1:0", kdump.Options{Resolve: b.Resolve, Stale: -time.Second}, "kdump: Options.Stale is negative (-1s)"},
		{"negative timeout", "127.0.0.1:0", kdump.Options{Resolve: b.Resolve, Timeout: -time.Second}, "kdump: Options.Timeout is negative (-1s)"},
		{"negative max nodes", "127.0.0.1:0", kdump.Options{Resolve: b.Resolve, MaxNodes: -1}, "kdump: Options.MaxNodes is negative (-1)"},
		{"bad address", "127.0.0.1:http-alt-nope", kdump.Options{Resolve: b.Resolve}, "kdump: listen on 127.0.0.1:http-alt-nope: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := kdump.Listen(ctx, tc.addr, tc.opts)
			require.Error(t, err)
			assert.Nil(t, l)
			assert.Contains(t, err.Error(), tc.err)
		})
	}

	// The port is taken.
	l, err := kdump.Listen(ctx, "127.0.0.1:0", kdump.Options{Resolve: b.Resolve})
	require.NoError(t, err)
	defer l.Close()
	_, err = kdump.Listen(ctx, l.Addr().String(), kdump.Options{Resolve: b.Resolve})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kdump: listen on "+l.Addr().String())
}
