package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// nodeWatch watches the Nodes for what fencekube.Health does not give: it
// keeps the kdump address book in step with the nodes' InternalIP and
// ExternalIP addresses, and can call wake when a node's Ready condition
// changes (the program's controller is woken by its manager's watches
// instead). It reads the informer its owner runs (the manager's, whose
// Nodes are fencekube.NodeSummary, with their addresses), so that the
// nodes are watched once.
type nodeWatch struct {
	// inf is the Node informer w reads; its owner runs it.
	inf cache.SharedIndexInformer
	// book, when set, receives every node's addresses.
	book *kdump.AddressBook
	// wake is called when a node appears, goes, or its Ready condition
	// changes.
	wake   func()
	logger *slog.Logger

	mu sync.Mutex
	// pending holds the nodes whose addresses the book refused (an
	// address still held by another node, for instance after an address
	// moved from a deleted node); they are set again after every change.
	pending map[string][]netip.Addr
}

// start adds w's handler to w.inf. It returns the handler's sync checker:
// done once w has seen every node of the informer's first list.
func (w *nodeWatch) start() (cache.DoneChecker, error) {
	w.pending = map[string][]netip.Addr{}
	reg, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := fencekube.SummaryOf(obj); ok {
				w.changed(nil, n)
			}
		},
		UpdateFunc: func(old, obj any) {
			o, _ := fencekube.SummaryOf(old)
			if n, ok := fencekube.SummaryOf(obj); ok {
				w.changed(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := fencekube.SummaryOf(obj); ok {
				w.deleted(n.Name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	return reg.HasSyncedChecker(), nil
}

// nodeAddrs returns the node's InternalIP and ExternalIP addresses, those
// that parse, without repeats. They are the addresses a node's
// fence_kdump_send messages come from.
func nodeAddrs(n *fencekube.NodeSummary) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || !ip.IsValid() || ip.IsUnspecified() {
			continue
		}
		ip = ip.Unmap().WithZone("")
		if !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// changed handles a node seen for the first time (old nil) or updated.
func (w *nodeWatch) changed(old, n *fencekube.NodeSummary) {
	if w.book != nil && (old == nil || !slices.Equal(nodeAddrs(old), nodeAddrs(n))) {
		w.setAddrs(n.Name, nodeAddrs(n))
	}
	if w.wake != nil && (old == nil || old.Ready != n.Ready) {
		w.wake()
	}
}

// deleted handles a node that is gone.
func (w *nodeWatch) deleted(node string) {
	if w.book != nil {
		w.book.Remove(node)
		w.mu.Lock()
		delete(w.pending, node)
		w.mu.Unlock()
		w.retryPending()
	}
	if w.wake != nil {
		w.wake()
	}
}

// setAddrs gives node its addresses in the book; when the book refuses
// (an address belongs to another node), the node keeps none and waits in
// pending. A node's own earlier addresses are dropped first, so that a
// stale address never holds off its fencing.
func (w *nodeWatch) setAddrs(node string, addrs []netip.Addr) {
	w.book.Remove(node)
	if err := w.book.Set(node, addrs...); err != nil {
		w.mu.Lock()
		_, was := w.pending[node]
		w.pending[node] = addrs
		w.mu.Unlock()
		if !was {
			w.logger.Warn("kdump: node's addresses not recorded; its fence_kdump messages are ignored until the conflict ends",
				"node", node, "error", err)
		}
	} else {
		w.mu.Lock()
		delete(w.pending, node)
		w.mu.Unlock()
	}
	w.retryPending()
}

// retryPending sets the addresses of the pending nodes again.
func (w *nodeWatch) retryPending() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for node, addrs := range w.pending {
		if err := w.book.Set(node, addrs...); err == nil {
			delete(w.pending, node)
			w.logger.Info("kdump: node's addresses recorded", "node", node)
		}
	}
}
