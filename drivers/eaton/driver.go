package eaton

import (
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
var Driver = kind.Driver()

// kind is the driver: the SNMP PDU code it shares with the other PDU
// drivers, under its own name, agents and models.
var kind = snmppdu.Kind{
	Name:        name,
	Description: "Fence agent for Eaton over SNMP, native (fence_eaton_snmp compatible)",
	Agents:      []string{"fence_eaton_snmp"},
	Models:      snmppdu.EatonModels,
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

// Options configure a Device: see the fields of snmppdu.Config, which it
// is. Host is required; the zero value of every other field gives its
// default (SNMPv1 and the community "private", as the agent).
type Options = snmppdu.Config

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values; they name the
// parameter at fault and never quote a secret.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	return kind.ConfigFromParams(a, p)
}

// Device is an Eaton ePDU: a fence.Device whose plugs are its outlets, by
// number, that also implements fence.Cycler,
// fence.Lister, fence.Monitor and io.Closer. It is safe for concurrent use;
// calls take turns on its one SNMP session. Close it to free its socket.
type Device = snmppdu.Device

// New returns a device for the PDU o describes. It does not touch the
// network: the first call detects the model. Errors are *fence.ParamError
// values.
func New(o Options) (*Device, error) { return kind.New(o) }
