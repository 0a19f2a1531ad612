package main

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
)

// The controller asks kdumpHold about every node configured for kdump at
// every pass.
func BenchmarkKdumpHoldDumping(b *testing.B) {
	book := &kdump.AddressBook{}
	require.NoError(b, book.Set("w1", netip.MustParseAddr("127.0.0.1")))
	l, err := kdump.Listen(b.Context(), "127.0.0.1:0", kdump.Options{Resolve: book.Resolve})
	require.NoError(b, err)
	defer l.Close()
	conn, err := net.Dial("udp", l.Addr().String())
	require.NoError(b, err)
	defer conn.Close()
	_, err = conn.Write(kdump.Encode(kdump.NewPacket()))
	require.NoError(b, err)
	require.Eventually(b, func() bool { return l.Stats().Accepted == 1 }, 5*time.Second, time.Millisecond)
	k := kdumpHold{l}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if dumping, _ := k.Dumping("w1", now); !dumping {
			b.Fatal("not dumping")
		}
	}
}
