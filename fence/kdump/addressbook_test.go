package kdump_test

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/kdump"
)

func TestAddressBook(t *testing.T) {
	var b kdump.AddressBook
	_, ok := b.Resolve(addr("192.0.2.1"))
	assert.False(t, ok, "zero value is empty")

	require.NoError(t, b.Set("node-1", addr("192.0.2.1"), addr("2001:db8::1"), addr("192.0.2.1")))
	require.NoError(t, b.Set("node-2", addr("::ffff:192.0.2.2"), addr("fe80::2%eth0")))
	assert.Equal(t, 2, b.Len())
	assert.Equal(t, []netip.Addr{addr("192.0.2.1"), addr("2001:db8::1")}, b.Addrs("node-1"))
	assert.Equal(t, []netip.Addr{addr("192.0.2.2"), addr("fe80::2")}, b.Addrs("node-2"))

	for _, tc := range []struct {
		from, node string
		ok         bool
	}{
		{"192.0.2.1", "node-1", true},
		{"::ffff:192.0.2.1", "node-1", true},
		{"2001:db8::1", "node-1", true},
		{"192.0.2.2", "node-2", true},
		{"fe80::2", "node-2", true},
		{"fe80::2%eth1", "node-2", true},
		{"192.0.2.3", "", false},
		{"2001:db8::2", "", false},
	} {
		node, ok := b.Resolve(addr(tc.from))
		assert.Equal(t, tc.ok, ok, tc.from)
		assert.Equal(t, tc.node, node, tc.from)
	}

	// Set replaces the node's addresses.
	require.NoError(t, b.Set("node-1", addr("192.0.2.11")))
	_, ok = b.Resolve(addr("192.0.2.1"))
	assert.False(t, ok)
	node, ok := b.Resolve(addr("192.0.2.11"))
	assert.True(t, ok)
	assert.Equal(t, "node-1", node)

	// An address belongs to one node: the second Set fails and changes
	// nothing.
	err := b.Set("node-3", addr("192.0.2.33"), addr("::ffff:192.0.2.11"))
	require.Error(t, err)
	assert.Equal(t, `kdump: address book: node "node-3": address 192.0.2.11 already belongs to node "node-1"`, err.Error())
	_, ok = b.Resolve(addr("192.0.2.33"))
	assert.False(t, ok)
	assert.Nil(t, b.Addrs("node-3"))

	// Removing frees the addresses; Set with none removes too.
	b.Remove("node-1")
	b.Remove("node-unknown")
	require.NoError(t, b.Set("node-3", addr("192.0.2.11")))
	require.NoError(t, b.Set("node-2"))
	_, ok = b.Resolve(addr("192.0.2.2"))
	assert.False(t, ok)
	assert.Equal(t, 1, b.Len())
}

func TestAddressBookErrors(t *testing.T) {
	var b kdump.AddressBook
	for _, tc := range []struct {
		node  string
		addrs []netip.Addr
		err   string
	}{
		{"", []netip.Addr{addr("192.0.2.1")}, "kdump: address book: empty node name"},
		{"node-1", []netip.Addr{{}}, `kdump: address book: node "node-1": address 1 (invalid IP) is not a usable source address`},
		{"node-1", []netip.Addr{addr("192.0.2.1"), addr("0.0.0.0")}, `kdump: address book: node "node-1": address 2 (0.0.0.0) is not a usable source address`},
		{"node-1", []netip.Addr{addr("::")}, `kdump: address book: node "node-1": address 1 (::) is not a usable source address`},
	} {
		assert.EqualError(t, b.Set(tc.node, tc.addrs...), tc.err)
	}
	assert.Equal(t, 0, b.Len())
}

func TestAddressBookConcurrent(t *testing.T) {
	var b kdump.AddressBook
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			node := fmt.Sprintf("node-%d", i)
			a := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
			for range 200 {
				assert.NoError(t, b.Set(node, a))
				got, ok := b.Resolve(a)
				if ok {
					assert.Equal(t, node, got)
				}
				b.Remove(node)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 0, b.Len())
}
