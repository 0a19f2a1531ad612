package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

func testRegistry(t *testing.T) (*fence.Registry, *[]fence.OpenOptions) {
	t.Helper()
	reg := fence.NewRegistry()
	var opened []fence.OpenOptions
	require.NoError(t, reg.Register(fence.Driver{
		Name: "pdu", Agents: []string{"fence_pdu_snmp"},
		Open: func(ctx context.Context, o fence.OpenOptions) (fence.Device, error) {
			opened = append(opened, o)
			if o.Params["community"] == "bad" {
				return nil, &fence.ParamError{Key: "community", Value: "bad", Reason: "refused"}
			}
			return fake.New(fake.Options{}), nil
		},
	}))
	return reg, &opened
}

func TestRegistry(t *testing.T) {
	reg, opened := testRegistry(t)
	assert.Error(t, reg.Register(fence.Driver{Name: "PDU", Open: func(context.Context, fence.OpenOptions) (fence.Device, error) { return nil, nil }}), "names are case-insensitive")
	assert.Error(t, reg.Register(fence.Driver{Name: "x"}), "Open is required")

	for _, name := range []string{"pdu", "PDU", "fence_pdu_snmp", "pdu+udp"} {
		_, ok := reg.Lookup(name)
		assert.True(t, ok, name)
	}

	m, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "node-2", Name: "pdu-off", Driver: "fence_pdu_snmp", Params: fence.NewParams("ipaddr", "10.0.0.9", "ipport", "1161", "plug", "3", "action", "off", "must_sucess", "no", "power_timeout", "5")})
	require.NoError(t, err)
	assert.Equal(t, "pdu", m.Driver)
	assert.Equal(t, "10.0.0.9:1161", m.Host)
	assert.Equal(t, "3", m.Plug)
	assert.Equal(t, fence.ActionOff, m.Action)
	assert.True(t, m.BestEffort)
	assert.Equal(t, "5s", m.Options.PowerTimeout.String())
	require.Len(t, *opened, 1)
	assert.Equal(t, fence.Address{Driver: "pdu", Host: "10.0.0.9", Port: 1161}, (*opened)[0].Address)

	// The address scheme picks the driver.
	m, err = reg.Open(t.Context(), "", &fence.MethodOptions{Node: "node-2", Name: "pdu-off", Params: fence.NewParams("address", "pdu://10.0.0.9")})
	require.NoError(t, err)
	assert.Equal(t, "pdu", m.Driver)
}

func TestRegistryOpenErrors(t *testing.T) {
	reg, _ := testRegistry(t)
	cases := []struct {
		driver string
		params fence.Params
		field  string
		is     error
	}{
		{"", fence.NewParams("ip", "10.0.0.9"), "driver", fence.ErrConfig},
		{"ipmi", fence.NewParams("ip", "10.0.0.9"), "driver", fence.ErrUnknownDriver},
		{"pdu", fence.NewParams("address", "ipmi://x"), "address", fence.ErrConfig},
		{"pdu", fence.NewParams("address", "pdu://x:99999"), "address", nil},
		{"pdu", fence.NewParams("ip", "x", "ipport", "0"), "ipport", fence.ErrConfig},
		{"pdu", fence.NewParams("ip", "x", "power_wait", "later"), "power_wait", fence.ErrConfig},
		{"pdu", fence.NewParams("ip", "x", "action", "explode"), "action", nil},
		{"pdu", fence.NewParams("ip", "x", "must_sucess", "perhaps"), "must_sucess", fence.ErrConfig},
		{"pdu", fence.NewParams("ip", "x", "community", "bad", "password", "hunter2"), "community", fence.ErrConfig},
	}
	for _, c := range cases {
		t.Run(c.field+"/"+c.params.String(), func(t *testing.T) {
			_, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "node-2", Name: "pdu-off", Driver: c.driver, Params: c.params})
			require.Error(t, err)
			var fe *fence.Error
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.field, fe.Field)
			assert.Equal(t, "node-2", fe.Node)
			assert.Equal(t, "pdu-off", fe.Method)
			assert.Contains(t, err.Error(), "field "+c.field)
			assert.True(t, fence.IsNotDone(err))
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
			assert.NotContains(t, err.Error(), "hunter2")
			assert.NotContains(t, err.Error(), `"bad"`, "secret values are never quoted")
		})
	}
}

func TestRegistryAgentFallback(t *testing.T) {
	reg, _ := testRegistry(t)
	var got fence.OpenOptions
	require.NoError(t, reg.Register(fence.Driver{Name: fence.AgentDriver, IOTimeout: time.Minute,
		Open: func(ctx context.Context, o fence.OpenOptions) (fence.Device, error) {
			got = o
			return fake.New(fake.Options{}), nil
		}}))
	// A native driver stands in for its agents...
	m, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "n", Name: "m", Driver: "fence_pdu_snmp", Params: fence.NewParams("ip", "x")})
	require.NoError(t, err)
	assert.Equal(t, "pdu", m.Driver)
	// ...and any other agent runs through the agent driver.
	p := fence.NewParams("ip", "x")
	m, err = reg.Open(t.Context(), "", &fence.MethodOptions{Node: "n", Name: "m", Driver: "fence_wti", Params: p})
	require.NoError(t, err)
	assert.Equal(t, fence.AgentDriver, m.Driver)
	assert.Equal(t, "fence_wti", got.Params["agent"])
	assert.NotContains(t, p, "agent", "the caller's params are not changed")
	assert.Equal(t, time.Minute, m.Options.IOTimeout, "the driver's default I/O timeout")
	_, err = reg.Open(t.Context(), "", &fence.MethodOptions{Node: "n", Name: "m", Driver: "wti", Params: fence.NewParams("ip", "x")})
	assert.ErrorIs(t, err, fence.ErrUnknownDriver)

	// Two drivers cannot claim one agent name.
	err = reg.Register(fence.Driver{Name: "pdu2", Agents: []string{"FENCE_PDU_SNMP"},
		Open: func(context.Context, fence.OpenOptions) (fence.Device, error) { return nil, nil }})
	assert.ErrorContains(t, err, "claimed")
}

// An address given both as the URL and in the parameters is refused, naming
// the field: the method would otherwise switch whichever one won.
func TestOpenURLAndAddressParam(t *testing.T) {
	for _, key := range []string{"address", "ip", "ipaddr"} {
		_, err := fence.Open(t.Context(), "fake://a", &fence.MethodOptions{Node: "n1", Name: "m", Params: fence.NewParams(key, "fake://b")})
		var fe *fence.Error
		if !errors.As(err, &fe) || fe.Field != "address" || fe.Node != "n1" || fe.Method != "m" || !fence.IsNotDone(err) {
			t.Errorf("%s: got %v", key, err)
		}
	}
}

func TestIgnoredParams(t *testing.T) {
	got := fence.IgnoredParams("fence_x",
		fence.ParamSpec{Name: "x_path", Type: "string", Default: "/usr/bin/x"},
		fence.ParamSpec{Name: "login_timeout", Description: "The driver logs in nowhere", Type: "second"})
	assert.Equal(t, []fence.ParamSpec{
		{Name: "x_path", Description: "Accepted for compatibility with fence_x; not used by the native driver", Type: "string", Default: "/usr/bin/x"},
		{Name: "login_timeout", Description: "The driver logs in nowhere", Type: "second"},
	}, got)
}

func TestCheckParams(t *testing.T) {
	check := fence.CheckParams(func(a fence.Address, p fence.Params) (string, error) {
		if _, ok := p.Get("plug"); !ok {
			return "", &fence.ParamError{Key: "plug", Reason: "required"}
		}
		return a.Host, nil
	})
	assert.NoError(t, check(fence.Address{Host: "h"}, fence.NewParams("plug", "1")))
	var pe *fence.ParamError
	require.ErrorAs(t, check(fence.Address{Host: "h"}, nil), &pe)
	assert.Equal(t, "plug", pe.Key)
}
