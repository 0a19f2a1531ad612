package fence_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func TestParseAddress(t *testing.T) {
	cases := []struct {
		in   string
		want fence.Address
	}{
		{"ipmi://10.0.0.5:623", fence.Address{Driver: "ipmi", Host: "10.0.0.5", Port: 623}},
		{"  IPMI://BMC-1  ", fence.Address{Driver: "ipmi", Host: "BMC-1"}},
		{"redfish+https://bmc.example/redfish/v1/Systems/1", fence.Address{Driver: "redfish", Transport: "https", Host: "bmc.example", Path: "/redfish/v1/Systems/1"}},
		{"Redfish+HTTPS://[fe80::1]:8443/redfish/v1", fence.Address{Driver: "redfish", Transport: "https", Host: "fe80::1", Port: 8443, Path: "/redfish/v1"}},
		{"apc://pdu-a:161", fence.Address{Driver: "apc", Host: "pdu-a", Port: 161}},
		{"eaton://pdu-b", fence.Address{Driver: "eaton", Host: "pdu-b"}},
		{"brocade+ssh://fc-switch:22", fence.Address{Driver: "brocade", Transport: "ssh", Host: "fc-switch", Port: 22}},
		{"fake://rack1", fence.Address{Driver: "fake", Host: "rack1"}},
		{"fake://rack1?plugs=4", fence.Address{Driver: "fake", Host: "rack1", Query: url.Values{"plugs": {"4"}}}},
		{"10.0.0.5", fence.Address{Host: "10.0.0.5"}},
		{"10.0.0.5:623", fence.Address{Host: "10.0.0.5", Port: 623}},
		{"fe80::1", fence.Address{Host: "fe80::1"}},
		{"[::1]:623", fence.Address{Host: "::1", Port: 623}},
		{"ipmi://host:", fence.Address{Driver: "ipmi", Host: "host"}},
		{"ipmi://host/", fence.Address{Driver: "ipmi", Host: "host", Path: "/"}},
		{"ipmi://host#frag", fence.Address{Driver: "ipmi", Host: "host"}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := fence.ParseAddress(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			again, err := fence.ParseAddress(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String parses back")
		})
	}
}

func TestParseAddressRefuses(t *testing.T) {
	cases := map[string]string{
		"":                         "empty",
		"   ":                      "empty",
		"ipmi://":                  "no host",
		"://host":                  "empty scheme",
		"ip mi://host":             "scheme",
		"ipmi://host:0":            "port",
		"ipmi://host:65536":        "port",
		"ipmi://host:-1":           "port",
		"ipmi://host:abc":          "port",
		"ipmi://[::1":              "]",
		"ipmi://[::1]x":            "junk",
		"ipmi://fe80::zz":          "IPv6",
		"a+b+c://host":             "scheme",
		"+https://host":            "scheme",
		"ipmi://host/with space":   "white space",
		"redfish://[a]b]:1":        "]",
		"ipmi://host:623?%zz":      "query",
		"ipmi://admin:s3cr3t@host": "credentials",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			_, err := fence.ParseAddress(in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.NotContains(t, err.Error(), "s3cr3t", "credentials never appear in an error")
		})
	}
}

// fuzzSecret is a password no result or error of ParseAddress may hold.
const fuzzSecret = "S3cr3t-pw"

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"ipmi://10.0.0.5:623", "redfish+https://bmc/redfish/v1/Systems/1", "apc://pdu:161", "eaton://pdu",
		"brocade+ssh://sw:22", "fake://x?plugs=2", "[::1]:623", "fe80::1", "host", "ipmi://u:p@h", "a://[", "@://",
	} {
		f.Add(s, "")
	}
	// Passwords with the URL's delimiters in them.
	for _, pw := range []string{"#", "/", "?", ":", "@", "]", "1/2", "a#b?c", "%2F"} {
		f.Add("ipmi://admin:"+fuzzSecret+pw+"@10.0.0.5:623", pw)
		f.Add("redfish+https://admin:"+pw+fuzzSecret+"@bmc/redfish/v1/Systems/1", pw)
	}
	f.Fuzz(func(t *testing.T, s, pw string) {
		// A userinfo of fuzzSecret and pw, put where the fuzzer says, or
		// none.
		if strings.Contains(s, fuzzSecret) || pw != "" {
			s = strings.Replace(s, "@", ":"+fuzzSecret+pw+"@", 1)
		}
		a, err := fence.ParseAddress(s)
		if err != nil {
			if strings.Contains(s, "@") && strings.Contains(err.Error(), "@") && !strings.Contains(err.Error(), "('@' found)") {
				t.Fatalf("error repeats a userinfo part: %v", err)
			}
			if strings.Contains(s, "@") && strings.Contains(err.Error(), fuzzSecret) {
				t.Fatalf("%q: the error holds the password: %v", s, err)
			}
			return
		}
		if strings.Contains(s, "@") {
			t.Fatalf("%q: an address with '@' parsed: %#v", s, a)
		}
		if a.Host == "" {
			t.Fatalf("%q: parsed with no host", s)
		}
		if a.Port < 0 || a.Port > 65535 {
			t.Fatalf("%q: port %d", s, a.Port)
		}
		b, err := fence.ParseAddress(a.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse back: %v", s, a.String(), err)
		}
		if b.String() != a.String() || b.Host != a.Host || b.Port != a.Port || b.Driver != a.Driver || b.Transport != a.Transport || b.Path != a.Path {
			t.Fatalf("%q: round trip %#v != %#v", s, a, b)
		}
	})
}

// A password with a URL delimiter in it: the address is refused whole, and
// neither the error nor anything parsed holds any part of it (earlier, '#'
// and '/' cut the userinfo into a "port" that the error quoted, or into a
// host the request was sent to).
func TestParseAddressPasswordWithDelimiters(t *testing.T) {
	for _, addr := range []string{
		"ipmi://admin:pa#ss-" + fuzzSecret + "@10.0.0.5",
		"ipmi://admin:" + fuzzSecret + "/1@10.0.0.5:623",
		"ipmi://admin:1234/" + fuzzSecret + "@evil",
		"redfish+https://admin:" + fuzzSecret + "?x@bmc/redfish/v1",
		"admin:" + fuzzSecret + "@10.0.0.5",
	} {
		_, err := fence.ParseAddress(addr)
		require.Error(t, err, addr)
		assert.NotContains(t, err.Error(), fuzzSecret)
		assert.NotContains(t, err.Error(), "admin")
		assert.Contains(t, err.Error(), "credentials in the address are not accepted")
	}
}

func TestParams(t *testing.T) {
	p := fence.NewParams("--Power-Wait", "2", "snmp-priv-passwd", "hush", "login", "admin")
	assert.Equal(t, "2", p["power_wait"])
	v, ok := p.Get("username", "login")
	assert.True(t, ok)
	assert.Equal(t, "admin", v)
	assert.NotContains(t, p.String(), "hush")
	assert.Contains(t, p.String(), `snmp_priv_passwd="REDACTED"`)
	for _, k := range []string{"password", "passwd", "community", "snmp_priv_passwd", "auth-token", "client_secret"} {
		assert.True(t, fence.IsSecret(k), k)
	}
	for _, k := range []string{"username", "ip", "plug", "identity_file"} {
		assert.False(t, fence.IsSecret(k), k)
	}

	o, err := fence.OptionsFromParams(fence.Options{}, fence.NewParams("power_timeout", "30", "power_wait", "0.5", "retry_on", "0", "method", "cycle", "delay", "1500ms"))
	require.NoError(t, err)
	assert.Equal(t, "30s", o.PowerTimeout.String())
	assert.Equal(t, "500ms", o.PowerWait.String())
	assert.Equal(t, fence.NoRetry, o.RetryOn)
	assert.Equal(t, fence.RebootCycle, o.RebootMethod)
	assert.Equal(t, "1.5s", o.Delay.String())

	for k, v := range map[string]string{"power_timeout": "soon", "retry_on": "x", "retry_off": "-1", "method": "pull-the-plug", "soft": "maybe", "power_wait": "-2"} {
		_, err := fence.OptionsFromParams(fence.Options{}, fence.NewParams(k, v))
		require.Error(t, err, k)
		assert.ErrorIs(t, err, fence.ErrConfig)
		assert.Contains(t, err.Error(), k)
	}
	_, err = fence.OptionsFromParams(fence.Options{}, fence.NewParams("password", "x"))
	require.NoError(t, err)
}

func TestStatesAndActions(t *testing.T) {
	for in, want := range map[string]fence.State{"ON": fence.StateOn, "off": fence.StateOff, " Enabled ": fence.StateOn, "disable": fence.StateOff} {
		got, err := fence.ParseState(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := fence.ParseState("PoweringOff")
	assert.Error(t, err)
	for _, a := range []fence.Action{fence.ActionOn, fence.ActionOff, fence.ActionReboot, fence.ActionStatus, fence.ActionList, fence.ActionMonitor} {
		got, err := fence.ParseAction(strings.ToUpper(a.String()))
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	_, err = fence.ParseAction("diag")
	assert.Error(t, err)
	assert.Equal(t, fence.StateOn, fence.ActionReboot.Target())
	assert.Equal(t, fence.StateUnknown, fence.ActionStatus.Target())
	assert.Equal(t, "unknown", fence.State(9).String())
}

// ip= without a scheme is a host (and port), checked as one: a path, a
// query, a label of the wrong shape or a would-be IPv4 address out of range
// is refused naming the ip parameter; a number out of range says the range.
func TestIPParamIsAHost(t *testing.T) {
	for _, tc := range []struct {
		ip string
		ok bool
	}{
		{"10.0.0.5", true}, {"bmc-1.rack3.example", true}, {"bmc_1", true}, {"::1", true}, {"bmc.example.", true},
		{"10.0.0.300", false}, {"bmc/x", false}, {"bmc?x=1", false}, {"-bmc", false}, {"host..name", false},
		{"b%c", false}, {strings.Repeat("a", 64) + ".example", false},
	} {
		_, field, err := fence.AddressFromParams(fence.NewParams("ip", tc.ip))
		if (err == nil) != tc.ok || (!tc.ok && field != "ip") {
			t.Errorf("ip=%s: field %q, %v", tc.ip, field, err)
		}
	}
	_, _, err := fence.Params{"ipport": "99999999999999999999"}.Int("ipport")
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a number out of range: %v", err)
	}
}

// Redacted keeps the host, port and path, and leaves out the query's values.
func TestAddressRedacted(t *testing.T) {
	a, err := fence.ParseAddress("redfish+https://bmc:8443/redfish/v1/Systems/1?password=hunter2&x=1")
	if err != nil {
		t.Fatal(err)
	}
	got := a.Redacted()
	if strings.Contains(got, "hunter2") || !strings.Contains(got, "bmc:8443/redfish/v1/Systems/1") || !strings.Contains(got, "password=REDACTED") {
		t.Errorf("Redacted: %s", got)
	}
}
