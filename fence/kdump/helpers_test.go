package kdump_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fence/kdump"
)

// wait bounds every wait for a datagram on loopback.
const wait = 5 * time.Second

// t0 is the start of the fake clock.
var t0 = time.Date(2030, 1, 2, 12, 0, 1, 0, time.UTC)

func newClock() *fencetest.Clock { return fencetest.NewClock(t0) }

// harness is a Listener on loopback with the messages it received.
type harness struct {
	l    *kdump.Listener
	book *kdump.AddressBook
	msgs chan kdump.Message
}

// listen starts a Listener on addr (127.0.0.1:0 when empty) with book as
// its resolver; OnMessage is set by listen. It is closed by t.Cleanup.
func listen(t testing.TB, addr string, book *kdump.AddressBook, opts kdump.Options) *harness {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	h := &harness{book: book, msgs: make(chan kdump.Message, 256)}
	opts.Resolve = book.Resolve
	opts.OnMessage = func(m kdump.Message) {
		select {
		case h.msgs <- m:
		default:
		}
	}
	l, err := kdump.Listen(context.Background(), addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	h.l = l
	return h
}

// next returns the next datagram the listener received, failing t after
// wait.
func (h *harness) next(t testing.TB) kdump.Message {
	t.Helper()
	select {
	case m := <-h.msgs:
		return m
	case <-time.After(wait):
		t.Fatalf("no datagram received within %v", wait)
		return kdump.Message{}
	}
}

// sender is a UDP client bound to a loopback address, connected to the
// listener.
type sender struct{ conn *net.UDPConn }

// dial returns a sender from the address from (any loopback address, such
// as 127.0.0.2) to the listener of h.
func (h *harness) dial(t testing.TB, from string) *sender {
	t.Helper()
	to := h.l.Addr().(*net.UDPAddr)
	conn, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)), to)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &sender{conn: conn}
}

func (s *sender) send(t testing.TB, b []byte) {
	t.Helper()
	_, err := s.conn.Write(b)
	require.NoError(t, err)
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// book returns an address book with the given node, address pairs.
func book(t testing.TB, pairs ...string) *kdump.AddressBook {
	t.Helper()
	var b kdump.AddressBook
	for i := 0; i+1 < len(pairs); i += 2 {
		require.NoError(t, b.Set(pairs[i], addr(pairs[i+1])))
	}
	return &b
}
