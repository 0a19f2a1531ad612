package snmppdu

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
)

// Defaults of Config.
const (
	// DefaultPort is SNMP's UDP port.
	DefaultPort = 161
	// DefaultVersion is the agents' default SNMP version.
	DefaultVersion = "1"
	// DefaultCommunity is the agents' default community.
	DefaultCommunity = "private"
	// DefaultAuthProtocol and DefaultPrivProtocol are net-snmp's defaults,
	// which the agents get when they pass no -a or -x.
	DefaultAuthProtocol = "MD5"
	DefaultPrivProtocol = "DES"
	// DefaultTimeout is how long a request waits for its reply before it
	// is sent again (net-snmp's -t 1).
	DefaultTimeout = time.Second
	// DefaultRetries is how many times an unanswered read is sent again.
	// Writes are never sent again.
	DefaultRetries = 2
	// MaxRetries bounds Retries.
	MaxRetries = 10
)

// NoRetry, as Config.Retries, sends each read once.
const NoRetry = -1

// Config configures a Device. The drivers' Options have the same fields
// and convert to it. Host is required; the zero value of every other field
// gives its default.
type Config struct {
	// Host is the PDU's host name or IP address.
	Host string
	// Port is its UDP port; default DefaultPort.
	Port int
	// Version is the SNMP version: "1", "2c" or "3"; default "1", as the
	// agents.
	Version string
	// Community is the SNMPv1 and v2c community; default "private", as the
	// agents. It must give write access.
	Community fence.Secret
	// Username is the SNMPv3 user (security name).
	Username string
	// SecurityLevel is the SNMPv3 security level: noAuthNoPriv, authNoPriv
	// or authPriv. The default follows from what is given: authPriv with a
	// privacy passphrase, authNoPriv with an authentication passphrase,
	// else noAuthNoPriv.
	SecurityLevel string
	// AuthProtocol is the SNMPv3 authentication protocol: MD5, SHA, SHA224,
	// SHA256, SHA384 or SHA512; default MD5 (net-snmp's default, which the
	// agents use when they are given none).
	AuthProtocol string
	// AuthPassword is the SNMPv3 authentication passphrase, at least 8
	// characters.
	AuthPassword fence.Secret
	// PrivProtocol is the SNMPv3 privacy protocol: DES, AES (AES-128), AES192
	// or AES256 (with the key extension of net-snmp and most agents),
	// AES192C or AES256C (the other key extension, of Cisco); default DES
	// (net-snmp's default).
	PrivProtocol string
	// PrivPassword is the SNMPv3 privacy passphrase, at least 8 characters.
	PrivPassword fence.Secret
	// Timeout is how long a request waits for its reply before it is sent
	// again; default DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times an unanswered read is sent again; 0 means
	// DefaultRetries, NoRetry none. A read fails after Timeout × (1 +
	// Retries), or when its context ends. A write (SET) is sent once: it is
	// never sent again blindly.
	Retries int
	// Model is the ID of the model to assume ("rpdu", "managed", ...); empty
	// or "auto" detects it from sysObjectID.0, once per device.
	Model string
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
}

// settings are a checked Config, in gosnmp's terms.
type settings struct {
	version gosnmp.SnmpVersion
	flags   gosnmp.SnmpV3MsgFlags
	auth    gosnmp.SnmpV3AuthProtocol
	priv    gosnmp.SnmpV3PrivProtocol
	model   *Model // nil: detect
}

// check validates c and fills in its defaults. Errors are *fence.ParamError
// values named after the agents' parameters; they never quote a secret.
func (c *Config) check(models []Model) (settings, error) {
	var s settings
	bad := func(key, val, reason string) (settings, error) {
		return s, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if strings.TrimSpace(c.Host) == "" {
		return bad("ip", "", "required: the PDU's host name or IP address")
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 1 || c.Port > 65535 {
		return bad("ipport", strconv.Itoa(c.Port), "not a port from 1 to 65535")
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	switch strings.ToLower(strings.TrimSpace(c.Version)) {
	case "1", "v1":
		s.version, c.Version = gosnmp.Version1, "1"
	case "2c", "2", "v2c", "v2":
		s.version, c.Version = gosnmp.Version2c, "2c"
	case "3", "v3":
		s.version, c.Version = gosnmp.Version3, "3"
	default:
		return bad("snmp_version", c.Version, "want 1, 2c or 3")
	}
	if s.version != gosnmp.Version3 {
		if c.Community.IsZero() {
			c.Community = fence.NewSecret(DefaultCommunity)
		}
	} else if err := c.checkV3(&s); err != nil {
		return s, err
	}
	if c.Timeout < 0 || c.Timeout > time.Minute {
		return bad("snmp_timeout", c.Timeout.String(), "not a time from 0 to 60 seconds")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries == NoRetry:
		c.Retries = 0
	case c.Retries < 0 || c.Retries > MaxRetries:
		return bad("snmp_retries", strconv.Itoa(c.Retries), fmt.Sprintf("not a count from 0 to %d", MaxRetries))
	}
	switch m := strings.ToLower(strings.TrimSpace(c.Model)); m {
	case "", "auto":
		c.Model = ""
	default:
		mod, ok := ByID(models, m)
		if !ok {
			return bad("pdu_model", c.Model, "want auto or one of "+modelIDs(models))
		}
		s.model, c.Model = mod, mod.ID
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func (c *Config) checkV3(s *settings) error {
	bad := func(key, val, reason string) error {
		return &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if c.Username == "" {
		return bad("username", "", "SNMPv3 needs a user name")
	}
	if len(c.Username) > 32 {
		return bad("username", c.Username, "longer than SNMPv3's 32 characters")
	}
	level := strings.ToLower(strings.TrimSpace(c.SecurityLevel))
	if level == "" {
		switch {
		case !c.PrivPassword.IsZero():
			level = "authpriv"
		case !c.AuthPassword.IsZero():
			level = "authnopriv"
		default:
			level = "noauthnopriv"
		}
	}
	switch level {
	case "noauthnopriv":
		s.flags, c.SecurityLevel = gosnmp.NoAuthNoPriv, "noAuthNoPriv"
	case "authnopriv":
		s.flags, c.SecurityLevel = gosnmp.AuthNoPriv, "authNoPriv"
	case "authpriv":
		s.flags, c.SecurityLevel = gosnmp.AuthPriv, "authPriv"
	default:
		return bad("snmp_sec_level", c.SecurityLevel, "want noAuthNoPriv, authNoPriv or authPriv")
	}
	s.auth, s.priv = gosnmp.NoAuth, gosnmp.NoPriv
	if s.flags == gosnmp.NoAuthNoPriv {
		c.AuthProtocol, c.PrivProtocol = "", ""
		return nil
	}
	if c.AuthProtocol == "" {
		c.AuthProtocol = DefaultAuthProtocol
	}
	auth, name, ok := authProtocol(c.AuthProtocol)
	if !ok {
		return bad("snmp_auth_prot", c.AuthProtocol, "want MD5, SHA, SHA224, SHA256, SHA384 or SHA512")
	}
	s.auth, c.AuthProtocol = auth, name
	if len(c.AuthPassword.Reveal()) < 8 {
		return bad("password", "", "the SNMPv3 authentication passphrase must have at least 8 characters (security level "+c.SecurityLevel+")")
	}
	if s.flags != gosnmp.AuthPriv {
		c.PrivProtocol = ""
		return nil
	}
	if c.PrivProtocol == "" {
		c.PrivProtocol = DefaultPrivProtocol
	}
	priv, pname, ok := privProtocol(c.PrivProtocol)
	if !ok {
		return bad("snmp_priv_prot", c.PrivProtocol, "want DES, AES, AES192, AES256, AES192C or AES256C")
	}
	s.priv, c.PrivProtocol = priv, pname
	if len(c.PrivPassword.Reveal()) < 8 {
		return bad("snmp_priv_passwd", "", "the SNMPv3 privacy passphrase must have at least 8 characters (security level authPriv)")
	}
	return nil
}

// authProtocol reads an authentication protocol's name, as net-snmp's -a
// takes it (MD5, SHA, SHA-224, ..., any case, dash optional).
func authProtocol(v string) (gosnmp.SnmpV3AuthProtocol, string, bool) {
	switch strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "") {
	case "MD5":
		return gosnmp.MD5, "MD5", true
	case "SHA", "SHA1":
		return gosnmp.SHA, "SHA", true
	case "SHA224":
		return gosnmp.SHA224, "SHA224", true
	case "SHA256":
		return gosnmp.SHA256, "SHA256", true
	case "SHA384":
		return gosnmp.SHA384, "SHA384", true
	case "SHA512":
		return gosnmp.SHA512, "SHA512", true
	}
	return 0, "", false
}

// privProtocol reads a privacy protocol's name, as net-snmp's -x takes it
// (DES, AES, AES-192, AES-256, any case, dash optional), and the Cisco key
// extension's AES192C and AES256C.
func privProtocol(v string) (gosnmp.SnmpV3PrivProtocol, string, bool) {
	switch strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "") {
	case "DES":
		return gosnmp.DES, "DES", true
	case "AES", "AES128":
		return gosnmp.AES, "AES", true
	case "AES192":
		return gosnmp.AES192, "AES192", true
	case "AES256":
		return gosnmp.AES256, "AES256", true
	case "AES192C":
		return gosnmp.AES192C, "AES192C", true
	case "AES256C":
		return gosnmp.AES256C, "AES256C", true
	}
	return 0, "", false
}

// ConfigFromParams reads a Config from a method's address and parameters,
// with the agents' names (see Params). driver is the driver's name, which
// an address scheme must match. Errors are *fence.ParamError values; they
// name the parameter at fault and never quote a secret.
func ConfigFromParams(driver string, models []Model, a fence.Address, p fence.Params) (Config, error) {
	var c Config
	bad := func(key, val, reason string) (Config, error) {
		return c, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if a.Driver != "" && a.Driver != driver {
		return bad("address", a.Scheme()+"://...", "not an address of the "+driver+" driver")
	}
	switch strings.ToLower(a.Transport) {
	case "", "udp":
	default:
		return bad("address", a.Scheme()+"://...", "the transport is udp (or none)")
	}
	if len(a.Query) > 0 || (a.Path != "" && a.Path != "/") {
		return bad("address", a.Scheme()+"://...", "a PDU's address is "+driver+"://host[:port]: no path or query; give parameters instead")
	}
	c.Host, c.Port = a.Host, a.Port
	str := func(dst *string, keys ...string) {
		if v, ok := p.Get(keys...); ok {
			*dst = v
		}
	}
	str(&c.Version, "snmp_version")
	c.Community = p.Secret("community")
	str(&c.Username, "username", "login")
	c.AuthPassword = p.Secret("password", "passwd")
	str(&c.SecurityLevel, "snmp_sec_level")
	str(&c.AuthProtocol, "snmp_auth_prot")
	str(&c.PrivProtocol, "snmp_priv_prot")
	c.PrivPassword = p.Secret("snmp_priv_passwd")
	str(&c.Model, "pdu_model")
	if d, ok, err := p.Seconds("snmp_timeout"); err != nil {
		return c, err
	} else if ok {
		if d <= 0 {
			return bad("snmp_timeout", p["snmp_timeout"], "not a positive number of seconds")
		}
		c.Timeout = d
	}
	if n, ok, err := p.Int("snmp_retries"); err != nil {
		return c, err
	} else if ok {
		if n < 0 || n > MaxRetries {
			return bad("snmp_retries", p["snmp_retries"], fmt.Sprintf("not a count from 0 to %d", MaxRetries))
		}
		c.Retries = n
		if n == 0 {
			c.Retries = NoRetry
		}
	}
	// SNMPv3 settings without snmp_version=3 are an error, never a
	// fallback to SNMPv1 or v2c with a community (the agents quietly use
	// v1 then: a security downgrade the writer of authPriv did not ask
	// for).
	if v := strings.ToLower(strings.TrimSpace(c.Version)); v != "3" && v != "v3" {
		for _, k := range []string{"snmp_sec_level", "snmp_auth_prot", "snmp_priv_prot", "snmp_priv_passwd"} {
			if v, ok := p.Get(k); ok {
				version := c.Version
				if version == "" {
					version = DefaultVersion + " (the default)"
				}
				return bad(k, v, "an SNMPv3 setting, but snmp_version is "+version+": set snmp_version=3 (fencekit never falls back to SNMPv1 or v2c when SNMPv3 settings are given)")
			}
		}
	}
	check := c // check fills in defaults; leave them to New
	_, err := check.check(models)
	return c, err
}

// Params returns the parameters of an SNMP PDU driver, with the agents'
// names, for fence.Driver.Params. models are the driver's, listed in the
// description of pdu_model.
func Params(models []Model) []fence.ParamSpec {
	return []fence.ParamSpec{
		{Name: "ip", Aliases: []string{"ipaddr"}, Description: "IP address or hostname of fencing device", Type: "string", Required: true},
		{Name: "ipport", Description: "TCP/UDP port to use for connection with device", Type: "integer", Default: strconv.Itoa(DefaultPort)},
		{Name: "plug", Aliases: []string{"port"}, Description: "Physical plug number on device, or name of the outlet", Type: "string", Required: true},
		{Name: "username", Aliases: []string{"login"}, Description: "Login name (SNMPv3 user)", Type: "string"},
		{Name: "password", Aliases: []string{"passwd"}, Description: "Login password or passphrase (SNMPv3 authentication passphrase)", Type: "string", Secret: true},
		{Name: "snmp_version", Description: "Specifies SNMP version to use (1|2c|3)", Type: "string", Default: DefaultVersion},
		{Name: "community", Description: "Set the community string (SNMPv1 and v2c)", Type: "string", Default: DefaultCommunity, Secret: true},
		{Name: "snmp_auth_prot", Description: "Set authentication protocol (MD5|SHA|SHA224|SHA256|SHA384|SHA512)", Type: "string", Default: DefaultAuthProtocol},
		{Name: "snmp_sec_level", Description: "Set security level (noAuthNoPriv|authNoPriv|authPriv); default: authPriv with a privacy passphrase, authNoPriv with a password, else noAuthNoPriv", Type: "string"},
		{Name: "snmp_priv_prot", Description: "Set privacy protocol (DES|AES|AES192|AES256|AES192C|AES256C)", Type: "string", Default: DefaultPrivProtocol},
		{Name: "snmp_priv_passwd", Description: "Set privacy protocol password", Type: "string", Secret: true},
		{Name: "snmp_timeout", Description: "Wait X seconds for the reply to one SNMP request before sending it again (same as snmpget -t)", Type: "second", Default: "1"},
		{Name: "snmp_retries", Description: "Count of times an unanswered SNMP read is sent again (same as snmpget -r); a write is never sent again", Type: "integer", Default: strconv.Itoa(DefaultRetries)},
		{Name: "pdu_model", Description: "PDU model: auto (detect it from sysObjectID) or one of " + modelIDs(models), Type: "string", Default: "auto"},
	}
}

// Ignored returns the options of the SNMP agents (agent names one, for
// their descriptions) that name net-snmp's programs, which the native
// drivers do not run, for fence.Driver.Ignored.
func Ignored(agent string) []fence.ParamSpec {
	return fence.IgnoredParams(agent,
		fence.ParamSpec{Name: "login_timeout", Type: "string", Default: "5"},
		fence.ParamSpec{Name: "plug_separator", Type: "string", Default: ","},
		fence.ParamSpec{Name: "snmpget_path", Type: "string", Default: "/usr/bin/snmpget"},
		fence.ParamSpec{Name: "snmpset_path", Type: "string", Default: "/usr/bin/snmpset"},
		fence.ParamSpec{Name: "snmpwalk_path", Type: "string", Default: "/usr/bin/snmpwalk"},
	)
}
