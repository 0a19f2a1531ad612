package sbd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Options configure a Device.
type Options struct {
	// Devices are the SBD devices (block devices, or files), one to three
	// as sbd takes them: a message is written to each, and counts as
	// delivered on more than half of them (sbd's rule).
	Devices []string
	// From is the sender's name written with every message ("from" in sbd
	// list); the host's name when empty.
	From string
	// OffMessage is the message an off writes: MessageOff (the default),
	// MessageReset or MessageCrashdump. Each makes the node fence itself.
	OffMessage Message
	// Now is the clock; time.Now when nil. A message's wait counts in this
	// process by its monotonic readings.
	Now func() time.Time
	// Uptime is the host's boot and the time since it, a clock no setting
	// of the wall clock changes (KernelUptime when nil): stamped with each
	// message, so that another process of this host (fencectl's next run)
	// knows how long the message has stood. A message whose writer booted
	// otherwise (or that has no such stamp) counts from when this Device
	// first read it.
	Uptime func() (boot [16]byte, up time.Duration, err error)
	// Logger receives a line per message written (discarded when nil).
	Logger *slog.Logger
}

// Device is a fence.Device over SBD devices: its plugs are the nodes'
// names in the slots. Set(off) writes the off message into the node's
// mailbox on every device; Set(on) clears it (as fence_sbd's on does: the
// node's sbd may start again; nothing switches it on). Status reports a
// node off only once its message has stood in its mailbox, unchanged, for
// the devices' msgwait, on more than half of the devices: by then the
// node's watchdog has fired, whether it read the message or lost its disk
// (SBD's own guarantee). Before that, and for a mailbox that is clear, a
// test or an exit, it reports the node on. A message that was overwritten
// or cleared starts the wait again: it is no proof.
//
// The time a message has stood is known from when it was written, as its
// writer stamped it in the mailbox sector's spare bytes (sbd writes and
// clears whole sectors: any other write erases the stamp) when the writer
// is this host, in this boot (From, and the kernel's boot_id: one clock,
// never another host's, whose skew could make a message look older than
// it is), read on the boot's clock (CLOCK_BOOTTIME), which no step of the
// wall clock moves; else from when this Device first read it: never
// longer than the truth. A Device is safe for concurrent use.
type Device struct {
	opts  Options
	disks []*disk
	log   *slog.Logger

	// msgwait is the devices' msgwait when they were opened: a header
	// rewritten since with a shorter one does not shorten the proof.
	msgwait time.Duration

	mu    sync.Mutex
	since map[string]seen // plug (as the slot names it, folded) -> the message standing, and since when
}

// seen is a message standing in a node's mailbox, on one device: the
// message, its writer's stamp (zero without one), since when it stands as
// far as this Device knows, and when this Device last read it.
type seen struct {
	box   Mailbox
	stamp written
	since time.Time
	last  time.Time
}

// reading is a reading of the clocks: the wall clock (with its monotonic
// reading) and, when known, the boot's.
type reading struct {
	at   time.Time
	boot [16]byte
	up   time.Duration
	ok   bool
}

// now reads the clocks.
func (d *Device) now() reading {
	r := reading{at: d.opts.Now()}
	if boot, up, err := d.opts.Uptime(); err == nil && boot != [16]byte{} && up > 0 {
		r.boot, r.up, r.ok = boot, up, true
	}
	return r
}

// ProofByTime reports that an off through SBD is proven by elapsed time
// (fence.TimeProver): the message stood for msgwait.
func (d *Device) ProofByTime() bool { return true }

// ErrNoSlot means a node has no slot on an SBD device.
var ErrNoSlot = fmt.Errorf("%w: no slot for the node on the SBD device", fence.ErrUnknownPlug)

// New opens the devices and reads their headers. The devices must agree on
// their timeouts (as sbd requires of the devices of one node).
func New(ctx context.Context, o Options) (*Device, error) {
	if len(o.Devices) == 0 || len(o.Devices) > 3 {
		return nil, &fence.ParamError{Key: "devices", Value: strings.Join(o.Devices, ","), Reason: "want one to three SBD devices"}
	}
	switch o.OffMessage {
	case 0:
		o.OffMessage = MessageOff
	case MessageOff, MessageReset, MessageCrashdump:
	default:
		return nil, &fence.ParamError{Key: "off_message", Value: o.OffMessage.String(), Reason: "want off, reset or crashdump"}
	}
	if o.From == "" {
		o.From, _ = os.Hostname()
		if o.From == "" {
			o.From = "fencekit"
		}
	}
	if len(o.From) > nameMax {
		o.From = o.From[:nameMax]
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Uptime == nil {
		o.Uptime = KernelUptime
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Device{opts: o, log: log, since: map[string]seen{}}
	var first Header
	for i, p := range o.Devices {
		dk, err := openDisk(p)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.disks = append(d.disks, dk)
		h, err := dk.header(ctx)
		if err != nil {
			d.Close()
			return nil, err
		}
		if i == 0 {
			first = h
			d.msgwait = h.MsgWait
		} else if h.Watchdog != first.Watchdog || h.MsgWait != first.MsgWait {
			d.Close()
			return nil, fmt.Errorf("sbd: %s and %s disagree on their timeouts (watchdog %v/%v, msgwait %v/%v)",
				o.Devices[0], p, first.Watchdog, h.Watchdog, first.MsgWait, h.MsgWait)
		}
	}
	return d, nil
}

// Close closes the devices.
func (d *Device) Close() error {
	var errs []error
	for _, dk := range d.disks {
		errs = append(errs, dk.close())
	}
	return errors.Join(errs...)
}

// quorum is how many devices must agree: more than half.
func (d *Device) quorum() int { return len(d.disks)/2 + 1 }

// Header reads the first device's header, whose msgwait and watchdog
// timeouts rule the messages.
func (d *Device) Header(ctx context.Context) (Header, error) { return d.disks[0].header(ctx) }

// Mailbox reads the node's mailbox on every device (an error for a device
// that cannot be read, or where the node has no slot).
func (d *Device) Mailbox(ctx context.Context, node string) ([]Mailbox, []error) {
	out, _, _, errs := d.mailboxes(ctx, node)
	return out, errs
}

// mailboxes reads the node's mailbox on every device, with the stamp its
// writer left and the time each was read.
func (d *Device) mailboxes(ctx context.Context, node string) ([]Mailbox, []written, []reading, []error) {
	out := make([]Mailbox, len(d.disks))
	stamps := make([]written, len(d.disks))
	readAt := make([]reading, len(d.disks))
	errs := make([]error, len(d.disks))
	for i, dk := range d.disks {
		if err := dk.current(); err != nil {
			errs[i] = err
			continue
		}
		h, err := dk.header(ctx)
		if err != nil {
			errs[i] = err
			continue
		}
		slot, err := dk.lookup(ctx, h, node)
		switch {
		case err != nil:
			errs[i] = err
		case slot < 0:
			errs[i] = fmt.Errorf("%w: %s has no slot for %q", ErrNoSlot, dk.path, node)
		default:
			out[i], stamps[i], errs[i] = dk.mailboxStamped(ctx, slot)
			readAt[i] = d.now()
		}
	}
	return out, stamps, readAt, errs
}

// Status reports the node (plug) off once a message that fences it has
// stood for msgwait on more than half of the devices; on when its mailbox
// is clear (or holds a test or an exit) on more than half; unknown while a
// fencing message stands that has not yet stood msgwait (the node may still
// run: it is neither proven off nor known on, and an on clears it). A node
// without a slot is an error wrapping fence.ErrUnknownPlug; devices that
// cannot be read, so that no half of them tells, an error.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if plug == "" {
		return fence.StateUnknown, fmt.Errorf("%w: an SBD device's plug is a node's name", fence.ErrUnknownPlug)
	}
	boxes, stamps, readAt, errs := d.mailboxes(ctx, plug)
	var offs, pending, read, noSlot int
	for i, err := range errs {
		if errors.Is(err, fence.ErrUnknownPlug) {
			noSlot++
			continue
		}
		if err != nil {
			continue
		}
		h, herr := d.disks[i].header(ctx)
		if herr != nil {
			continue
		}
		read++
		// Every read is recorded, a clear mailbox too: a message cleared
		// and written again must not look as if it had stood all along.
		stood := d.standing(i, plug, boxes[i], stamps[i], readAt[i])
		if boxes[i].Message.Kills() {
			if stood >= max(h.MsgWait, d.msgwait) {
				offs++
			} else {
				pending++
			}
		}
	}
	q := d.quorum()
	switch {
	case noSlot >= q:
		return fence.StateUnknown, fmt.Errorf("%w: node %q", ErrNoSlot, plug)
	case offs >= q:
		return fence.StateOff, nil
	case read-offs-pending >= q:
		return fence.StateOn, nil
	case read >= q:
		return fence.StateUnknown, nil // a fencing message stands, not yet msgwait
	}
	return fence.StateUnknown, fmt.Errorf("%w: only %d of %d SBD devices read: %w", ErrIO, read, len(d.disks), errors.Join(errs...))
}

// standing returns how long box, read at r with its writer's stamp, has
// stood in the node's mailbox on device i, as far as this Device knows.
// The same message with the same stamp as the last read stands since then.
// Otherwise it was written after this Device's last read of what stood
// before: its wait starts at r, or, when this host wrote it in this boot
// (From, and the stamp's boot_id), as long before r as the boot's clock
// has run since its stamp, if that comes after that last read. A message
// rewritten with the same content but a new stamp (cleared and written
// again between two reads) starts again. The wall clock in the stamp is
// never read for it: a step of it (forward, or back) changes nothing.
func (d *Device) standing(i int, plug string, box Mailbox, stamped written, r reading) time.Duration {
	key := strconv.Itoa(i) + "/" + strings.ToLower(plug)
	readAt := r.at
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.since[key]
	if !ok || s.box != box || !s.stamp.equal(stamped) {
		since := readAt
		if box.From == d.opts.From && stamped.booted() && r.ok && stamped.boot == r.boot && stamped.uptime <= r.up {
			if at := readAt.Add(-(r.up - stamped.uptime)); !ok || at.After(s.last) {
				since = at
			}
		}
		s = seen{box: box, stamp: stamped, since: since}
	}
	s.last = readAt
	d.since[key] = s
	return readAt.Sub(s.since)
}

// wrote records a message this Device wrote (and read back) at t, with
// the stamp it wrote (zero when none).
func (d *Device) wrote(i int, plug string, box Mailbox, stamp written, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.since[strconv.Itoa(i)+"/"+strings.ToLower(plug)] = seen{box: box, stamp: stamp, since: t, last: t}
}

// Set writes the off message into the node's mailbox on every device
// (off), or clears it (on). It succeeds when the write, read back, holds on
// more than half of the devices. A message that already stands is not
// written again: its wait goes on.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	if plug == "" {
		return fence.NotDone(fmt.Errorf("%w: an SBD device's plug is a node's name", fence.ErrUnknownPlug))
	}
	box := Mailbox{Message: MessageClear}
	switch s {
	case fence.StateOff:
		box = Mailbox{Message: d.opts.OffMessage, From: d.opts.From}
	case fence.StateOn:
	default:
		return fence.NotDone(fmt.Errorf("sbd: cannot set %v", s))
	}
	return d.send(ctx, plug, box)
}

// Cycle reboots the node (plug) as fence_sbd's reboot does by default
// (--method cycle): it writes a reset message into the node's mailbox on
// every device, waits until that message has stood for msgwait on more
// than half of them (Status reports the node off: its watchdog has fired,
// whether it read the message or lost its disks), then clears the mailbox,
// so that the node's sbd starts again when it boots, whatever its start
// mode (sbd -S 1 refuses to start over a reset). fence_sbd leaves the reset
// standing. The engine then verifies the node on (its mailbox clear), as
// after any cycle. A reset never proven (cleared or overwritten by another
// writer with a message that does not fence, devices unreadable until ctx
// ends) is an error and the mailbox is left as it is: the reboot's outcome
// is unknown.
func (d *Device) Cycle(ctx context.Context, plug string) error {
	if plug == "" {
		return fence.NotDone(fmt.Errorf("%w: an SBD device's plug is a node's name", fence.ErrUnknownPlug))
	}
	if err := d.send(ctx, plug, Mailbox{Message: MessageReset, From: d.opts.From}); err != nil {
		return err
	}
	h, err := d.Header(ctx)
	if err != nil {
		return fmt.Errorf("sbd: reset of %s written, msgwait not read: %w", plug, err)
	}
	// The proof comes msgwait after the write: the wait is bounded by
	// twice that and a minute for devices slow to read, within ctx.
	ctx, cancel := context.WithTimeout(ctx, 2*h.MsgWait+time.Minute)
	defer cancel()
	// Read the status a few times a msgwait, at least every 100 ms.
	every := min(max(h.MsgWait/20, 10*time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		st, err := d.Status(ctx, plug)
		switch {
		case err == nil && st == fence.StateOff:
			return d.send(ctx, plug, Mailbox{Message: MessageClear})
		case err == nil && st == fence.StateOn:
			return fmt.Errorf("sbd: the reset of %s was cleared before it stood for msgwait (%v): no proof the node went down", plug, h.MsgWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sbd: the reset of %s not proven within the time allowed (msgwait %v): %w", plug, h.MsgWait, errors.Join(ctx.Err(), err))
		case <-t.C:
		}
	}
}

// send writes box into the node's mailbox on every device, read back, and
// succeeds when it holds on more than half of them.
func (d *Device) send(ctx context.Context, plug string, box Mailbox) error {
	var ok, noSlot int
	var errs []error
	for i, dk := range d.disks {
		err := d.deliver(ctx, i, dk, plug, box)
		switch {
		case errors.Is(err, fence.ErrUnknownPlug):
			noSlot++
		case err != nil:
			errs = append(errs, err)
		default:
			ok++
		}
	}
	q := d.quorum()
	switch {
	case ok >= q:
		d.log.Info("sbd message written", "node", plug, "message", box.Message.String(), "devices", ok)
		return nil
	case noSlot >= q:
		return fence.NotDone(fmt.Errorf("%w: node %q", ErrNoSlot, plug))
	case ok == 0 && allNotWritten(errs):
		return fence.NotDone(fmt.Errorf("sbd: message %s to %s not written: %w", box.Message, plug, errors.Join(errs...)))
	}
	// Written to some devices, or maybe written: the outcome is unknown.
	return fmt.Errorf("sbd: message %s to %s delivered to %d of %d devices: %w", box.Message, plug, ok, len(d.disks), errors.Join(errs...))
}

// notWritten marks an error of a delivery that wrote nothing (the header
// or the slot could not be read).
type notWritten struct{ error }

func (e notWritten) Unwrap() error { return e.error }

func allNotWritten(errs []error) bool {
	for _, e := range errs {
		var nw notWritten
		if !errors.As(e, &nw) {
			return false
		}
	}
	return true
}

// deliver writes box into the node's mailbox on device i, unless it stands
// there already.
func (d *Device) deliver(ctx context.Context, i int, dk *disk, plug string, box Mailbox) error {
	if err := dk.current(); err != nil {
		return notWritten{err}
	}
	h, err := dk.header(ctx)
	if err != nil {
		return notWritten{err}
	}
	slot, err := dk.lookup(ctx, h, plug)
	if err != nil {
		return notWritten{err}
	}
	if slot < 0 {
		return fmt.Errorf("%w: %s has no slot for %q", ErrNoSlot, dk.path, plug)
	}
	cur, stamped, err := dk.mailboxStamped(ctx, slot)
	if err != nil {
		return notWritten{err}
	}
	switch {
	case box.Message == MessageClear && cur.Message == MessageClear:
		return nil
	case box.Message.Kills() && cur == box && stamped.stamped():
		return nil // this host's message stands: its wait goes on
	}
	// Another's fencing message is written over with this host's: the node
	// is told the same, and its wait starts now, from a time this host
	// knows.
	if err := dk.writeMailbox(ctx, slot, box); err != nil { // a clear is all zeros, as sbd's
		return err
	}
	// The message is on the disk, read back: its wait starts now, not when
	// the write began. The time is stamped by a second write of the same
	// message, so that another process of this host (fencectl's next run)
	// knows it; without the stamp, it counts from when it reads it.
	r := d.now()
	var stamp written
	if box.Message != MessageClear {
		w := written{wall: time.Unix(0, r.at.UnixNano())}
		if r.ok {
			w.boot, w.uptime = r.boot, r.up
		}
		if err := dk.writeStamped(ctx, slot, box, w); err != nil {
			d.log.Warn("sbd: the message's time not stamped", "device", dk.path, "node", plug, "error", err)
		} else {
			stamp = w
		}
	}
	d.wrote(i, plug, box, stamp, r.at)
	return nil
}

// List returns the nodes that have a slot on the devices, with their
// state as Status tells it (fence.Lister), reading each slot and mailbox
// once.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	type tally struct{ read, offs, pending int }
	nodes := map[string]*tally{}
	var names []string
	var errs []error
	for i, dk := range d.disks {
		h, err := dk.header(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slots, err := dk.slots(ctx, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		order := make([]int, 0, len(slots))
		for s := range slots {
			order = append(order, s)
		}
		sort.Ints(order)
		for _, s := range order {
			name := slots[s]
			key := strings.ToLower(name)
			tl := nodes[key]
			if tl == nil {
				tl = &tally{}
				nodes[key] = tl
				names = append(names, name)
			}
			box, stamped, err := dk.mailboxStamped(ctx, s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			tl.read++
			stood := d.standing(i, name, box, stamped, d.now())
			if box.Message.Kills() {
				if stood >= max(h.MsgWait, d.msgwait) {
					tl.offs++
				} else {
					tl.pending++
				}
			}
		}
	}
	if len(names) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	q := d.quorum()
	out := make([]fence.Plug, 0, len(names))
	for _, n := range names {
		tl := nodes[strings.ToLower(n)]
		st := fence.StateUnknown
		switch {
		case tl.offs >= q:
			st = fence.StateOff
		case tl.read-tl.offs-tl.pending >= q:
			st = fence.StateOn
		}
		out = append(out, fence.Plug{ID: n, Name: n, State: st})
	}
	return out, nil
}

// Monitor reads every device's header (fence.Monitor): the devices are
// there and hold SBD.
func (d *Device) Monitor(ctx context.Context) error {
	var errs []error
	for _, dk := range d.disks {
		if _, err := dk.header(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > len(d.disks)-d.quorum() {
		return errors.Join(errs...)
	}
	return nil
}

// String describes the device, for logs.
func (d *Device) String() string {
	return "sbd(" + strings.Join(slices.Clone(d.opts.Devices), ",") + ")"
}

var (
	_ fence.Device  = (*Device)(nil)
	_ fence.Lister  = (*Device)(nil)
	_ fence.Monitor = (*Device)(nil)
)
