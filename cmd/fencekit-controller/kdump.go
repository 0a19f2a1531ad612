package main

import (
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence/kdump"
)

// kdumpHold is the controller's view of a kdump Listener, with a detail
// made for the NodeFence's message, which the controller writes once when
// power management starts to wait: the sender, the start of the dump and the
// end of the hold (the Listener's own detail says how long ago the last
// message came, which is stale once written).
type kdumpHold struct{ l *kdump.Listener }

// Dumping reports whether node is dumping at now, as the Listener's
// Dumping does.
func (k kdumpHold) Dumping(node string, now time.Time) (bool, string) {
	d, _ := k.l.Messages(node)
	d.Node = node
	dumping, detail := d.Holds(now, k.l.Stale(), k.l.Timeout())
	if !dumping {
		return false, detail
	}
	return true, fmt.Sprintf("kdump messages from %v since %s (hold ends at %s at the latest)",
		d.From, d.First.Format(time.TimeOnly), d.First.Add(k.l.Timeout()).Format(time.TimeOnly))
}

// Forget drops node's dump once its fencing is over, so that its next dump
// starts a new hold.
func (k kdumpHold) Forget(node string) { k.l.Forget(node) }
