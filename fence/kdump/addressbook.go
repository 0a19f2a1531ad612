package kdump

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
)

// AddressBook maps the addresses of nodes to their names, for
// Options.Resolve (pass its Resolve method). It is safe for concurrent use;
// the zero value is an empty book.
//
// Addresses are kept in their plain form: an IPv4-mapped IPv6 address
// (::ffff:192.0.2.1) is stored and looked up as its IPv4 address, and an
// IPv6 zone is dropped, so that a message matches however the socket
// reports its source. An address belongs to at most one node: a message
// from it holds off that node's fencing, and no other's.
type AddressBook struct {
	mu     sync.RWMutex
	byAddr map[netip.Addr]string
	byNode map[string][]netip.Addr
}

// plain returns a in the form the book keys it by.
func plain(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// Set makes addrs the addresses of node, replacing the ones it had; Set
// with no address removes the node. It fails, changing nothing, when node
// is empty, when an address is invalid or unspecified (0.0.0.0, ::), or
// when an address already belongs to another node (Remove or re-Set that
// node first).
func (b *AddressBook) Set(node string, addrs ...netip.Addr) error {
	if node == "" {
		return fmt.Errorf("kdump: address book: empty node name")
	}
	keys := make([]netip.Addr, 0, len(addrs))
	for i, a := range addrs {
		if !a.IsValid() || a.IsUnspecified() {
			return fmt.Errorf("kdump: address book: node %q: address %d (%v) is not a usable source address", node, i+1, a)
		}
		if k := plain(a); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		if owner, ok := b.byAddr[k]; ok && owner != node {
			return fmt.Errorf("kdump: address book: node %q: address %v already belongs to node %q", node, k, owner)
		}
	}
	b.removeLocked(node)
	if len(keys) == 0 {
		return nil
	}
	if b.byAddr == nil {
		b.byAddr = make(map[netip.Addr]string)
		b.byNode = make(map[string][]netip.Addr)
	}
	for _, k := range keys {
		b.byAddr[k] = node
	}
	b.byNode[node] = keys
	return nil
}

// Remove forgets node and its addresses. Removing an unknown node does
// nothing.
func (b *AddressBook) Remove(node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(node)
}

func (b *AddressBook) removeLocked(node string) {
	for _, k := range b.byNode[node] {
		delete(b.byAddr, k)
	}
	delete(b.byNode, node)
}

// Resolve returns the node that a belongs to. It has the signature of
// Options.Resolve and does not allocate.
func (b *AddressBook) Resolve(a netip.Addr) (node string, ok bool) {
	b.mu.RLock()
	node, ok = b.byAddr[plain(a)]
	b.mu.RUnlock()
	return node, ok
}

// Addrs returns the addresses of node (in their plain form), or nil.
func (b *AddressBook) Addrs(node string) []netip.Addr {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return slices.Clone(b.byNode[node])
}

// Len returns the number of nodes in the book.
func (b *AddressBook) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.byNode)
}
