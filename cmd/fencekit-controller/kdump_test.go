package main

import (
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
)

// The detail of a hold stays the same while the dump goes on, so that the
// controller writes its NodeFence once, not at every pass.
func TestKdumpHoldDetailIsStable(t *testing.T) {
	var at atomic.Int64 // the clock, read by the listener's goroutine
	at.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, at.Load()).UTC() }
	advance := func(d time.Duration) { at.Add(int64(d)) }
	now := clock()
	book := &kdump.AddressBook{}
	require.NoError(t, book.Set("w1", netip.MustParseAddr("127.0.0.1")))
	l, err := kdump.Listen(t.Context(), "127.0.0.1:0", kdump.Options{Resolve: book.Resolve, Now: clock,
		Stale: 30 * time.Second, Timeout: 10 * time.Minute})
	require.NoError(t, err)
	defer l.Close()
	k := kdumpHold{l}

	dumping, detail := k.Dumping("w1", now)
	assert.False(t, dumping)
	assert.Equal(t, `no kdump message from node "w1"`, detail)

	conn, err := net.Dial("udp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	send := func() {
		n := l.Stats().Accepted
		_, err := conn.Write(kdump.Encode(kdump.NewPacket()))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return l.Stats().Accepted > n }, 5*time.Second, time.Millisecond)
	}
	send()
	dumping, first := k.Dumping("w1", now)
	assert.True(t, dumping)
	assert.Equal(t, "kdump messages from 127.0.0.1 since 12:00:00 (hold ends at 12:10:00 at the latest)", first)

	advance(10 * time.Second)
	send()
	advance(5 * time.Second)
	now = clock()
	dumping, detail = k.Dumping("w1", now)
	assert.True(t, dumping)
	assert.Equal(t, first, detail, "more messages, later: the same detail")
	_, raw := l.Dumping("w1", now)
	assert.NotEqual(t, first, raw, "unlike the listener's own")

	now = now.Add(31 * time.Second)
	advance(31 * time.Second)
	dumping, detail = k.Dumping("w1", now)
	assert.False(t, dumping)
	assert.True(t, strings.HasPrefix(detail, "kdump messages from 127.0.0.1 stopped"), detail)
}
