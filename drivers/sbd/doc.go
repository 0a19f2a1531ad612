// Package sbd is fencekit's driver for SBD ("storage-based death"), the
// shared-disk poison pill of Pacemaker clusters, for nodes without a
// reachable BMC or PDU. It reads and writes the SBD on-disk format of
// ClusterLabs' sbd (version 2: a header, then a slot and a mailbox per
// node) itself, and stands in for fence_sbd; it registers itself as the
// driver "sbd" when imported:
//
//	import _ "github.com/fencekit/fencekit/drivers/sbd"
//
// # The fencer's side
//
// A Device's plugs are the nodes' names in the slots. Set(off) writes a
// fencing message (off by default; reset or crashdump) into the node's
// mailbox on every device, read back; Set(on) clears it. The node's own sbd
// (or this package's Watcher) reads its mailbox every loop timeout and, on
// the message, fences itself; a node that cannot read its devices stops
// kicking its watchdog, which resets it. Either way, msgwait (twice the
// watchdog timeout by default, from the header) after the message was
// written, the node is down: that is SBD's guarantee, and the only proof an
// SBD fence has. So Status reports a node off only once its message has
// stood, unchanged, for msgwait on more than half of the devices; a message
// that was overwritten or cleared in between is no proof, and its wait
// starts again. fence_sbd reports a node off as soon as the message is in
// its mailbox; the driver does not, and fence.Do's verification (poll
// Status until off, within power_timeout, which must exceed msgwait) gives
// the same end: an off confirmed msgwait after the write. A reboot by the
// method cycle, fence_sbd's default, writes a reset (Device.Cycle), waits
// for the same proof, then clears the mailbox.
//
// How long a message has stood is known from the stamp its writer left in
// the spare bytes of the mailbox sector (sbd neither reads nor keeps them:
// any other write of the sector erases the stamp): the writer's boot (the
// kernel's boot_id) and its boot clock (CLOCK_BOOTTIME), trusted only when
// the writer is this host in this boot, whose boot clock the reader shares
// and no setting of the wall clock moves; otherwise from the first time
// this Device read the message, never earlier than the truth. The wall
// time in the stamp is for people reading the disk, never for the proof.
//
// # The node's side
//
// Watcher watches a node's mailbox and kicks its watchdog (LinuxWatchdog
// for /dev/watchdog) with sbd's timing rules; see Watcher. It does not clear a
// fencing message before fencing itself, as sbd does not: the message standing for msgwait is the fencer's
// proof, and a cleared one would leave the fencer unable to tell a node
// that obeyed from one whose slot someone cleared. It clears a test
// message, as sbd does, and a fencing message only at a start that is not
// clean.
//
// The tests run the real sbd (Debian's sbd 1.5) on a loop device: headers
// and slots created by either read by the other, messages written by the
// driver read by sbd list and messages written by sbd message read by the
// driver, the real sbd watcher (sbd watch, in its debug mode and a PID
// namespace of its own) obeying the driver's messages, the Watcher against
// messages sbd writes, and fence_sbd beside fencectl on one device.
package sbd
