package sbd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Watchdog is a node's watchdog: it resets the node when it is not kicked
// within its timeout. LinuxWatchdog drives /dev/watchdog; tests use a
// double.
type Watchdog interface {
	// Kick tells the watchdog the node is alive.
	Kick() error
	// Close stops kicking it: disarmed for a clean stop, left armed (it
	// fires after its timeout) when the node fences itself.
	Close(disarm bool) error
}

// Watcher is the node's side of SBD: it watches the node's mailbox on the
// SBD devices and kicks the node's watchdog while it can read them, as the
// sbd daemon's disk watchers and inquisitor do:
//
//   - every header Loop (1 s by default) it reads each device's header (it
//     must not change), the node's slot (it must still be the node's) and
//     its mailbox;
//   - a reset, off or crashdump message on any device makes the node fence
//     itself: Fence is called with the message and the watchdog is left
//     armed and no longer kicked, so that the node is reset within the
//     watchdog timeout even if Fence fails. The message is left in the
//     mailbox, as sbd leaves it: it is the fencer's proof (a message that
//     stood for msgwait) and tells the node's next start that it was fenced;
//   - a test message is answered by clearing the mailbox; an exit message
//     stops the watcher cleanly (the watchdog disarmed);
//   - the watchdog is kicked only while more than half of the devices were
//     read within the watchdog timeout: a node that loses its disk stops
//     kicking, calls Fence with MessageReset and is reset by its watchdog,
//     so that msgwait after any message the fencer wrote, the node is
//     surely down whether it read the message or not.
//
// At its start the Watcher allocates the node's slot where it has none. A
// kill message standing from before (the node was fenced) stops the start
// with ErrFencedBefore when StartClean is set (sbd's SBD_STARTMODE=clean:
// an operator clears it with sbd message NODE clear), and is cleared
// otherwise (SBD_STARTMODE=always).
type Watcher struct {
	// Devices are the SBD devices (one to three).
	Devices []string
	// Node is the node's name, as its slot holds it.
	Node string
	// Watchdog is kicked while the devices can be read. Required.
	Watchdog Watchdog
	// Fence fences the node (in production a sysrq reset, off or
	// crashdump); nil relies on the watchdog alone.
	Fence func(Message)
	// StartClean refuses to start while a kill message stands.
	StartClean bool
	// Now is the clock (time.Now when nil); Logger receives the watcher's
	// decisions (discarded when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// The ends of Watcher.Run.
var (
	// ErrSelfFenced: the node was told to fence itself, or lost its disk;
	// it is being reset.
	ErrSelfFenced = errors.New("sbd: the node fenced itself")
	// ErrFencedBefore: a kill message stands from before the start, and
	// the Watcher starts clean only.
	ErrFencedBefore = errors.New("sbd: a fencing message stands in the node's slot from before: clear it (sbd message NODE clear) to start")
)

// watched is one device as the Watcher watches it.
type watched struct {
	dk     *disk
	header Header
	slot   int
	good   time.Time // the last complete read
}

// Run watches until ctx ends (the watchdog is disarmed: a clean stop), an
// exit message arrives (the same), or the node fences itself
// (ErrSelfFenced, the watchdog left armed).
func (w *Watcher) Run(ctx context.Context) error {
	if w.Watchdog == nil || w.Node == "" || len(w.Devices) == 0 || len(w.Devices) > 3 {
		return errors.New("sbd: a Watcher needs a Watchdog, the node's name and one to three devices")
	}
	now := w.Now
	if now == nil {
		now = time.Now
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ds []*watched
	defer func() {
		for _, d := range ds {
			d.dk.close()
		}
	}()
	for _, p := range w.Devices {
		dk, err := openDisk(p)
		if err != nil {
			return err
		}
		d := &watched{dk: dk}
		ds = append(ds, d)
		if d.header, err = dk.header(ctx); err != nil {
			return err
		}
		if d.slot, err = allocate(ctx, dk, w.Node); err != nil {
			return err
		}
		box, err := dk.mailbox(ctx, d.slot)
		if err != nil {
			return err
		}
		if box.Message.Kills() {
			if w.StartClean {
				return fmt.Errorf("%w (%s: %s from %s)", ErrFencedBefore, p, box.Message, box.From)
			}
			log.Warn("sbd: clearing the fencing message that stands from before the start", "device", p, "message", box.Message.String(), "from", box.From)
		}
		if box.Message != MessageClear {
			if err := dk.writeMailbox(ctx, d.slot, Mailbox{}); err != nil {
				return err
			}
		}
		d.good = now()
	}
	quorum := len(ds)/2 + 1
	loop, watchdog := ds[0].header.Loop, ds[0].header.Watchdog
	if err := w.Watchdog.Kick(); err != nil {
		return fmt.Errorf("sbd: kicking the watchdog: %w", err)
	}
	log.Info("sbd: watching", "node", w.Node, "devices", w.Devices, "loop", loop.String(), "watchdog", watchdog.String())
	t := time.NewTicker(loop)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("sbd: stopping", "node", w.Node)
			return w.Watchdog.Close(true)
		case <-t.C:
		}
		for _, d := range ds {
			// A read counts from when it began: a message written after
			// that is not seen by it.
			began := now()
			msg, err := w.check(ctx, d, loop, log)
			if err != nil {
				log.Warn("sbd: device not read", "device", d.dk.path, "error", err)
			} else {
				d.good = began
			}
			switch {
			case msg.Kills():
				log.Error("sbd: fencing message received: fencing this node", "device", d.dk.path, "message", msg.String())
				return w.selfFence(msg)
			case msg == MessageExit:
				log.Info("sbd: exit message received: stopping", "device", d.dk.path)
				return w.Watchdog.Close(true)
			}
		}
		// The kick lets the node live one watchdog timeout more: only
		// while, at the kick, more than half of the devices were read
		// within the watchdog timeout, so that a node that missed a
		// message is reset by its watchdog within msgwait (twice the
		// watchdog timeout) of the message, however long the reads took.
		kickAt := now()
		alive := 0
		for _, d := range ds {
			if kickAt.Sub(d.good) < watchdog {
				alive++
			}
		}
		if alive < quorum {
			log.Error("sbd: the SBD devices cannot be read: fencing this node", "readable", alive, "devices", len(ds))
			return w.selfFence(MessageReset)
		}
		if err := w.Watchdog.Kick(); err != nil {
			log.Error("sbd: the watchdog cannot be kicked", "error", err)
		}
	}
}

// check reads one device: its header and the node's slot unchanged, and
// its mailbox; a test message is answered. It returns the message that
// stands. A device whose path names another file than the one opened (a
// shared file restored or copied over, a link pointed at another disk) is
// opened again first: the fencer writes to what the path names, and a
// watcher that read the old file would kick its watchdog while the
// fencer's message stood unread for msgwait.
func (w *Watcher) check(ctx context.Context, d *watched, loop time.Duration, log *slog.Logger) (Message, error) {
	ctx, cancel := context.WithTimeout(ctx, loop)
	defer cancel()
	if moved, err := d.dk.replaced(); err != nil {
		return MessageClear, err
	} else if moved {
		dk, err := openDisk(d.dk.path)
		if err != nil {
			return MessageClear, fmt.Errorf("%s was replaced since the watcher opened it; opening it again: %w", d.dk.path, err)
		}
		log.Warn("sbd: the device was replaced at its path: watching the new one", "device", d.dk.path)
		_ = d.dk.close()
		d.dk = dk
	}
	h, err := d.dk.header(ctx)
	if err != nil {
		return MessageClear, err
	}
	if h != d.header {
		return MessageClear, fmt.Errorf("%s: the header changed since the start", d.dk.path)
	}
	b, err := d.dk.read(ctx, nodeSector(d.slot))
	if err != nil {
		return MessageClear, err
	}
	if name, used := slotName(b); !used || name != w.Node {
		return MessageClear, fmt.Errorf("%s: slot %d is no longer %s's", d.dk.path, d.slot, w.Node)
	}
	box, err := d.dk.mailbox(ctx, d.slot)
	if err != nil {
		return MessageClear, err
	}
	if _, known := messageNames[box.Message]; box.Message == MessageTest || !known {
		// A test is answered; an unknown message (a torn write, perhaps)
		// is cleared, as sbd clears it.
		if err := d.dk.writeMailbox(ctx, d.slot, Mailbox{}); err != nil {
			return MessageClear, err
		}
		return MessageClear, nil
	}
	return box.Message, nil
}

// selfFence fences the node: the watchdog left armed, then Fence.
func (w *Watcher) selfFence(m Message) error {
	_ = w.Watchdog.Close(false)
	if w.Fence != nil {
		w.Fence(m)
	}
	return fmt.Errorf("%w: %s", ErrSelfFenced, m)
}
