package cephblock_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/cephblock"
	"github.com/fencekit/fencekit/fence"
)

func TestPrefixes(t *testing.T) {
	for _, tc := range []struct {
		plug string
		want []string
		err  string
	}{
		{plug: "10.0.0.5", want: []string{"10.0.0.5/32"}},
		{plug: "10.0.0.5, 10.0.0.6 fd00::5", want: []string{"10.0.0.5/32", "10.0.0.6/32", "fd00::5/128"}},
		{plug: "10.0.0.8/29", want: []string{"10.0.0.8/29"}},
		{plug: "10.0.0.0/24", err: "covers 256 addresses, more than max_addresses (16)"},
		{plug: "0.0.0.0/0", err: "more than max_addresses"},
		{plug: "fd00::/64", err: "covers 18446744073709551616 addresses"},
		{plug: "10.0.0.9/29", err: "has host bits set (did you mean 10.0.0.8/29?)"},
		{plug: "node-1", err: `"node-1" is not an address or a CIDR`},
		{plug: "fe80::1%eth0", err: "want a plain IPv4 or IPv6 address"},
		{plug: "", err: "no address to blocklist"},
		{plug: " , ", err: "no address to blocklist"},
		{plug: fence.PlugNodeAddresses, err: "stands for the node's addresses"},
	} {
		ps, err := cephblock.Prefixes(tc.plug, cephblock.DefaultMaxAddresses)
		if tc.err != "" {
			require.Error(t, err, tc.plug)
			assert.Contains(t, err.Error(), tc.err, tc.plug)
			assert.ErrorIs(t, err, fence.ErrUnknownPlug, tc.plug)
			continue
		}
		require.NoError(t, err, tc.plug)
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		assert.Equal(t, tc.want, got, tc.plug)
	}
	_, err := cephblock.Prefixes("", 16)
	assert.True(t, errors.Is(err, cephblock.ErrNoAddress))
}

func TestParseBlocklist(t *testing.T) {
	// As Ceph 16.2 prints it: the addresses, then the ranges.
	out := []byte(`[{"addr":"127.0.0.2:0/0","until":"2031-11-27T02:42:14.244351+0000"},{"addr":"[fd00::5]:0/0","until":"2031-11-27T02:42:14.244351+0000"}]` +
		`[{"range":"cidr:127.0.0.8:0/30","until":"2026-11-26T22:36:14.831373+0000"}]`)
	b, err := cephblock.ParseBlocklist(out)
	require.NoError(t, err)
	for plug, want := range map[string]bool{"127.0.0.2": true, "fd00::5": true, "127.0.0.8/30": true, "127.0.0.3": false, "127.0.0.8/29": false} {
		ps, err := cephblock.Prefixes(plug, 16)
		require.NoError(t, err)
		assert.Equal(t, want, b.Has(ps[0]), plug)
	}
	b, err = cephblock.ParseBlocklist([]byte("[]"))
	require.NoError(t, err, "a cluster without ranges prints one list")
	assert.Empty(t, b.Addrs)
	for _, bad := range []string{"", "listed 0 entries", "[][][]", `{"addr":1}`} {
		_, err := cephblock.ParseBlocklist([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestOptionsFromParams(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		params fence.Params
		err    string
	}{
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "conf": "/etc/ceph/ceph.conf", "id": "fencer"}},
		{addr: "cephblock://10.0.0.1:3300", params: fence.Params{"plug": "10.0.0.5"}},
		{addr: "cephblock://10.0.0.1/x", params: fence.Params{"plug": "10.0.0.5"}, err: "with no path or query"},
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "id": "client.fencer"}, err: `without "client."`},
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "expire": "0.5"}, err: "at least one second"},
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "max_addresses": "0"}, err: "want 1 to 65536"},
	} {
		var a fence.Address
		if tc.addr != "" {
			var err error
			a, err = fence.ParseAddress(tc.addr)
			require.NoError(t, err, tc.addr)
		}
		_, err := cephblock.OptionsFromParams(a, tc.params)
		if tc.err == "" {
			assert.NoError(t, err, tc.addr)
		} else if assert.Error(t, err, tc.addr) {
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}
