package kdump_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/internal/proctest"
)

// The tests of this file run the real sender, fence_kdump_send of the
// Debian package fence-agents, on loopback.

// defaultSender is where Debian installs fence_kdump_send.
const defaultSender = "/usr/libexec/fence-agents/fence_kdump_send"

// senderPath returns the path of fence_kdump_send ($FENCE_KDUMP_SEND, which
// must exist when set; else the Debian path, or the PATH), or skips t when
// it is missing (fails t when the environment variable CI is "true").
func senderPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FENCE_KDUMP_SEND"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			t.Fatalf("FENCE_KDUMP_SEND=%s is not a program (%v)", p, err)
		}
		return p
	}
	if st, err := os.Stat(defaultSender); err == nil && !st.IsDir() {
		return defaultSender
	}
	if p, err := exec.LookPath("fence_kdump_send"); err == nil {
		return p
	}
	msg := "fence_kdump_send is missing: install the Debian package fence-agents, or set FENCE_KDUMP_SEND"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// send runs fence_kdump_send to completion (-c count -i 1, so it takes
// count-1 seconds) towards the UDP address to.
func send(t testing.TB, to net.Addr, count int, extra ...string) {
	t.Helper()
	bin := senderPath(t)
	host, port, err := net.SplitHostPort(to.String())
	require.NoError(t, err)
	args := append([]string{"-c", strconv.Itoa(count), "-i", "1", "-p", port}, extra...)
	r := proctest.Run(t, nil, bin, append(args, host)...)
	require.Equal(t, 0, r.Code, "fence_kdump_send: %s%s", r.Stdout, r.Stderr)
}

// startSender starts fence_kdump_send sending forever (-c 0 -i 1), as a
// kdump kernel runs it; t.Cleanup kills it and waits at most 5 s.
func startSender(t testing.TB, to net.Addr, extra ...string) {
	t.Helper()
	bin := senderPath(t)
	host, port, err := net.SplitHostPort(to.String())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"-c", "0", "-i", "1", "-p", port}, extra...), host)...)
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("fence_kdump_send did not end: %v", err)
		}
	})
}

// The bytes the real sender puts on the wire are what Encode writes in the
// machine's byte order, and what Decode accepts.
func TestRealSenderWireFormat(t *testing.T) {
	t.Parallel()
	senderPath(t)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer conn.Close()
	send(t, conn.LocalAddr(), 1, "-f", "ipv4")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	buf := make([]byte, 64)
	n, from, err := conn.ReadFromUDPAddrPort(buf)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", from.Addr().String())

	bigEndian := binary.NativeEndian.Uint16([]byte{0, 1}) == 1
	want := kdump.Packet{Magic: kdump.Magic, Version: kdump.Version1, BigEndian: bigEndian}
	assert.Equal(t, kdump.Encode(want), buf[:n])
	if !bigEndian {
		assert.Equal(t, captured, buf[:n])
	}
	p, err := kdump.Decode(buf[:n])
	require.NoError(t, err)
	assert.Equal(t, want, p)
}

// Two messages a second apart mark the node dumping; Stale after the last,
// it is not any more.
func TestRealSenderDumping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		family, listen, from string
	}{
		{"ipv4", "127.0.0.1:0", "127.0.0.1"},
		{"ipv6", "[::1]:0", "::1"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			t.Parallel()
			senderPath(t)
			if tc.family == "ipv6" {
				if c, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
					t.Skipf("no IPv6 loopback: %v", err)
				} else {
					c.Close()
				}
			}
			h := listen(t, tc.listen, book(t, "node-2", tc.from), kdump.Options{})
			start := time.Now()
			send(t, h.l.Addr(), 2, "-f", tc.family)
			first, second := h.next(t), h.next(t)
			require.NoError(t, first.Err)
			require.NoError(t, second.Err)
			assert.True(t, first.NewDump)
			assert.False(t, second.NewDump)
			assert.Equal(t, "node-2", second.Node)
			assert.Equal(t, tc.from, second.From.Addr().String())
			assert.Equal(t, first.From, second.From, "one socket for every message")

			got, detail := h.l.Dumping("node-2", time.Now())
			assert.True(t, got, detail)
			assert.Contains(t, detail, "kdump messages from "+tc.from+" since ")
			assert.Contains(t, detail, "(2 messages, hold ends at ")

			d, ok := h.l.Messages("node-2")
			require.True(t, ok)
			assert.Equal(t, 2, d.Count)
			assert.False(t, d.First.Before(start))
			assert.True(t, d.Last.After(d.First), "two messages a second apart (-i 1)")

			got, detail = h.l.Dumping("node-2", d.Last.Add(h.l.Stale()))
			assert.False(t, got)
			assert.Contains(t, detail, "kdump messages from "+tc.from+" stopped: last 30s ago, stale after 30s (2 messages)")
			assert.Equal(t, kdump.Stats{Received: 2, Accepted: 2, Nodes: 1}, h.l.Stats())
		})
	}
}

// A sender that goes on (-c 0, as in a kdump kernel) holds the node only
// until Timeout after its first message.
func TestRealSenderTimeout(t *testing.T) {
	t.Parallel()
	senderPath(t)
	h := listen(t, "", book(t, "node-2", "127.0.0.1"), kdump.Options{Timeout: 500 * time.Millisecond})
	startSender(t, h.l.Addr(), "-f", "ipv4")
	first, second := h.next(t), h.next(t)
	require.NoError(t, first.Err)
	require.NoError(t, second.Err)

	got, _ := h.l.Dumping("node-2", first.At)
	assert.True(t, got)
	// Timeout after the first message (or at the second, if later), with
	// the last message fresh: the hold has expired all the same.
	now := first.At.Add(h.l.Timeout())
	if second.At.After(now) {
		now = second.At
	}
	got, detail := h.l.Dumping("node-2", now)
	assert.False(t, got)
	assert.Contains(t, detail, "kdump hold expired after 500ms (messages from 127.0.0.1 since ")
	assert.Contains(t, detail, ", 2 messages)")

	// Forget (the fence completed): the running sender starts a new dump.
	// A message received before Forget may still be on its way to the
	// test; at most three messages pass before one that came after.
	forgot := time.Now()
	h.l.Forget("node-2")
	var m kdump.Message
	for range 3 {
		if m = h.next(t); m.NewDump || m.At.After(forgot) {
			break
		}
	}
	require.NoError(t, m.Err)
	assert.True(t, m.NewDump)
	got, detail = h.l.Dumping("node-2", m.At)
	assert.True(t, got, detail)
}

// Messages from an address that is not the node's are ignored, as
// fence_kdump ignores them.
func TestRealSenderUnknownSource(t *testing.T) {
	t.Parallel()
	senderPath(t)
	h := listen(t, "", book(t, "node-2", "127.0.0.2"), kdump.Options{})
	send(t, h.l.Addr(), 2, "-f", "ipv4")
	for range 2 {
		m := h.next(t)
		require.ErrorIs(t, m.Err, kdump.ErrUnknownSource)
		assert.Equal(t, "127.0.0.1", m.From.Addr().String())
		assert.Equal(t, kdump.NewPacket(), m.Packet)
	}
	got, detail := h.l.Dumping("node-2", time.Now())
	assert.False(t, got)
	assert.Equal(t, `no kdump message from node "node-2"`, detail)
	assert.Equal(t, kdump.Stats{Received: 2, UnknownSource: 2}, h.l.Stats())
}

// One sender, two targets (a node names every fencing host, such as two
// replicas of a controller): each listener records the dump.
func TestRealSenderSeveralTargets(t *testing.T) {
	t.Parallel()
	senderPath(t)
	a := listen(t, "127.0.0.1:0", book(t, "node-2", "127.0.0.1"), kdump.Options{})
	_, port, err := net.SplitHostPort(a.l.Addr().String())
	require.NoError(t, err)
	// fence_kdump_send has one port for every target: the second listener
	// takes the same port on another loopback address.
	b := listen(t, net.JoinHostPort("127.0.0.9", port), book(t, "node-2", "127.0.0.1"), kdump.Options{})
	r := proctest.Run(t, nil, senderPath(t), "-c", "1", "-f", "ipv4", "-p", port, "127.0.0.1", "127.0.0.9")
	require.Equal(t, 0, r.Code, "fence_kdump_send: %s%s", r.Stdout, r.Stderr)
	for _, h := range []*harness{a, b} {
		m := h.next(t)
		require.NoError(t, m.Err)
		got, detail := h.l.Dumping("node-2", time.Now())
		assert.True(t, got, detail)
	}
}
