package kdump_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/fencekit/fencekit/fence/kdump"
)

// A fence controller listens for kdump messages and asks before it powers
// a node off. Here a Go client on loopback plays the node's
// fence_kdump_send, and a fixed clock makes the times readable.
func Example() {
	var book kdump.AddressBook
	if err := book.Set("node-2", netip.MustParseAddr("127.0.0.1")); err != nil {
		fmt.Println(err)
		return
	}
	received := time.Date(2030, 1, 2, 12, 0, 1, 0, time.UTC)
	got := make(chan kdump.Message, 1)
	l, err := kdump.Listen(context.Background(), "127.0.0.1:0", kdump.Options{
		Resolve:   book.Resolve,
		Now:       func() time.Time { return received },
		OnMessage: func(m kdump.Message) { got <- m },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	node, err := net.Dial("udp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	if _, err := node.Write(kdump.Encode(kdump.NewPacket())); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case m := <-got:
		fmt.Println("message from", m.Node, "new dump:", m.NewDump, "error:", m.Err)
	case <-time.After(5 * time.Second):
		fmt.Println("no message")
		return
	}

	fmt.Println(l.Dumping("node-2", received.Add(3*time.Second)))
	fmt.Println(l.Dumping("node-2", received.Add(45*time.Second)))
	fmt.Println(l.Dumping("node-3", received))
	// Output:
	// message from node-2 new dump: true error: <nil>
	// true kdump messages from 127.0.0.1 since 12:00:01, last 3s ago (1 message, hold ends at 12:10:01)
	// false kdump messages from 127.0.0.1 stopped: last 45s ago, stale after 30s (1 message)
	// false no kdump message from node "node-3"
}

// The 8 bytes fence_kdump_send sends from an x86-64 node.
func ExampleDecode() {
	p, err := kdump.Decode([]byte{0x40, 0x2a, 0x30, 0x1b, 0x01, 0x00, 0x00, 0x00})
	fmt.Printf("magic %#x version %d big-endian %v error %v\n", p.Magic, p.Version, p.BigEndian, err)
	_, err = kdump.Decode([]byte{0x40, 0x2a, 0x30, 0x1b, 0x02, 0x00, 0x00, 0x00})
	fmt.Println(err)
	// Output:
	// magic 0x1b302a40 version 1 big-endian false error <nil>
	// kdump: unsupported message version
}
