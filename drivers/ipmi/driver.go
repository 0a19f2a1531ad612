package ipmi

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "ipmi", standing in for the agents fence_ipmilan and
// fence_ipmilanplus. Beyond fence.CommonParams (ip, ipport, username,
// password, ...), it takes fence_ipmilan's parameters:
//
//   - lanplus (boolean, default on): IPMI v2.0 RMCP+ sessions; lanplus=0
//     for IPMI v1.5. fence_ipmilan defaults to v1.5 unless run as
//     fence_ipmilanplus; this driver defaults to v2.0, which every BMC of
//     the last fifteen years has, and which many have v1.5 disabled for.
//   - cipher (integer, default 3): the cipher suite of v2.0 sessions, as
//     ipmitool -C; 17 where the BMC offers it. 0 is refused.
//   - privlvl (default administrator): administrator, operator, user or
//     callback, as ipmitool -L.
//   - hexadecimal_kg: the BMC key of two-key logins, as ipmitool -y;
//     refused when set, since go-ipmi's client cannot use it.
//   - ipmitool_timeout (seconds, default 1): how long each request waits
//     for its reply before it is sent again, as ipmitool -N.
//   - ipmi_retries (integer, default 2): how many times an unanswered
//     request is sent again, as ipmitool -R.
//   - boot_mode (legacy or uefi, default legacy): the firmware boot type
//     a boot device is set with (fence.SetBootDevice), as ipmitool
//     chassis bootdev without or with options=efiboot.
//
// The address is ipmi://host[:port], ipmi+lanplus://... or ipmi+lan://...
// (the transport overrides lanplus), or ip and ipport; the port defaults
// to 623.
var Driver = fence.Driver{
	Name:        "ipmi",
	Description: "Fence agent for IPMI over LAN, IPMI v2.0 (lanplus, default) or v1.5, native (fence_ipmilan compatible)",
	Agents:      []string{"fence_ipmilan", "fence_ipmilanplus"},
	Params: []fence.ParamSpec{
		{Name: "ipport", Description: "UDP port to use for connection with device", Type: "integer", Default: "623"},
		{Name: "lanplus", Description: "Use Lanplus (IPMI v2.0 RMCP+) to improve security of connection; fencekit defaults to it, --lanplus=0 (lanplus=0 on standard input) selects IPMI v1.5", Type: "boolean", Default: "1"},
		{Name: "cipher", Description: "Ciphersuite to use (same as ipmitool -C parameter): 3, or 17 where the BMC offers it; 0 is refused", Type: "integer", Default: "3"},
		{Name: "privlvl", Description: "Privilege level on IPMI device (callback|user|operator|administrator)", Type: "string", Default: "administrator"},
		{Name: "hexadecimal_kg", Description: "Hexadecimal-encoded Kg key for IPMIv2 authentication (not supported: refused when set)", Type: "string", Secret: true},
		{Name: "ipmitool_timeout", Description: "Timeout (sec) for one IPMI request before it is sent again (same as ipmitool -N)", Type: "second", Default: "1"},
		{Name: "ipmi_retries", Description: "Count of times an unanswered IPMI request is sent again (same as ipmitool -R)", Type: "integer", Default: "2"},
		{Name: "boot_mode", Description: "Firmware boot mode asked for with a boot device (reinstall's PXE boot): legacy (PC compatible, as ipmitool chassis bootdev) or uefi (options=efiboot)", Type: "string", Default: "legacy"},
	},
	Ignored: fence.IgnoredParams("fence_ipmilan",
		fence.ParamSpec{Name: "auth", Type: "string"},
		fence.ParamSpec{Name: "ipmitool_path", Type: "string", Default: "/usr/bin/ipmitool"},
		fence.ParamSpec{Name: "login_timeout", Type: "string", Default: "5"},
		fence.ParamSpec{Name: "plug_separator", Type: "string", Default: ","},
		fence.ParamSpec{Name: "port_as_ip", Type: "boolean"},
		fence.ParamSpec{Name: "sudo", Type: "boolean"},
		fence.ParamSpec{Name: "sudo_path", Type: "string", Default: "/usr/bin/sudo"},
		fence.ParamSpec{Name: "target", Type: "string"},
		fence.ParamSpec{Name: "use_sudo", Type: "boolean"},
	),
	Check: fence.CheckParams(OptionsFromParams),
	Open:  open,
}

func init() { fence.Register(Driver) }

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	o := Options{Host: a.Host, Port: a.Port}
	if len(a.Query) > 0 || (a.Path != "" && a.Path != "/") {
		// Refused, not ignored: a path or query given to a BMC's address
		// is a mistake (or a credential pasted there), never a setting.
		return o, &fence.ParamError{Key: "address", Value: a.Scheme() + "://...", Reason: "an IPMI address is ipmi://host[:port], with no path or query; give parameters instead"}
	}
	o.Username, _ = p.Get("username", "login")
	o.Password = p.Secret("password", "passwd")
	if b, ok, err := p.Bool("lanplus"); err != nil {
		return o, err
	} else if ok {
		o.V15 = !b
	}
	switch strings.ToLower(a.Transport) {
	case "":
	case "lanplus":
		o.V15 = false
	case "lan":
		o.V15 = true
	default:
		return o, &fence.ParamError{Key: "address", Value: a.String(), Reason: "transport is lanplus or lan"}
	}
	if n, ok, err := p.Int("cipher"); err != nil {
		return o, err
	} else if ok {
		if n == 0 {
			return o, &fence.ParamError{Key: "cipher", Value: p["cipher"], Reason: "cipher suite 0 authenticates nothing (the BMC takes any password): refused"}
		}
		o.CipherSuite = n
	}
	if v, ok := p.Get("privlvl"); ok {
		o.Privilege = Privilege(strings.ToLower(strings.TrimSpace(v)))
		if o.Privilege == "" {
			o.Privilege = PrivilegeAdministrator
		}
	}
	if v, ok := p.Get("hexadecimal_kg"); ok && strings.TrimSpace(v) != "" {
		reason := "two-key logins (Kg) are not supported by this driver's IPMI library; clear the BMC key or use another agent"
		if _, err := hex.DecodeString(strings.TrimSpace(v)); err != nil {
			reason = "not hexadecimal; and two-key logins (Kg) are not supported by this driver's IPMI library"
		}
		return o, &fence.ParamError{Key: "hexadecimal_kg", Value: "[set]", Reason: reason}
	}
	if d, ok, err := p.Seconds("ipmitool_timeout"); err != nil {
		return o, err
	} else if ok {
		if d <= 0 {
			return o, &fence.ParamError{Key: "ipmitool_timeout", Value: p["ipmitool_timeout"], Reason: "not a positive number of seconds"}
		}
		o.Timeout = d
	}
	if n, ok, err := p.Int("ipmi_retries"); err != nil {
		return o, err
	} else if ok {
		if n < 0 || n > 100 {
			return o, &fence.ParamError{Key: "ipmi_retries", Value: p["ipmi_retries"], Reason: "not a count from 0 to 100"}
		}
		o.Retries = n
		if n == 0 {
			o.Retries = NoRetry
		}
	}
	if v, ok := p.Get("boot_mode"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "legacy", "bios", "":
		case "uefi", "efi":
			o.UEFI = true
		default:
			return o, &fence.ParamError{Key: "boot_mode", Value: v, Reason: "want legacy or uefi"}
		}
	}
	c := o // check fills in defaults; leave them to New
	return o, c.check()
}

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Address, oo.Params)
	if err != nil {
		return nil, err
	}
	o.Logger = oo.Logger
	return New(o)
}
