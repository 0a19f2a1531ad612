package eaton

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmppdu"
)

// Driver is the driver this package registers in fence's default registry
// under the name "eaton", standing in for the agent fence_eaton_snmp.
// Beyond fence.CommonParams, it takes the agent's
// parameters: snmp_version (1, 2c or 3; default 1), community (default
// private), and for SNMPv3 username, password (the authentication
// passphrase), snmp_sec_level, snmp_auth_prot (default MD5),
// snmp_priv_prot (default DES) and snmp_priv_passwd; and its own:
// snmp_timeout (seconds per request, default 1), snmp_retries (default 2,
// for reads only) and pdu_model (default auto). plug is the outlet's
// number, from 1.
var Driver = fence.Driver{
	Name:        name,
	Description: "Fence agent for Eaton over SNMP, native (fence_eaton_snmp compatible)",
	Agents:      []string{"fence_eaton_snmp"},
	Params:      snmppdu.Params(snmppdu.EatonModels),
	Ignored:     snmppdu.Ignored("fence_eaton_snmp"),
	Check: func(a fence.Address, p fence.Params) error {
		_, err := OptionsFromParams(a, p)
		return err
	},
	Open: open,
}

// name is the driver's name and address scheme.
const name = "eaton"

func init() { fence.Register(Driver) }

// Model IDs, the values of Options.Model and of the parameter pdu_model.
const (
	ModelManaged  = snmppdu.ModelEatonManaged
	ModelSwitched = snmppdu.ModelEatonSwitched
)

// Sentinels of the driver, checked with errors.Is. See the package
// documentation.
var (
	// ErrNoReply means a request went unanswered for the whole timeout and
	// retries.
	ErrNoReply = snmppdu.ErrNoReply
	// ErrUnknownModel means sysObjectID.0 names no model the driver knows.
	ErrUnknownModel = snmppdu.ErrUnknownModel
	// ErrDeviceChanged means another device answers at the address than the
	// one whose model was detected.
	ErrDeviceChanged = snmppdu.ErrDeviceChanged
	// ErrRefused means the PDU answered with an SNMP error status.
	ErrRefused = snmppdu.ErrRefused
	// ErrMalformed means a reply could not be used.
	ErrMalformed = snmppdu.ErrMalformed
	// ErrClosed means the device was closed.
	ErrClosed = snmppdu.ErrClosed
)

// Error is the error of one SNMP request: see snmppdu.Error's fields
// Driver, Addr, Op, Object, OID and Err.
type Error = snmppdu.Error

// NoRetry, as Options.Retries, sends each read once.
const NoRetry = snmppdu.NoRetry

// Options configure a Device. Host is required; the zero value of every
// other field gives its default.
type Options struct {
	// Host is the PDU's host name or IP address.
	Host string
	// Port is its UDP port; default 161.
	Port int
	// Version is the SNMP version: "1", "2c" or "3"; default "1", as the
	// agent.
	Version string
	// Community is the SNMPv1 and v2c community, with write access;
	// default "private", as the agent.
	Community fence.Secret
	// Username is the SNMPv3 user.
	Username string
	// SecurityLevel is noAuthNoPriv, authNoPriv or authPriv; by default,
	// authPriv when PrivPassword is set, authNoPriv when AuthPassword is,
	// else noAuthNoPriv.
	SecurityLevel string
	// AuthProtocol is MD5, SHA, SHA224, SHA256, SHA384 or SHA512; default
	// MD5 (what the agent gets from net-snmp when given none).
	AuthProtocol string
	// AuthPassword is the authentication passphrase (the agent's
	// password), at least 8 characters.
	AuthPassword fence.Secret
	// PrivProtocol is DES, AES, AES192, AES256, AES192C or AES256C; default
	// DES (net-snmp's default).
	PrivProtocol string
	// PrivPassword is the privacy passphrase, at least 8 characters.
	PrivPassword fence.Secret
	// Timeout is how long a request waits for its reply before it is sent
	// again; default 1 s.
	Timeout time.Duration
	// Retries is how many times an unanswered read is sent again; 0 means
	// 2, NoRetry none. A SET is never sent again.
	Retries int
	// Model is a model ID (ModelManaged, ModelSwitched) to use instead of detecting the
	// model from sysObjectID.0; empty or "auto" detects it.
	Model string
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
}

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values; they name the
// parameter at fault and never quote a secret.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	c, err := snmppdu.ConfigFromParams(name, snmppdu.EatonModels, a, p)
	return Options(c), err
}

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Address, oo.Params)
	if err != nil {
		return nil, err
	}
	o.Logger = oo.Logger
	return New(o)
}

// Device is an Eaton ePDU: a fence.Device whose plugs are its outlets, by
// number, that also implements fence.Cycler,
// fence.Lister, fence.Monitor and io.Closer. It is safe for concurrent use;
// calls take turns on its one SNMP session. Close it to free its socket.
type Device struct{ d *snmppdu.Device }

// New returns a device for the PDU o describes. It does not touch the
// network: the first call detects the model. Errors are *fence.ParamError
// values.
func New(o Options) (*Device, error) {
	d, err := snmppdu.New(name, snmppdu.EatonModels, snmppdu.Config(o))
	if err != nil {
		return nil, err
	}
	return &Device{d: d}, nil
}

// String returns the device's address as a URL: eaton://host:port.
func (d *Device) String() string { return d.d.String() }

// Status reads an outlet's state: one GET.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	return d.d.Status(ctx, plug)
}

// Set switches an outlet on or off: one SET, sent once.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	return d.d.Set(ctx, plug, s)
}

// Cycle power cycles an outlet with the PDU's cycle command.
func (d *Device) Cycle(ctx context.Context, plug string) error { return d.d.Cycle(ctx, plug) }

// List returns the outlets with their states.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) { return d.d.List(ctx) }

// Monitor checks that the PDU answers, takes the credentials and is of a
// known model.
func (d *Device) Monitor(ctx context.Context) error { return d.d.Monitor(ctx) }

// Model returns the ID and name of the PDU's model, detecting it if no call
// has yet.
func (d *Device) Model(ctx context.Context) (id, name string, err error) {
	m, err := d.d.Model(ctx)
	return m.ID, m.Name, err
}

// Requests returns how many SNMP requests the device has sent.
func (d *Device) Requests() int64 { return d.d.Requests() }

// Close ends the calls in progress and frees the socket.
func (d *Device) Close() error { return d.d.Close() }

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }
