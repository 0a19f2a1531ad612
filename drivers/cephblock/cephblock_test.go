package cephblock_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/cephblock"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fencegroup"
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
		// Never a node's own address, nor a range holding one.
		{plug: "0.0.0.0", err: `"0.0.0.0" is or holds the unspecified address, never a node's address`},
		{plug: "::", err: "unspecified address"},
		{plug: "255.255.255.255", err: "broadcast address"},
		{plug: "255.255.255.252/30", err: "broadcast address"},
		{plug: "127.0.0.1", err: `"127.0.0.1" is a loopback address`},
		{plug: "::1", err: "loopback address"},
		{plug: "224.0.0.1", err: "multicast address"},
		{plug: "ff02::1", err: "multicast address"},
		{plug: "169.254.10.1", err: "link-local address"},
		{plug: "fe80::1", err: "link-local address"},
		{plug: "10.0.0.5, 10.0.0.5,10.0.0.5", want: []string{"10.0.0.5/32"}},
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

	// One address given 1,000 times is one command; more than
	// MaxPlugEntries different ones are refused.
	ps, err := cephblock.Prefixes(strings.Repeat("10.0.0.7,", 1000), 16)
	require.NoError(t, err)
	assert.Len(t, ps, 1)
	var many []string
	for i := range cephblock.MaxPlugEntries + 1 {
		many = append(many, fmt.Sprintf("10.0.%d.%d", i/200, i%200+1))
	}
	_, err = cephblock.Prefixes(strings.Join(many, ","), 16)
	assert.ErrorContains(t, err, "more than 64 addresses and CIDRs")
}

// A bad plug is refused with the parameters, as fencectl validate, a fence
// ConfigMap's validation and the controller's check run them, not first
// when the node must be fenced.
func TestCheckRefusesBadPlugs(t *testing.T) {
	for plug, want := range map[string]string{
		"10.0.0.0/24":  `parameter plug="10.0.0.0/24": 10.0.0.0/24 covers 256 addresses`,
		"node-1":       `parameter plug="node-1": "node-1" is not an address or a CIDR`,
		"0.0.0.0":      "never a node's address",
		"127.0.0.1":    "loopback",
		"10.0.0.5,::1": "loopback",
	} {
		err := cephblock.Driver.Check(fence.Address{}, fence.Params{"plug": plug})
		if assert.Error(t, err, plug) {
			assert.Contains(t, err.Error(), want, plug)
		}
	}
	assert.NoError(t, cephblock.Driver.Check(fence.Address{}, fence.Params{"plug": fence.PlugNodeAddresses}))
	assert.NoError(t, cephblock.Driver.Check(fence.Address{}, fence.Params{"plug": "127.0.0.1", "allow_loopback": "true"}))
}

func TestParseBlocklist(t *testing.T) {
	// As Ceph 16.2 prints it: the addresses, then the ranges.
	out := []byte(`[{"addr":"10.1.0.2:0/0","until":"2031-11-27T02:42:14.244351+0000"},{"addr":"[fd00::5]:0/0","until":"2031-11-27T02:42:14.244351+0000"}]` +
		`[{"range":"cidr:10.1.0.8:0/30","until":"2026-11-26T22:36:14.831373+0000"}]`)
	b, err := cephblock.ParseBlocklist(out)
	require.NoError(t, err)
	for plug, want := range map[string]bool{"10.1.0.2": true, "fd00::5": true, "10.1.0.8/30": true, "10.1.0.3": false, "10.1.0.8/29": false} {
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
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "id": "--admin-socket=/tmp/x"}, err: `parameter id="--admin-socket=/tmp/x": must not start with '-'`},
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "id": "fencer --keyring=/x"}, err: "want letters, digits"},
		{addr: "", params: fence.Params{"plug": "10.0.0.5", "conf": "-c/etc/x"}, err: `parameter conf="-c/etc/x": must not start with '-'`},
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

// The status against each entry's expiry, on a ceph that prints a fixed
// blocklist: an entry counts as an isolation only while it lasts at least
// half the method's expiry; one that lapses sooner, has lapsed but is still
// listed, or whose expiry does not parse counts as none, never off.
func TestStatusReadsTheExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ceph := filepath.Join(t.TempDir(), "ceph")
	list := `[{"addr":"10.2.0.1:0/0","until":"2031-11-30T12:00:00.000000+0000"},` +
		`{"addr":"10.2.0.2:0/0","until":"2026-12-01T13:00:00.000000+0000"},` +
		`{"addr":"10.2.0.3:0/0","until":"2026-12-01T11:00:00.000000+0000"},` +
		`{"addr":"10.2.0.4:0/0","until":"soon"}]`
	require.NoError(t, os.WriteFile(ceph, []byte("#!/bin/sh\necho '"+list+"'\n"), 0o755))
	d, err := cephblock.New(cephblock.Options{CLI: fencegroup.CLI{Path: ceph}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	for plug, want := range map[string]fence.State{
		"10.2.0.1":          fence.StateOff, // five years, the method's expiry
		"10.2.0.2":          fence.StateOn,  // an hour: Ceph's default
		"10.2.0.3":          fence.StateOn,  // lapsed, still listed
		"10.2.0.4":          fence.StateOn,  // an expiry that does not parse
		"10.2.0.9":          fence.StateOn,
		"10.2.0.1,10.2.0.2": fence.StateUnknown,
	} {
		st, err := d.Status(t.Context(), plug)
		require.NoError(t, err, plug)
		assert.Equal(t, want, st, plug)
	}
	// Read as the hour passes: half of a one-hour expiry is the bar.
	d, err = cephblock.New(cephblock.Options{CLI: fencegroup.CLI{Path: ceph}, Expire: time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	st, err := d.Status(t.Context(), "10.2.0.2")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "an hour left of a method whose entries last an hour")
}
