package kdump

import (
	"fmt"
	"net/netip"
	"time"
)

// Dump is what a Listener knows of one node's current dump: a run of
// accepted messages from the node's addresses, none more than Stale after
// the one before. A message that comes Stale or more after the last one
// starts a new Dump (the node dumped, rebooted and crashed again, or the
// messages were lost for that long: either way the hold starts over).
type Dump struct {
	// Node is the node's name, as Options.Resolve gave it.
	Node string
	// From is the source address of the last message.
	From netip.Addr
	// First and Last are when the first and the last message of the dump
	// were received (Options.Now).
	First, Last time.Time
	// Count is the number of messages received in this dump.
	Count int
}

// Holds reports whether d holds off the fencing of its node at now, with
// a detail for logs and events, under the rule of a Listener:
//
//   - no message (Count 0): not dumping;
//   - the last message is stale or more old: not dumping (the dump ended,
//     the node rebooted, or it is not sending any more);
//   - the first message is timeout or more old: not dumping (the hold
//     expired, whether or not messages still come);
//   - otherwise: dumping.
//
// A now before First or Last counts as no time passed. Holds is pure.
func (d Dump) Holds(now time.Time, stale, timeout time.Duration) (dumping bool, detail string) {
	if d.Count == 0 {
		return false, fmt.Sprintf("no kdump message from node %q", d.Node)
	}
	since, last := age(now, d.First), age(now, d.Last)
	switch {
	case last >= stale:
		return false, fmt.Sprintf("kdump messages from %v stopped: last %v ago, stale after %v (%s)",
			d.From, round(last), stale, d.counted())
	case since >= timeout:
		return false, fmt.Sprintf("kdump hold expired after %v (messages from %v since %s, last %v ago, %s)",
			timeout, d.From, clock(d.First), round(last), d.counted())
	}
	return true, fmt.Sprintf("kdump messages from %v since %s, last %v ago (%s, hold ends at %s)",
		d.From, clock(d.First), round(last), d.counted(), clock(d.First.Add(timeout)))
}

func (d Dump) counted() string {
	if d.Count == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", d.Count)
}

// age returns now - t, never negative.
func age(now, t time.Time) time.Duration {
	return max(now.Sub(t), 0)
}

// round rounds an age for a reader: to the millisecond below a second, to
// the second above.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

func clock(t time.Time) string {
	return t.Format(time.TimeOnly)
}
