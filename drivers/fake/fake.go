// Package fake is an in-memory fence device with fault injection, for tests,
// demonstrations and dry runs. It implements fence.Device and every optional
// capability (fence.Cycler, fence.SoftOffer, fence.Lister, fence.Monitor and
// io.Closer), and is safe for concurrent use.
//
// A Device keeps the true state of each plug (Truth, SetTruth) apart from
// what it answers: injected faults (Inject) make it refuse, hang, lie, flap
// or leave the outcome of a request unknown, as real devices do. Calls
// counts what it was asked. Options.SwitchDelay makes plugs switch some time
// after a request returns; it runs on timers, so it follows the fake clock
// of testing/synctest.
//
// With Options.StateFile the device has one plug whose state lives in a
// file, in the format of the ClusterLabs agent fence_dummy (--type file
// --status-file FILE): the device and the agent can act on the same file
// and agree.
//
// Importing the package registers the driver "fake" (standing in for the
// agent fence_dummy) in fence's default registry. An address fake://NAME
// opens a named device shared by the whole process (see Named); no address
// opens a new device.
package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ctxsleep"
)

// Options configure a Device. The zero value gives eight plugs, "1" to "8",
// all on, switching at once.
type Options struct {
	// Plugs are the device's plug IDs, in the order List reports them.
	// Default "1" to "8". An empty ID is allowed (a BMC's single plug).
	// Ignored in StateFile mode.
	Plugs []string
	// Names maps plug IDs to the names List reports; default "node" + ID.
	Names map[string]string
	// Initial is the state of every plug at first; default fence.StateOn.
	// Ignored in StateFile mode, where the file holds the state.
	Initial fence.State
	// SwitchDelay is how long after a request returns the plug switches; 0
	// switches before the request returns. A later request to the same plug
	// supersedes one still pending.
	SwitchDelay time.Duration
	// StateFile, when set, puts the device in StateFile mode: one plug,
	// answering to the IDs "" and "1", whose state is read from the file
	// on every Status and written to it (atomically) on every switch, in
	// the format of fence_dummy: "on" or "off" with no newline. A missing
	// file reads off, as fence_dummy reads it; anything but on or off (in
	// any case, with no white space) reads fence.StateUnknown with an error
	// wrapping fence.ErrBadState.
	StateFile string
	// SystemUUID is the identity of the machine behind every plug, as a
	// BMC reports it (fence.Identifier); empty: the device reports none.
	SystemUUID string
}

// historyMax bounds the history kept per plug.
const historyMax = 1024

// plug is one plug's record.
type plug struct {
	id      string
	name    string
	state   fence.State // in memory; unused in StateFile mode
	seq     uint64      // counts switches asked for; a pending switch runs only if still the last
	timer   *time.Timer // the pending switch, if any
	pending fence.State // its target
	history []fence.State
	boot    fence.BootDevice   // the boot device set for the next boot, if any
	boots   []fence.BootDevice // what each boot (a switch from off to on) booted from
}

// Device is an in-memory fence device. Create it with New; it is safe for
// concurrent use.
type Device struct {
	file  string
	delay time.Duration
	name  string // the shared name, if any; see Named
	uuid  string // Options.SystemUUID

	mu     sync.Mutex
	plugs  []*plug
	byID   map[string]*plug
	faults []*injected
	calls  [numOps]int
}

// New returns a device configured by o. It panics when o lists a plug
// twice or Initial is neither zero, on nor off.
func New(o Options) *Device {
	d := &Device{file: o.StateFile, delay: max(o.SwitchDelay, 0), byID: map[string]*plug{}, uuid: o.SystemUUID}
	ids := o.Plugs
	if d.file != "" {
		ids = []string{"1"}
	} else if ids == nil {
		ids = []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	}
	initial := o.Initial
	switch initial {
	case fence.StateUnknown:
		initial = fence.StateOn
	case fence.StateOn, fence.StateOff:
	default:
		panic(fmt.Sprintf("fake: New: invalid initial state %v", o.Initial))
	}
	for _, id := range ids {
		if _, dup := d.byID[id]; dup {
			panic(fmt.Sprintf("fake: New: plug %q listed twice", id))
		}
		name, ok := o.Names[id]
		if !ok {
			name = "node" + id
		}
		p := &plug{id: id, name: name, state: initial}
		if d.file != "" {
			p.state = fence.StateUnknown
			if st, err := readStateFile(d.file); err == nil {
				p.state = st
			}
		}
		p.history = []fence.State{p.state}
		d.plugs = append(d.plugs, p)
		d.byID[id] = p
	}
	return d
}

// canonical maps a plug ID to the ID the device keeps it under: in
// StateFile mode "" is "1".
func (d *Device) canonical(id string) string {
	if d.file != "" && id == "" {
		return "1"
	}
	return id
}

// Plugs returns the device's plug IDs in order.
func (d *Device) Plugs() []string {
	out := make([]string, len(d.plugs))
	for i, p := range d.plugs {
		out[i] = p.id
	}
	return out
}

// StateFile returns the file that holds the state in StateFile mode, or "".
func (d *Device) StateFile() string { return d.file }

// Calls returns how many calls of op the device received, whatever their
// outcome; Calls(OpAny) counts every call.
func (d *Device) Calls(op Op) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if op == OpAny {
		n := 0
		for _, c := range d.calls {
			n += c
		}
		return n
	}
	if op >= numOps {
		return 0
	}
	return d.calls[op]
}

// ResetCalls sets every count of Calls back to zero.
func (d *Device) ResetCalls() {
	d.mu.Lock()
	d.calls = [numOps]int{}
	d.mu.Unlock()
}

// Truth returns the plug's real state, bypassing faults; fence.StateUnknown
// for a plug the device does not have, and in StateFile mode for a file that
// cannot be read or holds neither on nor off.
func (d *Device) Truth(id string) fence.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.byID[d.canonical(id)]
	if !ok {
		return fence.StateUnknown
	}
	st, _ := d.read(p)
	return st
}

// SetTruth switches the plug to s at once, bypassing faults and cancelling
// any pending switch of the plug. It is not counted in Calls. It panics when
// the device has no such plug, when s is neither on nor off, or when the
// state file cannot be written.
func (d *Device) SetTruth(id string, s fence.State) {
	if !s.Known() {
		panic(fmt.Sprintf("fake: SetTruth: invalid state %v", s))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.byID[d.canonical(id)]
	if !ok {
		panic(fmt.Sprintf("fake: SetTruth: unknown plug %q", id))
	}
	if err := d.schedule(p, s, 0); err != nil {
		panic("fake: SetTruth: " + err.Error())
	}
}

// History returns the states the plug took, in order: its state when the
// device was created, then every switch that changed it (the last 1024).
// In StateFile mode, changes made to the file by others are not seen.
// It returns nil for a plug the device does not have.
func (d *Device) History(id string) []fence.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.byID[d.canonical(id)]
	if !ok {
		return nil
	}
	return slices.Clone(p.history)
}

// read returns the plug's true state. d.mu must be held.
func (d *Device) read(p *plug) (fence.State, error) {
	if d.file != "" {
		return readStateFile(d.file)
	}
	return p.state, nil
}

// apply switches the plug now. d.mu must be held.
func (d *Device) apply(p *plug, s fence.State) error {
	old, _ := d.read(p)
	if d.file != "" {
		if err := writeStateFile(d.file, s); err != nil {
			return err
		}
	} else {
		p.state = s
	}
	if old == fence.StateOff && s == fence.StateOn {
		b := p.boot
		if b == "" {
			b = fence.BootDisk
		}
		p.boots = append(p.boots, b)
		p.boot = ""
	}
	if old != s || len(p.history) == 0 {
		p.history = append(p.history, s)
		if len(p.history) > historyMax {
			p.history = slices.Delete(p.history, 0, len(p.history)-historyMax)
		}
	}
	return nil
}

// schedule switches the plug to s after the given delay (at once when 0),
// superseding any pending switch. d.mu must be held. The error is apply's,
// and only for an immediate switch.
func (d *Device) schedule(p *plug, s fence.State, after time.Duration) error {
	p.seq++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if after <= 0 {
		return d.apply(p, s)
	}
	seq := p.seq
	p.pending = s
	p.timer = time.AfterFunc(after, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if p.seq != seq {
			return // superseded
		}
		p.timer = nil
		// A failed write is lost, as a device that accepted a request and
		// then failed to carry it out: the state simply does not change.
		_ = d.apply(p, s)
	})
	return nil
}

// flush carries out every pending switch now. d.mu must be held.
func (d *Device) flush() {
	for _, p := range d.plugs {
		if p.timer != nil {
			p.timer.Stop()
			p.timer = nil
			p.seq++
			_ = d.apply(p, p.pending)
		}
	}
}

// Pending reports whether a switch of the plug is still to come (see
// Options.SwitchDelay).
func (d *Device) Pending(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.byID[d.canonical(id)]
	return ok && p.timer != nil
}

// enter starts a call: it counts it, checks ctx, finds its faults, sleeps
// their delay, and applies the faults that end the call (Down, Fail, Hang,
// and Unknown and BadState for the calls they fail). It then checks the
// plug (plugged calls only). The plug it returns is nil for calls without
// one.
func (d *Device) enter(ctx context.Context, op Op, id string, plugged bool) (*plug, effect, error) {
	id = d.canonical(id)
	d.mu.Lock()
	d.calls[op]++
	if err := ctx.Err(); err != nil {
		d.mu.Unlock()
		return nil, effect{}, ctxErr(op, err)
	}
	e := d.match(op, id, plugged)
	d.mu.Unlock()

	if e.delay > 0 {
		if err := ctxsleep.Sleep(ctx, e.delay); err != nil {
			return nil, e, ctxErr(op, err)
		}
	}
	if e.kind == Hang {
		<-ctx.Done()
		err := fmt.Errorf("fake: %v: no answer: %w", op, ctx.Err())
		if op.acts() {
			err = fence.OutcomeUnknown(err)
		}
		return nil, e, err
	}
	if err := e.failure(op, id); err != nil {
		return nil, e, err
	}
	if !plugged {
		return nil, e, nil
	}
	p, ok := d.byID[id] // byID is never written after New
	if !ok {
		return nil, e, notDoneIfActs(op, fmt.Errorf("fake: %v: plug %q: %w", op, id, fence.ErrUnknownPlug))
	}
	return p, e, nil
}

// ctxErr is the error of a call whose context ended before it did
// anything: for a request to switch, surely not done.
func ctxErr(op Op, err error) error {
	return notDoneIfActs(op, fmt.Errorf("fake: %v: %w", op, err))
}

// notDoneIfActs marks err fence.NotDone when op asks for a switch. Errors of
// reads are left unmarked: "done" means nothing to a read.
func notDoneIfActs(op Op, err error) error {
	if op.acts() {
		return fence.NotDone(err)
	}
	return err
}

// Status reads the plug's state, as the faults let the device answer.
func (d *Device) Status(ctx context.Context, id string) (fence.State, error) {
	p, e, err := d.enter(ctx, OpStatus, id, true)
	if err != nil {
		return fence.StateUnknown, err
	}
	switch e.kind {
	case Lie:
		return e.f.State, nil
	case Flap:
		return e.flap, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st, err := d.read(p)
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("fake: status: %w", err)
	}
	return st, nil
}

// Set asks for the plug to be switched to s (fence.StateOn or
// fence.StateOff); it switches Options.SwitchDelay after Set returns.
func (d *Device) Set(ctx context.Context, id string, s fence.State) error {
	p, e, err := d.enter(ctx, OpSet, id, true)
	if err != nil {
		return err
	}
	if !s.Known() {
		return fence.NotDone(fmt.Errorf("fake: set: plug %q: cannot switch to %v (want on or off)", id, s))
	}
	return d.act(OpSet, p, e, func() error { return d.schedule(p, s, d.delay) })
}

// act carries out an acting call under its faults. switchFn is called with
// d.mu held.
func (d *Device) act(op Op, p *plug, e effect, switchFn func() error) error {
	switch e.kind {
	case Ignore:
		return nil
	case Unknown:
		if e.f.Acted {
			d.mu.Lock()
			_ = switchFn()
			d.mu.Unlock()
		}
		return e.unknownErr(op)
	}
	d.mu.Lock()
	err := switchFn()
	d.mu.Unlock()
	if err != nil {
		// The state file was not replaced: the switch did not happen.
		return fence.NotDone(fmt.Errorf("fake: %v: plug %q: %w", op, p.id, err))
	}
	return nil
}

// Cycle switches the plug off at once and on again half of
// Options.SwitchDelay later (at once when there is no delay), whatever its
// state before.
func (d *Device) Cycle(ctx context.Context, id string) error {
	p, e, err := d.enter(ctx, OpCycle, id, true)
	if err != nil {
		return err
	}
	return d.act(OpCycle, p, e, func() error {
		if err := d.schedule(p, fence.StateOff, 0); err != nil {
			return err
		}
		return d.schedule(p, fence.StateOn, d.delay/2)
	})
}

// SetBootDevice sets what the plug's machine boots from at its next boot
// (its next switch from off to on), as a BMC's boot override: the boot
// after it is from the disk again. Faults of OpBoot apply.
func (d *Device) SetBootDevice(ctx context.Context, id string, b fence.BootDevice) error {
	if _, err := fence.ParseBootDevice(string(b)); err != nil {
		return fence.NotDone(fmt.Errorf("fake: boot: %w: %w", fence.ErrUnsupported, err))
	}
	p, e, err := d.enter(ctx, OpBoot, id, true)
	if err != nil {
		return err
	}
	return d.act(OpBoot, p, e, func() error { p.boot = b; return nil })
}

// BootDevice returns the boot device set for the plug's next boot, "" when
// none is.
func (d *Device) BootDevice(id string) fence.BootDevice {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.byID[d.canonical(id)]; ok {
		return p.boot
	}
	return ""
}

// Boots returns what each boot of the plug's machine (each switch from
// off to on) booted from: the boot device set for it, else disk.
func (d *Device) Boots(id string) []fence.BootDevice {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.byID[d.canonical(id)]; ok {
		return slices.Clone(p.boots)
	}
	return nil
}

// SoftOff asks for a graceful shutdown: the plug switches off as with
// Set(ctx, id, fence.StateOff).
func (d *Device) SoftOff(ctx context.Context, id string) error {
	p, e, err := d.enter(ctx, OpSoftOff, id, true)
	if err != nil {
		return err
	}
	return d.act(OpSoftOff, p, e, func() error { return d.schedule(p, fence.StateOff, d.delay) })
}

// List returns the plugs with their names and states, as the faults let the
// device answer. In StateFile mode the single plug is listed as "1", with
// fence.StateUnknown when the file holds neither on nor off.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	_, e, err := d.enter(ctx, OpList, "", false)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]fence.Plug, 0, len(d.plugs))
	for _, p := range d.plugs {
		st, err := d.read(p)
		if err != nil {
			st = fence.StateUnknown
		}
		switch e.kind {
		case Lie:
			st = e.f.State
		case Flap:
			st = e.flap
		case BadState:
			st = fence.StateUnknown
		}
		out = append(out, fence.Plug{ID: p.id, Name: p.name, State: st})
	}
	return out, nil
}

// Monitor checks the device's health: nil unless a fault says otherwise, or
// in StateFile mode the file cannot be read or holds neither on nor off.
func (d *Device) Monitor(ctx context.Context) error {
	if _, _, err := d.enter(ctx, OpMonitor, "", false); err != nil {
		return err
	}
	if d.file == "" {
		return nil
	}
	if _, err := readStateFile(d.file); err != nil {
		return fmt.Errorf("fake: monitor: %w", err)
	}
	return nil
}

// Close counts the call and carries out every pending switch at once, so
// that no timer outlives the device. The device stays usable. Close on a
// named device (see Named) only counts the call: the device lives on for
// the others who share it, until Forget.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[OpClose]++
	if d.name == "" {
		d.flush()
	}
	return nil
}

// String describes the device, for logs.
func (d *Device) String() string {
	switch {
	case d.name != "":
		return "fake://" + d.name
	case d.file != "":
		return "fake(state file " + strconv.Quote(d.file) + ")"
	}
	return fmt.Sprintf("fake(%d plugs)", len(d.plugs))
}

// Identity returns Options.SystemUUID, or an error wrapping
// fence.ErrNoIdentity when it is empty (fence.Identifier).
func (d *Device) Identity(ctx context.Context, _ string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if d.uuid == "" {
		return "", fence.ErrNoIdentity
	}
	return d.uuid, nil
}
