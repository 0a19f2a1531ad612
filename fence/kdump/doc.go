// Package kdump listens for the fence_kdump protocol, so that a fence
// controller holds off the power fencing of a node that is dumping its
// kernel (kdump) until the dump ends or a timeout passes.
//
// # The protocol
//
// A node whose kernel crashed boots its kdump kernel, which runs
// fence_kdump_send (ClusterLabs fence-agents) with the addresses of the
// cluster's fencing hosts: it sends a UDP datagram to each of them, on port
// 7410 by default, every interval (-i, 10 s by default) for a count of
// times (-c, 0 for as long as the dump lasts). A datagram is 8 bytes: the
// magic number 0x1B302A40 and the version 1, two 32-bit words in the
// sender's native byte order (40 2a 30 1b 01 00 00 00 from an x86-64 or
// arm64 node). The reference agent, fence_kdump, accepts a datagram only
// when its magic and version match and its source address is the address
// of the node being fenced.
//
// Decode and Encode read and write that format. Decode accepts what the
// reference agent accepts, with one extension: the words in either byte
// order, so that a big-endian node (s390x) is understood by a little-endian
// controller.
//
// # The Listener
//
// Listen binds a UDP socket and records every valid message whose source
// address Options.Resolve maps to a node (an AddressBook does that mapping
// from the nodes' addresses). Everything else (a datagram of another
// length, a bad magic or version, a message from an unknown address) is
// counted in Stats, logged at debug level and otherwise ignored: it never
// creates state, so an unknown sender cannot make the listener grow.
//
// Dumping(node, now) is the question a fence controller asks before it
// powers a node off. A node is dumping while all of these hold:
//
//   - a message of it came within the last Options.Stale (default 30 s,
//     three times the sender's default interval: two lost datagrams in a
//     row do not end a dump);
//   - the first message of its current dump came less than
//     Options.Timeout ago (default 10 min): the hold is bounded however
//     long messages keep coming;
//   - Forget was not called since (a controller forgets a node once its
//     fencing completed).
//
// A dump is a run of messages with no gap of Stale or more: a message after
// such a gap starts a new dump with a new hold. Messages(node) and Dumps()
// return what is known of the dumps; OnMessage sees every datagram, for
// metrics.
//
// # Safety
//
// A message only delays fencing: when the listener is down, a message is
// lost or a hold expires, Dumping answers false and fencing goes ahead. The
// protocol has no authentication, and a UDP source address can be forged:
// listen on the cluster's own network only; Timeout bounds what a forged
// message can delay. An address belongs to one node at most (AddressBook
// refuses to give it to a second one), so a message never holds off the
// fencing of another node than its sender's.
package kdump
