package eaton

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
	for _, name := range []string{"eaton", "fence_eaton_snmp", "eaton+udp"} {
		d, ok := fence.DefaultRegistry().Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "eaton", d.Name)
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
	a, err := fence.ParseAddress("eaton://pdu-7:1161")
	require.NoError(t, err)
	o, err := OptionsFromParams(a, fence.NewParams("snmp-version", "2c", "community", secret, "pdu-model", ModelSwitched))
	require.NoError(t, err)
	assert.Equal(t, Options{Host: "pdu-7", Port: 1161, Version: "2c", Community: fence.NewSecret(secret), Model: ModelSwitched}, o)
	var pe *fence.ParamError
	_, err = OptionsFromParams(a, fence.NewParams("pdu_model", "rpdu"))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "pdu_model", pe.Key)
	_, err = OptionsFromParams(fence.Address{Driver: "apc", Host: "x"}, nil)
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "address", pe.Key)
}

// openParams opens s through the registry, by the agent's name, with the
// agent's parameters and kv.
func openParams(t *testing.T, s *snmpsim.Sim, kv ...string) *fence.Method {
	t.Helper()
	p := fence.NewParams(append([]string{"ip", snmpsim.Host, "ipport", strconv.Itoa(s.Port), "plug", "2",
		"stonith_status_sleep", "0.01", "power_timeout", "2"}, kv...)...)
	m, err := fence.DefaultRegistry().Open(ctx(t), "", &fence.MethodOptions{Node: "worker-2", Name: "pdu-b", Driver: "fence_eaton_snmp", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { m.Device.(*Device).Close() })
	return m
}

// Bad input: each a clear error within the configured timeout, naming
// the device and the method, never holding a secret, never a success.
func TestBadInput(t *testing.T) {
	s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 4, Community: secret})
	apc := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4, Community: secret})
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
		{"wrong v3 passphrase", s, []string{"snmp_version", "3", "username", snmpsim.DefaultUser, "password", "Qz7-wrong-" + secret,
			"snmp_auth_prot", "SHA", "snmp_priv_passwd", snmpsim.DefaultPrivPass, "snmp_priv_prot", "AES"},
			fence.ErrLoginDenied, 2 * time.Second, "usmStatsWrongDigests"},
		{"wrong v3 privacy passphrase", s, []string{"snmp_version", "3", "username", snmpsim.DefaultUser, "password", snmpsim.DefaultAuthPass,
			"snmp_auth_prot", "SHA", "snmp_priv_passwd", "Qz7-wrong-" + secret, "snmp_priv_prot", "AES", "snmp_timeout", "0.3", "snmp_retries", "0"},
			ErrNoReply, 3 * time.Second, "wrong privacy passphrase"},
		{"not an Eaton", apc, []string{"snmp_version", "2c", "community", secret},
			ErrUnknownModel, 2 * time.Second, "sysObjectID .1.3.6.1.4.1.318.1.3.4.5 is none of the eaton driver's models"},
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
				assert.Contains(t, msg, "method pdu-b")
				assert.Contains(t, msg, fmt.Sprintf("eaton 127.0.0.1:%d", tc.sim.Port))
				assert.Contains(t, msg, tc.says)
				assert.NotContains(t, msg, secret)
			}
			assert.Equal(t, fence.StateOn, mustTruth(t, tc.sim, "2"))
		})
	}

	// Values outside the mapping: no state, never a success; the
	// Switched ePDU's 0 is a missing outlet.
	m := openParams(t, s, "snmp_version", "2c", "community", secret)
	for v, is := range map[int]error{3: fence.ErrBadState, 0: fence.ErrUnknownPlug} {
		require.NoError(t, s.SetRaw(2, v))
		res, err := fence.Do(ctx(t), m, fence.ActionStatus)
		require.Error(t, err)
		assert.ErrorIs(t, err, is)
		assert.Equal(t, fence.StateUnknown, res.State)
		res, err = fence.Do(ctx(t), m, fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced())
	}
}
