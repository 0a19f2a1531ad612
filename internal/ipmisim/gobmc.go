package ipmisim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/clock"
	"github.com/bougou/go-ipmi/pkg/hal"
	"github.com/bougou/go-ipmi/pkg/hal/mock"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/server"
	"github.com/bougou/go-ipmi/pkg/transport/udp"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
)

// GoBMCOptions configure an in-process reference BMC. The zero value gives
// user DefaultUser with password DefaultPassword and administrator
// privilege, powered on, offering go-ipmi's default cipher suites (3 and
// 17) and IPMI v1.5 sessions, answering at once.
type GoBMCOptions struct {
	User, Password string
	// UserPrivilege is the most the user may have: one of
	// bmc.PrivilegeLevelUser, ...Operator, ...Administrator (the default).
	UserPrivilege bmc.PrivilegeLevel
	// Initial is the power state at start; default on.
	Initial fence.State
	// CipherSuites are the RMCP+ cipher suites offered; default go-ipmi's.
	CipherSuites []types.CipherSuiteID
	// DisableV15 refuses IPMI v1.5 ("lan") sessions.
	DisableV15 bool
	// CycleOffTime is how long a power cycle keeps the chassis off before
	// powering it on again; 0 powers it on again before the reply.
	CycleOffTime time.Duration
	// IgnoreSoftOff models an operating system that ignores the ACPI
	// request of a soft shutdown: the command is accepted, the power stays.
	IgnoreSoftOff bool
	// ReplyDelay delays every reply, as a slower BMC or a network would.
	ReplyDelay time.Duration
	// SystemGUID is what Get System GUID answers, the machine's identity,
	// as the sixteen bytes go on the wire; the zero value: the command is
	// refused (completion code C1h, invalid command), as on BMCs that lack
	// it.
	SystemGUID [16]byte
}

// Fault is a misbehaviour a GoBMC can be told to show (SetFault).
type Fault int32

// The faults of a GoBMC.
const (
	// FaultNone: the BMC behaves.
	FaultNone Fault = iota
	// FaultStuck: power commands are accepted, and the power never changes.
	FaultStuck
	// FaultRefuse: power commands are refused with completion code C0h
	// (node busy); the power does not change.
	FaultRefuse
	// FaultMalformed: Get Chassis Status and Get Device ID answer with a
	// completion code of success and a body too short to be parsed.
	FaultMalformed
	// FaultSilent: the BMC drops every datagram it receives, as an
	// unreachable one would.
	FaultSilent
	// FaultGarbage: every reply is replaced by bytes that are not RMCP.
	FaultGarbage
	// FaultRefuseCycleWhenOff: a power cycle of a chassis that is off is
	// refused with completion code D5h (not supported in present state),
	// as the IPMI specification recommends; all else behaves.
	FaultRefuseCycleWhenOff
)

// GoBMC is go-ipmi's reference BMC served in the test process on
// Host:Port. Its chassis is a hardware model of this package: its power
// state is read and set by Truth and SetTruth, a power cycle turns it off
// and on again, a soft shutdown turns it off, a hard reset leaves it on.
type GoBMC struct {
	Port           int
	User, Password string

	opts    GoBMCOptions
	chassis *powerChassis
	hal     hal.HAL

	fault   atomic.Int32
	packets atomic.Int64

	mu       sync.Mutex
	srv      *server.Server
	served   chan struct{}
	commands map[string]int
	closed   bool
}

// StartGoBMC starts an in-process reference BMC on a free UDP port of
// 127.0.0.1 and stops it when t ends.
func StartGoBMC(t testing.TB, o GoBMCOptions) *GoBMC {
	t.Helper()
	g, err := NewGoBMC(o)
	if err != nil {
		t.Fatalf("ipmisim: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// NewGoBMC starts an in-process reference BMC on a free UDP port of
// 127.0.0.1; Close stops it.
func NewGoBMC(o GoBMCOptions) (*GoBMC, error) {
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Password == "" {
		o.Password = DefaultPassword
	}
	if o.UserPrivilege == 0 {
		o.UserPrivilege = bmc.PrivilegeLevelAdministrator
	}
	if o.Initial == fence.StateUnknown {
		o.Initial = fence.StateOn
	}
	g := &GoBMC{User: o.User, Password: o.Password, opts: o, commands: map[string]int{}}
	g.chassis = &powerChassis{Chassis: &mock.Chassis{}, g: g, on: o.Initial == fence.StateOn}
	g.hal = &powerHAL{HAL: mock.New(), chassis: g.chassis}
	if err := g.serve(net.JoinHostPort(Host, "0")); err != nil {
		return nil, err
	}
	return g, nil
}

// serve starts a server with a fresh BMC state (no sessions) on addr.
func (g *GoBMC) serve(addr string) error {
	b := bmc.New(bmc.DeviceInfo{
		DeviceID: 32, DeviceRevision: 1, FirmwareMajor: 1, IPMIVersion: 0x20,
		ManufacturerID: 0x000157, ProductID: 0x0001, AdditionalDeviceSupport: 0x39,
	}, [16]byte{'f', 'e', 'n', 'c', 'e', 'k', 'i', 't'}, g.hal, bmc.WithClock(clock.Real))
	if len(g.opts.CipherSuites) > 0 {
		b.SetCipherSuites(g.opts.CipherSuites)
	}
	if g.opts.DisableV15 {
		bmc.WithV15Disabled()(b)
	}
	u, err := b.Users.Add(2, g.opts.User)
	if err != nil {
		return fmt.Errorf("add user: %w", err)
	}
	g.mu.Lock()
	password := g.opts.Password
	g.mu.Unlock()
	u.SetPassword([]byte(password))
	u.Enabled = true
	u.ChannelAccess[1] = bmc.UserChannelAccess{MaxPrivilege: g.opts.UserPrivilege, Enabled: true}

	conn, err := udp.Listen(addr, udp.WithReadTimeout(time.Second))
	if err != nil {
		return err
	}
	srv := server.NewServer(b, &countingConn{Conn: conn, g: g}, server.WithHandlerRegistry(g.registry()))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(context.Background())
	}()
	g.mu.Lock()
	g.Port = conn.LocalAddr().(*net.UDPAddr).Port
	g.srv, g.served = srv, served
	g.mu.Unlock()
	return nil
}

// registry is go-ipmi's standard command set, counted, with Get Chassis
// Status and Get Device ID answering malformed bodies under FaultMalformed.
func (g *GoBMC) registry() *handlers.Registry {
	std := handlers.NewRegistry()
	handlers.RegisterAllHandlers(std)
	r := handlers.NewRegistry()
	r.Use(func(h handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, hctx *handlers.HandlerContext, data []byte) ([]byte, types.CompletionCode, error) {
			name := hctx.Command.Name
			if name == "" {
				name = fmt.Sprintf("netfn %#x cmd %#x", uint8(hctx.Command.NetFn), hctx.Command.ID)
			}
			g.mu.Lock()
			g.commands[name]++
			g.mu.Unlock()
			return h.Handle(ctx, hctx, data)
		})
	})
	handlers.RegisterAllHandlers(r)
	r.RegisterFunc(types.CommandGetSystemGUID, func(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
		if g.opts.SystemGUID == [16]byte{} {
			return nil, types.CodeInvalidCommand, nil
		}
		return g.opts.SystemGUID[:], types.CodeOK, nil
	})
	for _, c := range []types.Command{types.CommandGetChassisStatus, types.CommandGetDeviceID} {
		r.RegisterFunc(c, func(ctx context.Context, hctx *handlers.HandlerContext, data []byte) ([]byte, types.CompletionCode, error) {
			if g.Fault() == FaultMalformed {
				return []byte{0x01}, types.CodeOK, nil
			}
			return std.Dispatch(ctx, hctx, uint8(c.NetFn), c.ID, data)
		})
	}
	return r
}

// Addr returns the BMC's address as host:port.
func (g *GoBMC) Addr() string { return net.JoinHostPort(Host, fmt.Sprint(g.Port)) }

// URL returns the BMC's address as an ipmi:// URL.
func (g *GoBMC) URL() string { return "ipmi://" + g.Addr() }

// Truth returns the chassis power state.
func (g *GoBMC) Truth() fence.State {
	if g.chassis.powered() {
		return fence.StateOn
	}
	return fence.StateOff
}

// SetTruth sets the chassis power state, cancelling a power cycle under way.
func (g *GoBMC) SetTruth(s fence.State) { g.chassis.set(s == fence.StateOn) }

// PowerLog returns the changes of the chassis power since the start, oldest
// first (SetTruth's included).
func (g *GoBMC) PowerLog() []PowerChange {
	g.chassis.mu.Lock()
	defer g.chassis.mu.Unlock()
	return slices.Clone(g.chassis.log)
}

// OnPowerChange calls f, from the goroutine that switched the power, with
// every later change of the chassis power; f must not call the GoBMC. A
// test uses it to tie a simulated machine to its power (a kwok node that
// stops when its power goes, and starts again when it comes back).
func (g *GoBMC) OnPowerChange(f func(PowerChange)) {
	g.chassis.mu.Lock()
	defer g.chassis.mu.Unlock()
	g.chassis.watch = f
}

// SetFault makes the BMC show fault f from now on; FaultNone ends it.
func (g *GoBMC) SetFault(f Fault) { g.fault.Store(int32(f)) }

// Fault returns the fault the BMC shows.
func (g *GoBMC) Fault() Fault { return Fault(g.fault.Load()) }

// Packets returns how many datagrams the BMC received: one per round trip
// of a client that gets its replies.
func (g *GoBMC) Packets() int64 { return g.packets.Load() }

// Commands returns how many times each IPMI command was dispatched, by the
// command's name ("Get Chassis Status", "Chassis Control", ...). Session
// set-up messages (Open Session, RAKP) are not commands and are not
// counted here; Packets counts them.
func (g *GoBMC) Commands() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.commands))
	for k, v := range g.commands {
		out[k] = v
	}
	return out
}

// ResetCounts zeroes Packets and Commands.
func (g *GoBMC) ResetCounts() {
	g.packets.Store(0)
	g.mu.Lock()
	clear(g.commands)
	g.mu.Unlock()
}

// PowerCycles counts the power cycles the chassis carried out (a control
// refused or ignored under a fault is not counted, nor are those below).
func (g *GoBMC) PowerCycles() int { return g.chassis.count(&g.chassis.cycles) }

// HardResets counts the hard resets the chassis received.
func (g *GoBMC) HardResets() int { return g.chassis.count(&g.chassis.resets) }

// SoftOffs counts the soft shutdowns the chassis received.
func (g *GoBMC) SoftOffs() int { return g.chassis.count(&g.chassis.softs) }

// Restart drops every session, as a BMC that reboots does: the server
// stops and a new one, with a fresh BMC state and the same chassis,
// listens on the same port. Clients whose session was open get no answer.
func (g *GoBMC) Restart() error {
	g.mu.Lock()
	srv, served, closed := g.srv, g.served, g.closed
	g.mu.Unlock()
	if closed {
		return errors.New("ipmisim: restart of a closed BMC")
	}
	srv.Close()
	<-served
	return g.serve(g.Addr())
}

// SetPassword changes the user's password, as an administrator does on
// the BMC: it restarts with the new one (its sessions dropped), on the
// same port.
func (g *GoBMC) SetPassword(p string) error {
	g.mu.Lock()
	g.opts.Password, g.Password = p, p
	g.mu.Unlock()
	return g.Restart()
}

// Close stops the BMC. It is safe to call more than once.
func (g *GoBMC) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	srv, served := g.srv, g.served
	g.mu.Unlock()
	srv.Close()
	<-served
	g.chassis.stop()
}

// countingConn counts the datagrams in, and applies the faults that act on
// datagrams and the reply delay.
type countingConn struct {
	*udp.Conn
	g *GoBMC
}

// ReadFrom returns the next datagram, counted; under FaultSilent it drops
// them all.
func (c *countingConn) ReadFrom(buf []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.Conn.ReadFrom(buf)
		if err != nil {
			return n, addr, err
		}
		if c.g.Fault() == FaultSilent {
			continue
		}
		c.g.packets.Add(1)
		return n, addr, nil
	}
}

// WriteTo sends a reply after ReplyDelay; under FaultGarbage, junk instead.
func (c *countingConn) WriteTo(data []byte, addr net.Addr) (int, error) {
	if d := c.g.opts.ReplyDelay; d > 0 {
		time.Sleep(d)
	}
	if c.g.Fault() == FaultGarbage {
		junk := make([]byte, len(data))
		for i := range junk {
			junk[i] = 0x5a
		}
		return c.Conn.WriteTo(junk, addr)
	}
	return c.Conn.WriteTo(data, addr)
}

// powerHAL is go-ipmi's in-memory HAL with this package's chassis.
type powerHAL struct {
	*mock.HAL
	chassis *powerChassis
}

// Chassis returns the power model.
func (h *powerHAL) Chassis() hal.ChassisHAL { return h.chassis }

// powerChassis models a server's power: it implements the power methods of
// hal.ChassisHAL and takes the others (identify, boot flags) from go-ipmi's
// mock.
type powerChassis struct {
	*mock.Chassis
	g *GoBMC

	mu                    sync.Mutex
	on                    bool
	timer                 *time.Timer // a power cycle's power on, pending
	cycles, resets, softs int
	stopped               bool
	log                   []PowerChange
	watch                 func(PowerChange) // called with mu held
}

// PowerChange is one change of a GoBMC's chassis power, as the BMC's own
// event log would record it.
type PowerChange struct {
	At time.Time
	On bool
}

func (c *powerChassis) powered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

func (c *powerChassis) count(n *int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *n
}

// set switches the power, cancelling a pending power on.
func (c *powerChassis) set(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(on)
}

func (c *powerChassis) setLocked(on bool) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.switchLocked(on)
}

// switchLocked sets the power and logs a change.
func (c *powerChassis) switchLocked(on bool) {
	if c.on == on {
		return
	}
	c.on = on
	ch := PowerChange{At: time.Now(), On: on}
	c.log = append(c.log, ch)
	if c.watch != nil {
		c.watch(ch)
	}
}

func (c *powerChassis) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// refuse returns the error a fault makes of a power command, and whether
// the command must be accepted without acting.
func (c *powerChassis) refuse() (error, bool) {
	switch c.g.Fault() {
	case FaultRefuse:
		return types.CodeNodeBusy, true
	case FaultStuck:
		return nil, true
	}
	return nil, false
}

// PowerState reports the power state (Get Chassis Status).
func (c *powerChassis) PowerState(context.Context) (bool, error) { return c.powered(), nil }

// SetPower powers up or down (Chassis Control 1 and 0).
func (c *powerChassis) SetPower(_ context.Context, on bool) error {
	if err, skip := c.refuse(); skip {
		return err
	}
	c.set(on)
	return nil
}

// PowerCycle turns the power off, then on again after CycleOffTime
// (Chassis Control 2). Like ipmi_sim, it powers on a chassis that is off.
func (c *powerChassis) PowerCycle(context.Context) error {
	if err, skip := c.refuse(); skip {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on && c.g.Fault() == FaultRefuseCycleWhenOff {
		return types.CodeNotSupported
	}
	c.cycles++
	d := c.g.opts.CycleOffTime
	if d <= 0 {
		c.setLocked(true)
		return nil
	}
	c.setLocked(false)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.timer == t && !c.stopped {
			c.timer = nil
			c.switchLocked(true)
		}
	})
	c.timer = t
	return nil
}

// ColdReset is a hard reset (Chassis Control 3): the power stays as it is.
func (c *powerChassis) ColdReset(context.Context) error {
	if err, skip := c.refuse(); skip {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resets++
	return nil
}

// WarmReset is the reference BMC's soft shutdown (Chassis Control 5): an
// ACPI request to the operating system, which powers off unless
// IgnoreSoftOff is set.
func (c *powerChassis) WarmReset(context.Context) error {
	if err, skip := c.refuse(); skip {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.softs++
	if !c.g.opts.IgnoreSoftOff {
		c.setLocked(false)
	}
	return nil
}

var _ hal.ChassisHAL = (*powerChassis)(nil)
