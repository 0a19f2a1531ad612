package redfish

import (
	"context"
	"crypto/x509"
	"os"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "redfish", standing in for the agent fence_redfish.
//
// Its address is redfish+https://HOST[:PORT][PATH] (redfish://... is
// HTTPS too; plain HTTP only as redfish+http://...), or the parameters ip
// and ipport (default 443). A PATH under Systems, such as
// /redfish/v1/Systems/1, selects the system, as systems_uri does; any
// other PATH is the service root, as redfish_uri. Its own parameters are:
//
//   - systems_uri: the system to act on (default: the only system; with
//     several, the driver fails and lists them);
//   - redfish_uri: the service root's path (default /redfish/v1);
//   - auth: basic (default) or session;
//   - ssl_insecure: accept any certificate;
//   - ssl_ca_file (alias ssl_ca): PEM file of the CAs to trust instead of
//     the system's;
//   - ssl, ssl_secure: accepted as the agent has them (HTTPS with
//     verification is the default);
//   - boot_mode: uefi or legacy, the BootSourceOverrideMode a boot device
//     is set with (fence.SetBootDevice); default: the system's own, left
//     unchanged.
//
// io_timeout (default 10 s) bounds a request whose context has no
// deadline. See Device for plugs and operations.
var Driver = fence.Driver{
	Name:        "redfish",
	Description: "Redfish BMC (DMTF Redfish API over HTTPS): power of a computer system through #ComputerSystem.Reset (fence_redfish compatible)",
	Agents:      []string{"fence_redfish"},
	Params: []fence.ParamSpec{
		{Name: "ip", Aliases: []string{"ipaddr"}, Description: "IP address or hostname of fencing device", Type: "string", Required: true},
		{Name: "ipport", Description: "TCP port to use for connection with device", Type: "integer", Default: "443"},
		{Name: "username", Aliases: []string{"login"}, Description: "Login name", Type: "string", Required: true},
		{Name: "password", Aliases: []string{"passwd"}, Description: "Login password or passphrase", Type: "string", Required: true, Secret: true},
		{Name: "systems_uri", Description: "Redfish Systems resource URI, i.e. /redfish/v1/Systems/System.Embedded.1 (default: the only system)", Type: "string"},
		{Name: "redfish_uri", Description: "Base or starting Redfish URI", Type: "string", Default: DefaultRedfishURI},
		{Name: "auth", Description: "Authentication: basic (HTTP Basic on every request) or session (X-Auth-Token, session deleted at the end)", Type: "string", Default: "basic"},
		{Name: "ssl_insecure", Description: "Use SSL connection without verifying certificate", Type: "boolean", Default: "no"},
		{Name: "ssl_ca_file", Aliases: []string{"ssl_ca"}, Description: "PEM file of the CA certificates to trust for the device's certificate (default: the system's)", Type: "string"},
		{Name: "ssl", Description: "Use SSL connection (always; plain HTTP only with an address redfish+http://...)", Type: "boolean", Default: "yes"},
		{Name: "ssl_secure", Description: "Use SSL connection with verifying certificate (the default)", Type: "boolean"},
		{Name: "boot_mode", Description: "Firmware boot mode asked for with a boot device (reinstall's PXE boot): uefi or legacy (BootSourceOverrideMode; default: the system's, unchanged)", Type: "string"},
	},
	Ignored: fence.IgnoredParams("fence_redfish",
		fence.ParamSpec{Name: "gnutlscli_path", Type: "string", Default: "/usr/bin/gnutls-cli"},
		fence.ParamSpec{Name: "login_timeout", Type: "string", Default: "5"},
		fence.ParamSpec{Name: "plug_separator", Type: "string", Default: ","},
		fence.ParamSpec{Name: "port_as_ip", Type: "boolean"},
	),
	Check: fence.CheckParams(OptionsFromParams),
	Open:  open,
}

func init() { fence.Register(Driver) }

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Address, oo.Params)
	if err != nil {
		return nil, err
	}
	o.Logger = oo.Logger
	if strings.HasPrefix(o.Endpoint, "http://") && o.Logger != nil {
		o.Logger.Warn("redfish: plain HTTP: credentials travel in clear text", "host", oo.Address.Host)
	}
	return New(o)
}

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values; they name the
// parameter at fault and never quote a secret.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	var o Options
	bad := func(key, val, reason string) (Options, error) {
		return o, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if a.Host == "" {
		return bad("ip", "", "required: the Redfish service's host (or give address=redfish+https://host)")
	}
	if a.Driver != "" && a.Driver != "redfish" {
		return bad("address", a.Scheme()+"://...", "not a redfish address")
	}
	if len(a.Query) > 0 {
		return bad("address", a.Scheme()+"://...", "a redfish address takes no query; give parameters instead")
	}
	scheme := "https"
	switch a.Transport {
	case "", "https":
	case "http":
		scheme = "http"
	default:
		return bad("address", a.Scheme()+"://...", "transport must be https or http")
	}
	if b, ok, err := p.Bool("ssl"); err != nil {
		return o, err
	} else if ok && b == (scheme == "http") {
		v, _ := p.Get("ssl")
		if b {
			return bad("ssl", v, "contradicts the plain HTTP address redfish+http://")
		}
		return bad("ssl", v, "plain HTTP only with an explicit address redfish+http://host")
	}
	port := 443
	if scheme == "http" {
		port = 80
	}
	o.Endpoint = scheme + "://" + a.HostPort(port)

	root, sys := splitPath(a.Path)
	o.RedfishURI, o.SystemsURI = root, sys
	for _, kv := range []struct {
		key string
		dst *string
	}{{"redfish_uri", &o.RedfishURI}, {"systems_uri", &o.SystemsURI}} {
		v, ok := p.Get(kv.key)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, "?# \t\r\n") {
			return bad(kv.key, v, "not an absolute path such as /redfish/v1/Systems/1")
		}
		if len(v) > 1 {
			v = strings.TrimRight(v, "/")
		}
		if *kv.dst != "" && *kv.dst != v {
			return bad(kv.key, v, "contradicts the address's path "+strconv.Quote(a.Path))
		}
		*kv.dst = v
	}

	o.Username, _ = p.Get("username", "login")
	if strings.TrimSpace(o.Username) == "" {
		return bad("username", o.Username, "required")
	}
	o.Password = p.Secret("password", "passwd")

	if v, ok := p.Get("auth"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "", "basic":
			o.Auth = AuthBasic
		case "session":
			o.Auth = AuthSession
		default:
			return bad("auth", v, "want basic or session")
		}
	}
	insecure, _, err := p.Bool("ssl_insecure")
	if err != nil {
		return o, err
	}
	secure, secureSet, err := p.Bool("ssl_secure")
	if err != nil {
		return o, err
	}
	if insecure && secureSet && secure {
		v, _ := p.Get("ssl_secure")
		return bad("ssl_secure", v, "contradicts ssl_insecure")
	}
	o.InsecureSkipVerify = insecure
	if f, ok := p.Get("ssl_ca_file", "ssl_ca"); ok && strings.TrimSpace(f) != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return bad("ssl_ca_file", f, "cannot read: "+err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return bad("ssl_ca_file", f, "holds no PEM certificate")
		}
		o.RootCAs = pool
	}
	if v, ok := p.Get("boot_mode"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "":
		case "uefi", "efi":
			o.BootMode = "UEFI"
		case "legacy", "bios":
			o.BootMode = "Legacy"
		default:
			return bad("boot_mode", v, "want uefi or legacy")
		}
	}
	for _, k := range []string{"io_timeout", "shell_timeout"} {
		d, ok, err := p.Seconds(k)
		if err != nil {
			return o, err
		}
		if ok && d > 0 {
			o.Timeout = d
			break
		}
	}
	return o, nil
}

// splitPath splits an address's path into the service root and the
// system it selects: /redfish/v1/Systems/1 is the system /redfish/v1/Systems/1
// of the root /redfish/v1; /redfish/v1/Systems and /redfish/v1 are the
// root /redfish/v1. Empty paths give empty strings.
func splitPath(p string) (root, system string) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", ""
	}
	if i := strings.LastIndex(p, "/Systems/"); i >= 0 {
		if id := p[i+len("/Systems/"):]; id != "" && !strings.Contains(id, "/") {
			return p[:i], p
		}
	}
	if r, ok := strings.CutSuffix(p, "/Systems"); ok {
		return r, ""
	}
	return p, ""
}
