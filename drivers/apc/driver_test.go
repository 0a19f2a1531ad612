package apc

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

func TestRegistered(t *testing.T) {
	for _, name := range []string{"apc", "APC", "fence_apc_snmp", "fence_tripplite_snmp", "apc+udp"} {
		d, ok := fence.DefaultRegistry().Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "apc", d.Name)
	}
	keys := map[string]bool{}
	for _, p := range Driver.Params {
		keys[p.Name] = true
	}
	for _, k := range []string{"snmp_version", "community", "snmp_auth_prot", "snmp_sec_level", "snmp_priv_prot", "snmp_priv_passwd", "username", "password", "plug", "snmp_timeout", "snmp_retries", "pdu_model"} {
		assert.True(t, keys[k], k)
	}
}

func TestOptionsFromParams(t *testing.T) {
	a, err := fence.ParseAddress("apc://pdu-7")
	require.NoError(t, err)
	o, err := OptionsFromParams(a, fence.NewParams("snmp-version", "2c", "community", secret, "pdu-model", ModelMasterSwitch))
	require.NoError(t, err)
	assert.Equal(t, Options{Host: "pdu-7", Version: "2c", Community: fence.NewSecret(secret), Model: ModelMasterSwitch}, o)
	_, err = OptionsFromParams(a, fence.NewParams("snmp-version", "3", "username", "u", "password", "2short"))
	var pe *fence.ParamError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "password", pe.Key)
	assert.NotContains(t, err.Error(), "2short")
	_, err = OptionsFromParams(a, fence.NewParams("pdu_model", "managed"))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "pdu_model", pe.Key)
	_, err = New(Options{})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ip", pe.Key)
}

// open opens s through the registry, by the agent's name, with the
// agent's parameters and kv.
func openParams(t *testing.T, s *snmpsim.Sim, kv ...string) *fence.Method {
	t.Helper()
	p := fence.NewParams(append([]string{"ip", snmpsim.Host, "ipport", strconv.Itoa(s.Port), "plug", "2",
		"stonith_status_sleep", "0.01", "power_timeout", "2"}, kv...)...)
	m, err := fence.DefaultRegistry().Open(ctx(t), "", &fence.MethodOptions{Node: "worker-2", Name: "pdu-a", Driver: "fence_apc_snmp", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { m.Device.(*Device).Close() })
	return m
}

// Bad input: each a clear error within the configured timeout, naming
// the device and the method, never holding a secret, never a success.
func TestBadInput(t *testing.T) {
	s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4, Community: secret})
	odd := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4, Community: secret, SysObjectID: ".1.3.6.1.4.1.318.1.3.4.4"})
	where := func(s *snmpsim.Sim) string { return fmt.Sprintf("apc 127.0.0.1:%d", s.Port) }
	cases := []struct {
		name   string
		sim    *snmpsim.Sim
		kv     []string
		is     error
		within time.Duration
		says   string
	}{
		{"wrong community", s, []string{"snmp_version", "2c", "community", "Qz7-wrong-" + secret, "snmp_timeout", "0.3", "snmp_retries", "1"},
			ErrNoReply, 3 * time.Second, "no reply within 600ms (2 tries of 300ms)"},
		{"wrong community, SNMPv1 and the defaults", s, []string{"snmp_timeout", "0.2"},
			fence.ErrUnreachable, 3 * time.Second, "wrong community"},
		{"wrong v3 passphrase", s, []string{"snmp_version", "3", "username", snmpsim.DefaultUser, "password", "Qz7-wrong-" + secret,
			"snmp_auth_prot", "SHA", "snmp_priv_passwd", snmpsim.DefaultPrivPass, "snmp_priv_prot", "AES"},
			fence.ErrLoginDenied, 2 * time.Second, "usmStatsWrongDigests"},
		{"v3 user unknown", s, []string{"snmp_version", "3", "username", "nobody", "password", secret},
			fence.ErrLoginDenied, 2 * time.Second, "usmStatsUnknownUserNames"},
		{"unknown model", odd, []string{"snmp_version", "2c", "community", secret},
			ErrUnknownModel, 2 * time.Second, "sysObjectID .1.3.6.1.4.1.318.1.3.4.4 is an APC MasterSwitch Plus (outlets addressed as switch:outlet), which this driver does not support"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := openParams(t, tc.sim, tc.kv...)
			for _, a := range []fence.Action{fence.ActionOff, fence.ActionStatus} {
				start := time.Now()
				res, err := fence.Do(ctx(t), m, a)
				took := time.Since(start)
				require.Error(t, err)
				t.Log(err)
				assert.False(t, res.Fenced(), "never a success")
				assert.ErrorIs(t, err, tc.is)
				assert.Less(t, took, tc.within)
				assert.True(t, fence.IsNotDone(err), "nothing was switched")
				msg := err.Error()
				assert.Contains(t, msg, "method pdu-a")
				assert.Contains(t, msg, where(tc.sim))
				assert.Contains(t, msg, tc.says)
				assert.NotContains(t, msg, secret)
			}
			assert.Equal(t, fence.StateOn, mustTruth(t, tc.sim, "2"))
		})
	}

	// A value outside the model's mapping: no state, and an off that
	// cannot be verified fails.
	require.NoError(t, s.SetRaw(2, 4))
	m := openParams(t, s, "snmp_version", "2c", "community", secret)
	res, err := fence.Do(ctx(t), m, fence.ActionStatus)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrBadState)
	assert.Equal(t, fence.StateUnknown, res.State)
	assert.Contains(t, err.Error(), "value 4 is neither on (1) nor off (2) for the APC rPDU")
	res, err = fence.Do(ctx(t), m, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res.Fenced())
}
