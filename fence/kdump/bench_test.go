package kdump_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence/kdump"
)

var sinkPacket kdump.Packet

// BenchmarkDecode measures Decode of a valid message in each byte order
// and of refused datagrams. The goal is a few nanoseconds and no
// allocation.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   []byte
	}{
		{"little-endian", kdump.Encode(kdump.NewPacket())},
		{"big-endian", kdump.Encode(kdump.Packet{Magic: kdump.Magic, Version: kdump.Version1, BigEndian: true})},
		{"bad-magic", make([]byte, kdump.Size)},
		{"bad-length", make([]byte, 64)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkPacket, _ = kdump.Decode(bc.in)
			}
		})
	}
}

// BenchmarkReceive measures the whole receive path on loopback: a Go client
// writes a message, the listener reads, decodes, resolves and records it,
// and OnMessage tells the benchmark, one message at a time (so the figure
// is a round of both goroutines and the kernel, not the listener's
// throughput). Allocations counted are the process's: the goal is none
// per message.
func BenchmarkReceive(b *testing.B) {
	var book kdump.AddressBook
	if err := book.Set("node-2", addr("127.0.0.1")); err != nil {
		b.Fatal(err)
	}
	seen := make(chan struct{}, 1)
	l, err := kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{
		Resolve:   book.Resolve,
		OnMessage: func(kdump.Message) { seen <- struct{}{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	conn, err := net.DialUDP("udp", nil, l.Addr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	msg := kdump.Encode(kdump.NewPacket())
	timer := time.NewTimer(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(msg); err != nil {
			b.Fatal(err)
		}
		timer.Reset(wait)
		select {
		case <-seen:
		case <-timer.C:
			b.Fatalf("message not received within %v", wait)
		}
	}
	if st := l.Stats(); st.Accepted == 0 || st.Accepted != st.Received {
		b.Fatalf("stats %+v", st)
	}
}
