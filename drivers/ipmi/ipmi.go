package ipmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
)

// Defaults of Options.
const (
	// DefaultPort is IPMI's UDP port (RMCP).
	DefaultPort = 623
	// DefaultCipherSuite is the cipher suite of IPMI v2.0 sessions: 3
	// (RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128), the one every BMC has.
	DefaultCipherSuite = 3
	// DefaultTimeout is how long each request waits for its reply before
	// it is sent again (ipmitool's default for lanplus).
	DefaultTimeout = time.Second
	// DefaultRetries is how many times an unanswered request is sent again.
	DefaultRetries = 2
)

// NoRetry, as Options.Retries, sends each request once.
const NoRetry = -1

// Privilege is a session's privilege level. Chassis control needs operator
// or administrator; user may only read the state.
type Privilege string

// The privilege levels, with the names of ipmitool's -L and fence_ipmilan's
// --privlvl.
const (
	PrivilegeCallback      Privilege = "callback"
	PrivilegeUser          Privilege = "user"
	PrivilegeOperator      Privilege = "operator"
	PrivilegeAdministrator Privilege = "administrator"
)

func (p Privilege) level() (types.PrivilegeLevel, bool) {
	switch p {
	case PrivilegeCallback:
		return types.PrivilegeLevelCallback, true
	case PrivilegeUser:
		return types.PrivilegeLevelUser, true
	case PrivilegeOperator:
		return types.PrivilegeLevelOperator, true
	case PrivilegeAdministrator, "":
		return types.PrivilegeLevelAdministrator, true
	}
	return 0, false
}

// Options configure a Device. Host is required; the zero value of every
// other field gives its default.
type Options struct {
	// Host is the BMC's host name or IP address.
	Host string
	// Port is the BMC's UDP port; default DefaultPort.
	Port int
	// Username and Password are the BMC user's. An empty Username asks
	// for the BMC's anonymous (null) user.
	Username string
	Password fence.Secret
	// V15 selects IPMI v1.5 sessions (ipmitool -I lan); the default is
	// IPMI v2.0 RMCP+ (-I lanplus).
	V15 bool
	// CipherSuite is the cipher suite of IPMI v2.0 sessions, 1 to 19;
	// default DefaultCipherSuite. 17 (RAKP-HMAC-SHA256, HMAC-SHA256-128,
	// AES-CBC-128) is the strongest, where the BMC offers it. Suite 0 is
	// refused: it authenticates nothing.
	CipherSuite int
	// Privilege is the session's privilege level; default administrator.
	Privilege Privilege
	// Timeout is how long each request waits for its reply before it is
	// sent again; default DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times an unanswered request is sent again; 0
	// means DefaultRetries, NoRetry none. A request is given up after
	// Timeout × (1 + Retries), or when its context ends.
	Retries int
	// UEFI has SetBootDevice ask for an EFI boot (the boot flags' BIOS
	// boot type, as ipmitool chassis bootdev pxe options=efiboot); the
	// default is the PC-compatible (legacy) boot, as ipmitool's.
	UEFI bool
	// Logger receives debug records (sessions set up and dropped); nil
	// discards them.
	Logger *slog.Logger
}

// maxUserName is IPMI's longest user name.
const maxUserName = rmcpplus.MaxUserNameLength

// check validates o and fills in its defaults. Errors are
// *fence.ParamError values named after the driver's parameters.
func (o *Options) check() error {
	if o.Host == "" {
		return &fence.ParamError{Key: "ip", Reason: "the BMC's host is required"}
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < 1 || o.Port > 65535 {
		return &fence.ParamError{Key: "ipport", Value: strconv.Itoa(o.Port), Reason: "not a port from 1 to 65535"}
	}
	if len(o.Username) > maxUserName {
		return &fence.ParamError{Key: "username", Value: o.Username, Reason: fmt.Sprintf("longer than IPMI's %d characters", maxUserName)}
	}
	if len(o.Password.Reveal()) > 20 {
		return &fence.ParamError{Key: "password", Reason: "longer than IPMI v2.0's 20 characters"}
	}
	if o.V15 && len(o.Password.Reveal()) > 16 {
		return &fence.ParamError{Key: "password", Reason: "longer than IPMI v1.5's 16 characters"}
	}
	if o.CipherSuite == 0 {
		o.CipherSuite = DefaultCipherSuite
	}
	if _, _, _, ok := types.GetCipherSuiteAlgorithms(types.CipherSuiteID(o.CipherSuite)); !ok || o.CipherSuite < 1 {
		return &fence.ParamError{Key: "cipher", Value: strconv.Itoa(o.CipherSuite), Reason: "not a cipher suite from 1 to 19 (0, which authenticates nothing, is refused)"}
	}
	if _, ok := o.Privilege.level(); !ok {
		return &fence.ParamError{Key: "privlvl", Value: string(o.Privilege), Reason: "want administrator, operator, user or callback"}
	}
	if o.Privilege == "" {
		o.Privilege = PrivilegeAdministrator
	}
	if o.Timeout < 0 {
		return &fence.ParamError{Key: "ipmitool_timeout", Value: o.Timeout.String(), Reason: "negative"}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Device is one BMC, seen as a fence device with a single plug, "". It is
// safe for concurrent use: calls take turns on its one session. Close it
// to end the session.
type Device struct {
	o    Options
	addr string // host:port, for messages
	kind string // "lanplus" or "lan"

	turn     chan struct{} // a semaphore of one: holds the session
	closed   atomic.Bool
	sessions atomic.Int64
	life     context.Context // ended by Close, which ends the calls in progress
	kill     context.CancelFunc

	cl *client.Client // the session; only with turn held
	// dialer puts every session's UDP connection behind a guard, which
	// keeps replies that do not belong to the session from go-ipmi (see
	// guard.go). unguarded turns it off, for the tests that show why.
	dialer    *guardDialer
	unguarded bool
}

// New returns a device for the BMC o describes. It does not touch the
// network: the session is set up by the first call. Errors are
// *fence.ParamError values.
func New(o Options) (*Device, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	d := &Device{o: o, addr: net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), kind: "lanplus", turn: make(chan struct{}, 1),
		dialer: &guardDialer{password: o.Password.Reveal()}}
	d.life, d.kill = context.WithCancel(context.Background())
	if o.V15 {
		d.kind = "lan"
		// Said once per device, as every insecure setting is.
		o.Logger.Warn("ipmi: IPMI v1.5 (lanplus off): the session is neither encrypted nor strongly authenticated; use IPMI v2.0 (lanplus) where the BMC has it", "bmc", d.addr)
	}
	return d, nil
}

// String returns the device's address as a URL: ipmi://host:port, or
// ipmi+lan://host:port for IPMI v1.5.
func (d *Device) String() string {
	if d.o.V15 {
		return "ipmi+lan://" + d.addr
	}
	return "ipmi://" + d.addr
}

// Sessions returns how many sessions the device has set up so far: one for
// any number of calls, unless sessions broke.
func (d *Device) Sessions() int { return int(d.sessions.Load()) }

// The commands, as errors name them.
const (
	opSetup    = "session setup"
	opStatus   = "Get Chassis Status"
	opDeviceID = "Get Device ID"
	opGUID     = "Get System GUID"
)

func opControl(c chassis.ChassisControl) string {
	return "Chassis Control (" + controlName(c) + ")"
}

func controlName(c chassis.ChassisControl) string {
	switch c {
	case chassis.ChassisControlPowerDown:
		return "power down"
	case chassis.ChassisControlPowerUp:
		return "power up"
	case chassis.ChassisControlPowerCycle:
		return "power cycle"
	case chassis.ChassisControlHardReset:
		return "hard reset"
	case chassis.ChassisControlSoftShutdown:
		return "soft shutdown"
	}
	return "control " + strconv.Itoa(int(c))
}

// checkPlug accepts the BMC's only plug, "".
func (d *Device) checkPlug(plug string) error {
	if plug == "" {
		return nil
	}
	return d.fail("plug "+strconv.Quote(plug), fmt.Errorf("%w: a BMC has one chassis, whose plug is the empty string", fence.ErrUnknownPlug))
}

// Status reads the chassis power state (Get Chassis Status).
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if err := d.checkPlug(plug); err != nil {
		return fence.StateUnknown, err
	}
	on := false
	err := d.call(ctx, opStatus, true, func(ctx context.Context, c *client.Client) error {
		r, err := c.GetChassisStatus(ctx)
		if err == nil {
			on = r.PowerIsOn
		}
		return err
	})
	if err != nil {
		return fence.StateUnknown, err
	}
	if on {
		return fence.StateOn, nil
	}
	return fence.StateOff, nil
}

// Identity reads the system's GUID (Get System GUID), the identity of the
// machine (fence.Identifier), as the BMC sends its sixteen bytes;
// fence.SameMachine compares it with the node's in each byte order BMCs
// use. A BMC without the command (completion code C1h, C2h or D5h), or one
// that sends a GUID of all zeros, gives an error wrapping
// fence.ErrNoIdentity; any other refusal is an error, and the off is not
// done.
func (d *Device) Identity(ctx context.Context, plug string) (string, error) {
	if err := d.checkPlug(plug); err != nil {
		return "", err
	}
	var guid [16]byte
	err := d.call(ctx, opGUID, true, func(ctx context.Context, c *client.Client) error {
		r, err := c.GetSystemGUID(ctx)
		if err == nil {
			guid = r.GUID
		}
		return err
	})
	var ce *CompletionError
	switch {
	case errors.As(err, &ce) && (ce.Code == uint8(types.CodeInvalidCommand) || ce.Code == uint8(types.CodeInvalidCommandForLUN) || ce.Code == uint8(types.CodeNotSupported)):
		// The BMC does not have the command: it cannot tell. Any other
		// refusal (busy, timeout) fails the check, not done.
		return "", fmt.Errorf("%w: %w", fence.ErrNoIdentity, err)
	case err != nil:
		return "", err
	case guid == [16]byte{}:
		return "", d.fail(opGUID, fence.ErrNoIdentity)
	}
	return fence.FormatUUID(guid), nil
}

// Set powers the chassis up (fence.StateOn) or down (fence.StateOff, a
// hard power off) with Chassis Control.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	if err := d.checkPlug(plug); err != nil {
		return fence.NotDone(err)
	}
	switch s {
	case fence.StateOn:
		return d.control(ctx, chassis.ChassisControlPowerUp)
	case fence.StateOff:
		return d.control(ctx, chassis.ChassisControlPowerDown)
	}
	return fence.NotDone(d.fail("Chassis Control", fmt.Errorf("state %v is neither on nor off", s)))
}

// Cycle power-cycles the chassis (Chassis Control power cycle): off, then
// on again after the BMC's interval. A BMC that refuses to cycle a chassis
// that is off, with completion code D5h as the specification recommends,
// gets a power up instead: the off half of the cycle is already done.
func (d *Device) Cycle(ctx context.Context, plug string) error {
	if err := d.checkPlug(plug); err != nil {
		return fence.NotDone(err)
	}
	err := d.control(ctx, chassis.ChassisControlPowerCycle)
	var ce *CompletionError
	if err != nil && errors.As(err, &ce) && ce.Code == uint8(types.CodeNotSupported) {
		if st, serr := d.Status(ctx, plug); serr == nil && st == fence.StateOff {
			d.o.Logger.Debug("ipmi: power cycle refused with the chassis off: powering up", "bmc", d.addr)
			return d.control(ctx, chassis.ChassisControlPowerUp)
		}
	}
	return err
}

// SoftOff asks the operating system to shut down (Chassis Control soft
// shutdown, an ACPI request). It returns once the BMC accepted the request;
// the engine then waits for the power to go off.
func (d *Device) SoftOff(ctx context.Context, plug string) error {
	if err := d.checkPlug(plug); err != nil {
		return fence.NotDone(err)
	}
	return d.control(ctx, chassis.ChassisControlSoftShutdown)
}

// Reset hard-resets the server (Chassis Control hard reset). The power
// stays on: the server restarts at once, so a reset fences nothing, and
// the engine never uses it.
func (d *Device) Reset(ctx context.Context) error {
	return d.control(ctx, chassis.ChassisControlHardReset)
}

// Monitor checks that the BMC answers, and that the session can be set up
// (credentials, cipher suite, privilege), with Get Device ID.
func (d *Device) Monitor(ctx context.Context) error {
	return d.call(ctx, opDeviceID, true, func(ctx context.Context, c *client.Client) error {
		_, err := c.GetDeviceID(ctx)
		return err
	})
}

// control sends one Chassis Control. Its error is marked fence.NotDone when
// the BMC surely did not act, and fence.OutcomeUnknown otherwise.
func (d *Device) control(ctx context.Context, ctl chassis.ChassisControl) error {
	err := d.call(ctx, opControl(ctl), false, func(ctx context.Context, c *client.Client) error {
		// go-ipmi sends a command again when no reply came in time; a
		// Chassis Control sent twice could cycle the node twice. The
		// guard drops the second sending: the engine reads the state
		// again instead.
		if g := d.dialer.current(); g != nil && !d.unguarded {
			g.control(true)
			defer g.control(false)
		}
		_, err := c.ChassisControl(ctx, ctl)
		return err
	})
	if err == nil || fence.IsNotDone(err) {
		return err
	}
	return fence.OutcomeUnknown(err)
}

// call runs one command on the session, setting the session up first when
// there is none. A read (Status, Monitor) that fails on a session set up by
// an earlier call, in a way that breaks sessions, is run once more on a new
// session. Errors are *Error values; those known to leave the BMC
// untouched are marked fence.NotDone.
func (d *Device) call(ctx context.Context, op string, read bool, f func(context.Context, *client.Client) error) error {
	if err := ctx.Err(); err != nil {
		return fence.NotDone(d.fail(op, contextError(err)))
	}
	if d.closed.Load() {
		return fence.NotDone(d.fail(op, ErrClosed))
	}
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return fence.NotDone(d.fail(op, fmt.Errorf("waiting for the session, which another call holds: %w", contextError(ctx.Err()))))
	}
	defer func() { <-d.turn }()
	if d.closed.Load() {
		return fence.NotDone(d.fail(op, ErrClosed))
	}
	// Close ends the call.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.life, cancel)()
	for try := 0; ; try++ {
		c, reused, err := d.session(ctx)
		if err != nil {
			return err
		}
		err = f(ctx, c)
		if err == nil {
			return nil
		}
		fl := d.classify(ctx, err, false)
		if d.closed.Load() {
			fl.err = fmt.Errorf("%w while the call was under way: %w", ErrClosed, fl.err)
		}
		if fl.breaks {
			d.drop("failed " + op)
		}
		if read && reused && fl.breaks && try == 0 && ctx.Err() == nil && !d.closed.Load() {
			d.o.Logger.Debug("ipmi: session lost, setting up a new one", "bmc", d.addr, "op", op, "error", fl.err.Error())
			continue
		}
		e := d.fail(op, fl.err)
		if fl.refused {
			return fence.NotDone(e)
		}
		return e
	}
}

// session returns the device's session, set up when there is none, and
// whether it was set up by an earlier call. Errors are *Error values
// marked fence.NotDone: no command was sent.
func (d *Device) session(ctx context.Context) (*client.Client, bool, error) {
	if d.cl != nil {
		return d.cl, true, nil
	}
	start := time.Now()
	c, err := client.NewClient(d.o.Host, d.o.Port, d.o.Username, d.o.Password.Reveal())
	if err != nil {
		return nil, false, fence.NotDone(d.fail(opSetup, errors.New(fence.Scrub(err.Error(), d.o.Password))))
	}
	lvl, _ := d.o.Privilege.level()
	c.WithTimeout(d.o.Timeout).WithRetry(d.o.Retries).WithMaxPrivilegeLevel(lvl)
	if !d.unguarded {
		c.WithUDPProxy(d.dialer)
	}
	if d.o.V15 {
		c.WithInterface(client.InterfaceLan)
	} else {
		c.WithInterface(client.InterfaceLanplus).WithCipherSuiteID(types.CipherSuiteID(d.o.CipherSuite))
	}
	if err := c.Connect(ctx); err != nil {
		// A session refused its privilege level was opened: end it, lest
		// it hold one of the BMC's few session slots until it times out.
		go discard(c, strings.Contains(err.Error(), "SetSessionPrivilegeLevel"))
		fl := d.classify(ctx, err, true)
		return nil, false, fence.NotDone(d.fail(opSetup, fl.err))
	}
	d.cl = c
	d.sessions.Add(1)
	d.o.Logger.Debug("ipmi: session set up", "bmc", d.addr, "interface", d.kind, "cipher", d.o.CipherSuite,
		"privilege", string(d.o.Privilege), "duration", time.Since(start))
	return c, false, nil
}

// drop forgets the session, ending it in the background.
func (d *Device) drop(why string) {
	if d.cl == nil {
		return
	}
	c := d.cl
	d.cl = nil
	d.o.Logger.Debug("ipmi: session dropped", "bmc", d.addr, "why", why)
	go discard(c, true)
}

// Bounds of the goodbye.
const (
	// logoutTimeout bounds the Close Session request.
	logoutTimeout = time.Second
	// closeWait bounds how long Close waits for a call in progress.
	closeWait = time.Second
)

// discard releases a client: it sends Close Session when logout is set
// (waiting at most logoutTimeout) and closes its socket.
func discard(c *client.Client, logout bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
	defer cancel()
	if !logout {
		cancel() // nothing to log out of: just close the socket
	}
	err := c.Close(ctx)
	if !logout {
		return nil
	}
	return err
}

// Close ends the session (Close Session), waiting at most about a second
// for a call in progress and a second for the BMC; what is left is
// finished in the background. Calls after Close fail with ErrClosed. A
// second Close does nothing.
func (d *Device) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	d.kill()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case d.turn <- struct{}{}:
	case <-t.C:
		go func() {
			d.turn <- struct{}{}
			c := d.cl
			d.cl = nil
			<-d.turn
			if c != nil {
				discard(c, true)
			}
		}()
		return nil
	}
	c := d.cl
	d.cl = nil
	<-d.turn
	if c == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- discard(c, true) }()
	select {
	case err := <-done:
		if err != nil && errors.Is(err, context.DeadlineExceeded) {
			return d.fail("Close Session", &noReply{after: logoutTimeout, tries: 1,
				detail: "; the BMC ends the session itself when it has been idle for its timeout"})
		}
		if err != nil {
			return d.fail("Close Session", errors.New(short(flatten(fence.Scrub(err.Error(), d.o.Password)))))
		}
		return nil
	case <-time.After(logoutTimeout + 500*time.Millisecond):
		return nil
	}
}

var (
	_ fence.Device    = (*Device)(nil)
	_ fence.Cycler    = (*Device)(nil)
	_ fence.SoftOffer = (*Device)(nil)
	_ fence.Monitor   = (*Device)(nil)
)

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }
