package ipmi

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

func TestRegistered(t *testing.T) {
	for _, name := range []string{"ipmi", "fence_ipmilan", "fence_ipmilanplus", "IPMI+lan"} {
		d, ok := fence.DefaultRegistry().Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "ipmi", d.Name)
	}
	var names []string
	for _, p := range Driver.Params {
		names = append(names, p.Name)
		assert.Equal(t, fence.CanonicalKey(p.Name), p.Name)
		assert.NotEmpty(t, p.Description)
	}
	assert.Equal(t, []string{"ipport", "lanplus", "cipher", "privlvl", "hexadecimal_kg", "ipmitool_timeout", "ipmi_retries", "boot_mode"}, names)
}

func TestOptionsFromParams(t *testing.T) {
	addr := func(s string) fence.Address {
		a, err := fence.ParseAddress(s)
		require.NoError(t, err)
		return a
	}
	for _, tc := range []struct {
		name string
		addr string
		kv   []string
		want Options
	}{
		{"defaults", "ipmi://bmc1", nil, Options{Host: "bmc1"}},
		{"port and credentials", "ipmi://10.0.0.5:6230", []string{"login", "root", "passwd", "pw"},
			Options{Host: "10.0.0.5", Port: 6230, Username: "root", Password: fence.NewSecret("pw")}},
		{"lan", "bmc1", []string{"lanplus", "0"}, Options{Host: "bmc1", V15: true}},
		{"lanplus flag", "bmc1", []string{"lanplus", ""}, Options{Host: "bmc1"}},
		{"lan transport", "ipmi+lan://bmc1", []string{"lanplus", "1"}, Options{Host: "bmc1", V15: true}},
		{"lanplus transport", "ipmi+lanplus://bmc1", []string{"lanplus", "0"}, Options{Host: "bmc1"}},
		{"cipher", "bmc1", []string{"cipher", "17"}, Options{Host: "bmc1", CipherSuite: 17}},
		{"privlvl", "bmc1", []string{"privlvl", "OPERATOR"}, Options{Host: "bmc1", Privilege: PrivilegeOperator}},
		{"timeouts", "bmc1", []string{"ipmitool-timeout", "0.25", "ipmi_retries", "0"},
			Options{Host: "bmc1", Timeout: 250 * time.Millisecond, Retries: NoRetry}},
		{"retries", "bmc1", []string{"ipmi_retries", "5"}, Options{Host: "bmc1", Retries: 5}},
		{"uefi", "bmc1", []string{"boot_mode", "UEFI"}, Options{Host: "bmc1", UEFI: true}},
		{"legacy", "bmc1", []string{"boot_mode", "legacy"}, Options{Host: "bmc1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := OptionsFromParams(addr(tc.addr), fence.NewParams(tc.kv...))
			require.NoError(t, err)
			assert.Equal(t, tc.want, o)
		})
	}
}

func TestBadParams(t *testing.T) {
	const kg = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, addr string
		kv         []string
		key        string
	}{
		{"cipher 0", "bmc1", []string{"cipher", "0"}, "cipher"},
		{"cipher 20", "bmc1", []string{"cipher", "20"}, "cipher"},
		{"cipher word", "bmc1", []string{"cipher", "three"}, "cipher"},
		{"privlvl", "bmc1", []string{"privlvl", "root"}, "privlvl"},
		{"lanplus", "bmc1", []string{"lanplus", "maybe"}, "lanplus"},
		{"kg", "bmc1", []string{"hexadecimal_kg", kg}, "hexadecimal_kg"},
		{"timeout", "bmc1", []string{"ipmitool_timeout", "0"}, "ipmitool_timeout"},
		{"retries", "bmc1", []string{"ipmi_retries", "-1"}, "ipmi_retries"},
		{"boot mode", "bmc1", []string{"boot_mode", "efi2"}, "boot_mode"},
		{"transport", "ipmi+ssh://bmc1", nil, "address"},
		{"no host", "", nil, "ip"},
		{"long user", "bmc1", []string{"username", "a-user-name-longer-than-16"}, "username"},
		{"long password", "bmc1", []string{"password", "a-password-longer-than-20"}, "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a fence.Address
			if tc.addr != "" {
				var err error
				a, err = fence.ParseAddress(tc.addr)
				require.NoError(t, err)
			}
			_, err := OptionsFromParams(a, fence.NewParams(tc.kv...))
			var pe *fence.ParamError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.key, pe.Key)
			assert.ErrorIs(t, err, fence.ErrConfig)
			assert.NotContains(t, err.Error(), kg, "the key is never printed")
			assert.NotContains(t, err.Error(), "a-password-longer-than-20")
		})
	}
}

// The registry opens the driver from the agents' parameters, as fencectl
// and the node-fencing design's configuration do, and the device works.
func TestOpenThroughRegistry(t *testing.T) {
	g := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{Password: secret})
	p := fence.NewParams("ip", "127.0.0.1", "ipport", strconv.Itoa(g.Port), "username", g.User, "password", secret,
		"lanplus", "1", "cipher", "3", "privlvl", "administrator", "action", "off")
	m, err := fence.DefaultRegistry().Open(ctx(t), "", &fence.MethodOptions{Node: "node-1", Name: "ipmi-node-1", Driver: "fence_ipmilan", Params: p})
	require.NoError(t, err)
	defer m.Device.(interface{ Close() error }).Close()
	assert.Equal(t, "ipmi", m.Driver)
	m.Options.PollInterval = 10 * time.Millisecond
	res, err := fence.Do(ctx(t), m, fence.ActionReboot) // the method's action, off, wins
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, fence.StateOff, g.Truth())

	p = fence.NewParams("address", g.URL(), "username", g.User, "password", secret)
	m, err = fence.DefaultRegistry().Open(ctx(t), "", &fence.MethodOptions{Node: "node-1", Name: "by-url", Params: p})
	require.NoError(t, err)
	defer m.Device.(interface{ Close() error }).Close()
	res, err = fence.Do(ctx(t), m, fence.ActionStatus)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, res.State)

	p = fence.NewParams("ip", "127.0.0.1", "cipher", "0", "password", secret)
	_, err = fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "node-1", Name: "m", Driver: "ipmi", Params: p})
	var fe *fence.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "cipher", fe.Field)
	assert.True(t, fence.IsNotDone(err))
	assert.NotContains(t, err.Error(), secret)
	assert.True(t, errors.Is(err, fence.ErrConfig))
}

// A path or a query in an IPMI address is refused, naming the address and
// never quoting what was there (it may be a credential pasted in).
func TestAddressWithPathOrQueryRefused(t *testing.T) {
	for _, u := range []string{"ipmi://bmc/x", "ipmi://bmc:623?password=" + secret, "ipmi://bmc/" + secret} {
		a, err := fence.ParseAddress(u)
		require.NoError(t, err)
		_, err = OptionsFromParams(a, fence.Params{})
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe, u)
		assert.Equal(t, "address", pe.Key)
		assert.NotContains(t, err.Error(), secret)
	}
}
