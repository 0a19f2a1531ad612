package snmppdu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
)

// Device is one PDU reached over SNMP: a fence.Device whose plugs are its
// outlets, by number or by name. It also implements fence.Cycler,
// fence.Lister, fence.Monitor and io.Closer. It is safe for concurrent
// use: calls take turns on its one SNMP session (one UDP socket).
type Device struct {
	driver string
	cfg    Config
	set    settings
	models []Model
	addr   string

	turn     chan struct{} // a semaphore of one: holds the session
	closed   atomic.Bool
	life     context.Context // ended by Close, which ends the calls in progress
	kill     context.CancelFunc
	requests atomic.Int64

	// With the turn held:
	g        *gosnmp.GoSNMP
	conn     *recConn
	engineID string // the SNMPv3 engine's, once discovered
	model    *Model
	sysOID   string           // sysObjectID.0 as first read
	names    map[string]int   // outlet names to numbers; nil until walked
	dups     map[string][]int // names that several outlets have
}

// New returns a device for the PDU c describes, of one of models, for the
// driver named driver ("apc", "eaton"). It does not touch the network: the
// model is detected by the first call. Errors are *fence.ParamError values.
func New(driver string, models []Model, c Config) (*Device, error) {
	s, err := c.check(models)
	if err != nil {
		return nil, err
	}
	d := &Device{
		driver: driver, cfg: c, set: s, models: models,
		addr: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)),
		turn: make(chan struct{}, 1),
	}
	d.life, d.kill = context.WithCancel(context.Background())
	// Insecure settings are said once per device.
	if s.version != gosnmp.Version3 {
		msg := driver + ": SNMPv" + c.Version + ": the community crosses the network in clear and authenticates nothing; use SNMPv3 with authPriv where the PDU has it"
		if c.Community.Reveal() == DefaultCommunity {
			msg = driver + ": SNMPv" + c.Version + " with the default community \"private\": anyone who reaches the PDU can switch its outlets; set a community of your own, or use SNMPv3 with authPriv"
		}
		c.Logger.Warn(msg, "pdu", d.addr)
	}
	return d, nil
}

// String returns the device's address as a URL: apc://host:port.
func (d *Device) String() string { return d.driver + "://" + d.addr }

// Config returns the device's configuration, defaults filled in. It holds
// the credentials: never print it whole.
func (d *Device) Config() Config { return d.cfg }

// Requests returns how many SNMP requests (datagrams) the device has sent.
func (d *Device) Requests() int64 { return d.requests.Load() }

// acquire takes the turn, or fails when ctx ends first or the device is
// closed.
func (d *Device) acquire(ctx context.Context, object string) error {
	fail := func(err error) error {
		return &Error{Driver: d.driver, Addr: d.addr, Object: object, Err: fence.NotDone(err)}
	}
	if d.closed.Load() {
		return fail(ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("%w before the request was sent", err))
	}
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return fail(fmt.Errorf("%w while waiting for the device's session", ctx.Err()))
	}
	if d.closed.Load() {
		d.release()
		return fail(ErrClosed)
	}
	return nil
}

func (d *Device) release() { <-d.turn }

// failf is an error of the device that no request carried.
func (d *Device) failf(object string, err error) error {
	return &Error{Driver: d.driver, Addr: d.addr, Object: object, Err: err}
}

// ensureModel returns the device's model: the one configured, or the one
// its sysObjectID.0 selects, read once. The turn must be held.
func (d *Device) ensureModel(ctx context.Context) (*Model, error) {
	if d.model != nil {
		return d.model, nil
	}
	if d.set.model != nil {
		d.model = d.set.model
		return d.model, nil
	}
	m, oid, err := d.detect(ctx)
	if err != nil {
		return nil, err
	}
	d.model, d.sysOID = m, oid
	d.cfg.Logger.Debug("snmp: PDU model detected", "device", d.String(), "model", m.Name, "sysObjectID", oid)
	return m, nil
}

// detect reads sysObjectID.0 and finds its model.
func (d *Device) detect(ctx context.Context) (*Model, string, error) {
	vars, err := d.get(ctx, "sysObjectID", sysObjectIDOID, []string{sysObjectIDOID})
	if err != nil {
		return nil, "", err
	}
	oid, err := oidValue(vars[0])
	if err != nil {
		return nil, "", d.fail(request{op: "GET", object: "sysObjectID", oid: sysObjectIDOID}, fence.NotDone(fmt.Errorf("%w: %w", ErrUnknownModel, err)))
	}
	m, ok := Detect(d.models, oid)
	if !ok {
		if what, ok := unsupported[oid]; ok {
			return nil, oid, d.fail(request{op: "GET", object: "sysObjectID", oid: sysObjectIDOID}, fence.NotDone(fmt.Errorf(
				"%w: sysObjectID %s is %s, which this driver does not support", ErrUnknownModel, oid, what)))
		}
		var known []string
		for i := range d.models {
			known = append(known, d.models[i].ID+" "+strings.Join(d.models[i].SysObjectIDs, " "))
		}
		return nil, oid, d.fail(request{op: "GET", object: "sysObjectID", oid: sysObjectIDOID}, fence.NotDone(fmt.Errorf(
			"%w: sysObjectID %s is none of the %s driver's models (%s); the parameter pdu_model chooses a model's table",
			ErrUnknownModel, oid, d.driver, strings.Join(known, "; "))))
	}
	return m, oid, nil
}

// forget drops what the device learnt of the PDU, so that the next call
// detects it afresh. The turn must be held.
func (d *Device) forget() {
	d.model, d.sysOID, d.names, d.dups = nil, "", nil, nil
}

// checkSysOID compares a sysObjectID.0 read along with a state with the
// one the model was detected from. The turn must be held.
func (d *Device) checkSysOID(r request, v gosnmp.SnmpPDU) error {
	oid, err := oidValue(v)
	if err != nil {
		return d.fail(r, fence.NotDone(fmt.Errorf("%w: sysObjectID: %w", ErrMalformed, err)))
	}
	if d.sysOID == "" {
		d.sysOID = oid
		return nil
	}
	if oid != d.sysOID {
		was := d.sysOID
		d.forget()
		return d.fail(r, fence.NotDone(fmt.Errorf("%w from %s to %s: another device answers at this address; the next call detects it afresh", ErrDeviceChanged, was, oid)))
	}
	return nil
}

// resolve turns a plug into an outlet number: a number as it is, a name
// through the outlet names (walked once, and again when a name is not
// found). The turn must be held.
func (d *Device) resolve(ctx context.Context, m *Model, plug string) (n int, byName bool, err error) {
	if isNumber(plug) {
		n, ok := ParseOutlet(plug)
		if !ok {
			return 0, false, d.failf("outlet "+strconv.Quote(plug), fence.NotDone(fmt.Errorf("%w: outlet numbers go from 1 to %d", fence.ErrUnknownPlug, MaxOutlet)))
		}
		return n, false, nil
	}
	object := "outlet named " + strconv.Quote(plug)
	if strings.TrimSpace(plug) == "" {
		return 0, false, d.failf("outlet", fence.NotDone(fmt.Errorf("%w: a PDU needs a plug: an outlet number or name", fence.ErrUnknownPlug)))
	}
	if m.Names.IsZero() {
		return 0, false, d.failf(object, fence.NotDone(fmt.Errorf("%w: the %s has no outlet names: give the outlet's number", fence.ErrUnknownPlug, m.Name)))
	}
	for walked := false; ; walked = true {
		if d.names == nil || walked {
			if err := d.walkNames(ctx, m); err != nil {
				return 0, true, err
			}
		}
		if outlets, dup := d.dups[plug]; dup {
			if !walked {
				continue // the names may have changed since they were read
			}
			return 0, true, d.failf(object, fence.NotDone(fmt.Errorf("%w: outlets %s have that name: give the outlet's number", fence.ErrUnknownPlug, joinInts(outlets))))
		}
		if n, ok := d.names[plug]; ok {
			return n, true, nil
		}
		if walked {
			return 0, true, d.failf(object, fence.NotDone(fmt.Errorf("%w: no outlet has that name (%d outlets named)", fence.ErrUnknownPlug, len(d.names))))
		}
	}
}

// walkNames reads the outlet names. The turn must be held.
func (d *Device) walkNames(ctx context.Context, m *Model) error {
	cells, err := d.walk(ctx, "outlet names", []string{m.Names.Prefix})
	if err != nil {
		return err
	}
	d.learnNames(m, cells[0])
	d.cfg.Logger.Debug("snmp: outlet names read", "device", d.String(), "outlets", len(d.names))
	return nil
}

// learnNames keeps the names of a walk of m's Names column.
func (d *Device) learnNames(m *Model, cells []gosnmp.SnmpPDU) {
	byName := map[string][]int{}
	for _, c := range cells {
		n, ok := m.Names.Outlet(normOID(c.Name))
		if !ok {
			continue
		}
		name, err := stringValue(c)
		if err != nil || name == "" {
			continue
		}
		byName[name] = append(byName[name], n)
	}
	d.names, d.dups = make(map[string]int, len(byName)), map[string][]int{}
	for name, ns := range byName {
		if len(ns) > 1 {
			d.dups[name] = ns
			continue
		}
		d.names[name] = ns[0]
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// Status reads the outlet's state: one GET, of the outlet's state and of
// sysObjectID.0 (and, for an outlet given by name, of its name, to check
// that the name still belongs to it). The first call detects the model
// first. A value outside the model's mapping is fence.StateUnknown with an
// error wrapping fence.ErrBadState; a missing outlet is an error wrapping
// fence.ErrUnknownPlug.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if err := d.acquire(ctx, "outlet "+strconv.Quote(plug)); err != nil {
		return fence.StateUnknown, err
	}
	defer d.release()
	m, err := d.ensureModel(ctx)
	if err != nil {
		return fence.StateUnknown, err
	}
	for try := 0; ; try++ {
		n, byName, err := d.resolve(ctx, m, plug)
		if err != nil {
			return fence.StateUnknown, err
		}
		statusOID := m.Status.OID(n)
		oids := []string{sysObjectIDOID, statusOID}
		if byName {
			oids = append(oids, m.Names.OID(n))
		}
		object := fmt.Sprintf("outlet %d state", n)
		r := request{op: "GET", object: object, oid: statusOID}
		vars, err := d.get(ctx, object, statusOID, oids)
		if err != nil {
			if byName && try == 0 && errors.Is(err, fence.ErrUnknownPlug) {
				d.names = nil // the outlet of that name may have gone: look again
				continue
			}
			return fence.StateUnknown, err
		}
		if err := d.checkSysOID(r, vars[0]); err != nil {
			return fence.StateUnknown, err
		}
		if byName {
			if name, err := stringValue(vars[2]); err != nil || name != plug {
				if try == 0 {
					d.names = nil // renamed: look again
					continue
				}
				return fence.StateUnknown, d.fail(r, fence.NotDone(fmt.Errorf("%w: the outlet's name changed while it was read", fence.ErrUnknownPlug)))
			}
		}
		return d.state(r, m, vars[1])
	}
}

// state maps an outlet's state cell.
func (d *Device) state(r request, m *Model, v gosnmp.SnmpPDU) (fence.State, error) {
	x, err := intValue(v)
	var ns errNoSuch
	if errors.As(err, &ns) {
		return fence.StateUnknown, d.fail(r, fence.NotDone(fmt.Errorf("%w: %w", fence.ErrUnknownPlug, err)))
	}
	if err != nil {
		return fence.StateUnknown, d.fail(r, fence.NotDone(err))
	}
	st, err := m.State(x)
	if err != nil {
		return fence.StateUnknown, d.fail(r, fence.NotDone(err))
	}
	return st, nil
}

// Set switches the outlet on or off: one SET of its control, sent once
// (never again after a lost reply). For an outlet given by name, a GET of
// its name comes first, to check that the name still belongs to it. A SET
// the device refuses is fence.NotDone (fence.ErrUnknownPlug when the outlet
// does not exist); a lost reply leaves the outcome unknown.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	if !s.Known() {
		return d.failf("outlet "+strconv.Quote(plug), fence.NotDone(fmt.Errorf("cannot set state %v", s)))
	}
	return d.write(ctx, plug, "power "+s.String(), func(m *Model) (int, error) { return m.value(s), nil })
}

// Cycle power cycles the outlet with the model's native reboot command
// (the agents' --method cycle): one SET, as Set. Models without one fail
// with fence.ErrUnsupported.
func (d *Device) Cycle(ctx context.Context, plug string) error {
	return d.write(ctx, plug, "power cycle", func(m *Model) (int, error) {
		if m.Cycle == 0 {
			return 0, fmt.Errorf("%w: the %s has no native power cycle", fence.ErrUnsupported, m.Name)
		}
		return m.Cycle, nil
	})
}

// write resolves the outlet and writes value(model) to its control. Any
// failure before the SET is sent is fence.NotDone.
func (d *Device) write(ctx context.Context, plug, what string, value func(*Model) (int, error)) error {
	if err := d.acquire(ctx, "outlet "+strconv.Quote(plug)); err != nil {
		return err
	}
	defer d.release()
	m, err := d.ensureModel(ctx)
	if err != nil {
		return fence.NotDone(err)
	}
	v, err := value(m)
	if err != nil {
		return d.failf("outlet "+strconv.Quote(plug), fence.NotDone(err))
	}
	for try := 0; ; try++ {
		n, byName, err := d.resolve(ctx, m, plug)
		if err != nil {
			return fence.NotDone(err)
		}
		if byName {
			nameOID := m.Names.OID(n)
			vars, err := d.get(ctx, fmt.Sprintf("outlet %d name", n), nameOID, []string{nameOID})
			if err == nil {
				name, nerr := stringValue(vars[0])
				if nerr != nil || name != plug {
					err = d.failf(fmt.Sprintf("outlet %d name", n), fence.NotDone(fmt.Errorf("%w: the outlet's name changed", fence.ErrUnknownPlug)))
				}
			}
			if err != nil {
				if try == 0 && errors.Is(err, fence.ErrUnknownPlug) {
					d.names = nil
					continue
				}
				return fence.NotDone(err)
			}
		}
		oid := m.Control.OID(n)
		object := fmt.Sprintf("outlet %d %s", n, what)
		err = d.setInt(ctx, object, oid, v)
		var st *snmpStatus
		if errors.As(err, &st) && fence.IsNotDone(err) && missingStatus(st.status) {
			// Refused as an object that is not there, or not writable:
			// tell a missing outlet from a read-only one.
			if _, serr := d.stateOf(ctx, m, n); errors.Is(serr, fence.ErrUnknownPlug) {
				return d.fail(request{op: "SET", object: object, oid: oid}, fence.NotDone(fmt.Errorf("%w: the device refused the SET (%w), and has no state for the outlet", fence.ErrUnknownPlug, st)))
			}
		}
		return err
	}
}

// missingStatus reports whether a SET's error status may mean that the
// object does not exist.
func missingStatus(s gosnmp.SNMPError) bool {
	switch s {
	case gosnmp.NoSuchName, gosnmp.NotWritable, gosnmp.NoCreation, gosnmp.InconsistentName:
		return true
	}
	return false
}

// stateOf reads outlet n's state alone. The turn must be held.
func (d *Device) stateOf(ctx context.Context, m *Model, n int) (fence.State, error) {
	oid := m.Status.OID(n)
	object := fmt.Sprintf("outlet %d state", n)
	vars, err := d.get(ctx, object, oid, []string{oid})
	if err != nil {
		return fence.StateUnknown, err
	}
	return d.state(request{op: "GET", object: object, oid: oid}, m, vars[0])
}

// List reads the outlets with their states and names: a walk of the state
// column and the name column together (GETBULK, or GETNEXT for SNMPv1).
// Outlets whose state is outside the model's mapping are listed with
// fence.StateUnknown; outlets the model marks absent are left out. Models
// without names list each outlet under its number, as the agents do.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	if err := d.acquire(ctx, "outlet table"); err != nil {
		return nil, err
	}
	defer d.release()
	m, err := d.ensureModel(ctx)
	if err != nil {
		return nil, err
	}
	cols := []string{m.Status.Prefix}
	if !m.Names.IsZero() {
		cols = append(cols, m.Names.Prefix)
	}
	cells, err := d.walk(ctx, "outlet table", cols)
	if err != nil {
		return nil, err
	}
	states := map[int]fence.State{}
	for _, c := range cells[0] {
		n, ok := m.Status.Outlet(normOID(c.Name))
		if !ok {
			continue
		}
		st := fence.StateUnknown
		if x, err := intValue(c); err == nil {
			var serr error
			st, serr = m.State(x)
			if errors.Is(serr, fence.ErrUnknownPlug) {
				continue // an absent outlet
			}
		}
		states[n] = st
	}
	names := map[int]string{}
	if len(cols) > 1 {
		d.learnNames(m, cells[1])
		for _, c := range cells[1] {
			if n, ok := m.Names.Outlet(normOID(c.Name)); ok {
				if s, err := stringValue(c); err == nil {
					names[n] = s
				}
			}
		}
	}
	outlets := make([]int, 0, len(states))
	for n := range states {
		outlets = append(outlets, n)
	}
	slices.Sort(outlets)
	plugs := make([]fence.Plug, len(outlets))
	for i, n := range outlets {
		name, ok := names[n]
		if len(cols) == 1 && !ok {
			// A model without names: the agents list each outlet under
			// its number.
			name = strconv.Itoa(n)
		}
		plugs[i] = fence.Plug{ID: strconv.Itoa(n), Name: name, State: states[n]}
	}
	return plugs, nil
}

// Monitor checks that the PDU answers, takes the credentials, and is (still)
// of a model the driver knows: one GET of sysObjectID.0.
func (d *Device) Monitor(ctx context.Context) error {
	if err := d.acquire(ctx, "sysObjectID"); err != nil {
		return err
	}
	defer d.release()
	if d.set.model != nil {
		vars, err := d.get(ctx, "sysObjectID", sysObjectIDOID, []string{sysObjectIDOID})
		if err != nil {
			return err
		}
		return d.checkSysOID(request{op: "GET", object: "sysObjectID", oid: sysObjectIDOID}, vars[0])
	}
	m, oid, err := d.detect(ctx)
	if err != nil {
		if errors.Is(err, ErrUnknownModel) {
			d.forget()
		}
		return err
	}
	if d.model != nil && oid != d.sysOID {
		was := d.sysOID
		d.forget()
		return d.fail(request{op: "GET", object: "sysObjectID", oid: sysObjectIDOID}, fence.NotDone(fmt.Errorf("%w from %s to %s: another device answers at this address", ErrDeviceChanged, was, oid)))
	}
	d.model, d.sysOID = m, oid
	return nil
}

// Model returns the device's model, detecting it if no call has yet.
func (d *Device) Model(ctx context.Context) (Model, error) {
	if err := d.acquire(ctx, "sysObjectID"); err != nil {
		return Model{}, err
	}
	defer d.release()
	m, err := d.ensureModel(ctx)
	if err != nil {
		return Model{}, err
	}
	return *m, nil
}

// closeWait bounds how long Close waits for a call in progress to notice.
const closeWait = 2 * time.Second

// Close ends the calls in progress and closes the socket. Later calls fail
// with ErrClosed. It is safe to call more than once.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.kill()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case d.turn <- struct{}{}:
		defer d.release()
	case <-t.C:
		// A call did not let go in time; it ends at its own timeout.
		d.cfg.Logger.Debug("snmp: close: a call is still in progress", "device", d.String())
		return nil
	}
	if d.g != nil {
		err := d.g.Close()
		d.g, d.conn, d.engineID = nil, nil, ""
		return err
	}
	return nil
}

var _ interface {
	fence.Device
	fence.Cycler
	fence.Lister
	fence.Monitor
} = (*Device)(nil)

// Format prints the device as String does, whatever the verb.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }
