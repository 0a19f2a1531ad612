package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func TestMetadataRealAgents(t *testing.T) {
	for _, c := range []struct {
		agent          string
		cycle, list    bool
		required       []string
		secrets        []string
		plug           string
		deprecatedHave string
	}{
		{agent: "fence_dummy", required: nil},
		{agent: "fence_ipmilan", cycle: true, secrets: []string{"password", "hexadecimal_kg"}, plug: "plug"},
		{agent: "fence_redfish", secrets: []string{"password"}, required: []string{"username"}, plug: "plug"},
		{agent: "fence_apc_snmp", list: true, secrets: []string{"password", "community", "snmp_priv_passwd"}, required: []string{"ip", "plug"}, plug: "plug"},
		{agent: "fence_apc", list: true, required: []string{"ip", "username", "plug"}, secrets: []string{"password"}, plug: "plug"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			requireAgent(t, c.agent)
			m, err := Metadata(ctxFor(t, time.Minute), c.agent)
			require.NoError(t, err)
			assert.Equal(t, c.agent, m.Name)
			assert.NotEmpty(t, m.ShortDesc)
			for _, a := range []string{"on", "off", "status", "monitor", "metadata"} {
				assert.True(t, m.HasAction(a), a)
			}
			assert.Equal(t, c.cycle, m.CanCycle(), "CanCycle")
			assert.Equal(t, c.list, m.CanList(), "CanList")
			var req, sec []string
			for _, p := range m.Params {
				if p.Required && !p.Deprecated && p.Key != "action" {
					req = append(req, p.Key)
				}
				if p.Secret && !p.Deprecated && !strings.HasSuffix(p.Key, "_script") {
					sec = append(sec, p.Key)
				}
				assert.Contains(t, []string{"string", "integer", "second", "boolean", "select"}, p.Type, p.Name)
			}
			assert.ElementsMatch(t, c.required, req)
			assert.ElementsMatch(t, c.secrets, sec)
			if c.plug != "" {
				p, ok := m.Param("port")
				require.True(t, ok)
				assert.True(t, p.Deprecated)
				assert.Equal(t, c.plug, m.identity(p), "the deprecated name's current one")
			}
			p, ok := m.Param("power-timeout")
			require.True(t, ok)
			assert.Equal(t, "second", p.Type)
			assert.Equal(t, "20", p.Default)

			again, err := Metadata(ctxFor(t, time.Minute), c.agent)
			require.NoError(t, err)
			assert.Same(t, m, again, "cached")
		})
	}
}

func TestMetadataIPMILanDetails(t *testing.T) {
	requireAgent(t, "fence_ipmilan")
	m, err := Metadata(ctxFor(t, time.Minute), "fence_ipmilan")
	require.NoError(t, err)
	assert.Contains(t, m.Symlinks, "fence_idrac")
	ip, ok := m.Param("ip")
	require.True(t, ok)
	assert.Equal(t, "ipaddr", ip.Obsoletes)
	ipaddr, ok := m.Param("ipaddr")
	require.True(t, ok)
	assert.Equal(t, "ip", m.identity(ipaddr))
	login := m.Params[slices.IndexFunc(m.Params, func(p Param) bool { return p.Name == "login" })]
	assert.True(t, login.Deprecated)
	assert.Equal(t, "username", m.identity(login))
	method, _ := m.Param("method")
	assert.Equal(t, "select", method.Type)
	assert.Equal(t, []string{"onoff", "cycle"}, method.Choices)
	lanplus, _ := m.Param("lanplus")
	assert.Equal(t, "boolean", lanplus.Type)
	specs := m.Specs()
	i := slices.IndexFunc(specs, func(s fence.ParamSpec) bool { return s.Name == "username" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, []string{"login"}, specs[i].Aliases)
	i = slices.IndexFunc(specs, func(s fence.ParamSpec) bool { return s.Name == "password" })
	require.GreaterOrEqual(t, i, 0)
	assert.True(t, specs[i].Secret)
}

// TestMetadataEveryAgent reads the metadata of every installed agent: each
// parses, and New accepts or refuses it cleanly.
func TestMetadataEveryAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every installed agent")
	}
	requireAgent(t, "fence_dummy")
	paths, _ := filepath.Glob("/usr/sbin/fence_*")
	require.NotEmpty(t, paths)
	for _, p := range paths {
		if executable(p) != nil || filepath.Base(p) == "fence_ack_manual" {
			continue // fence_ack_manual is a manual override, no agent
		}
		m, err := Metadata(ctxFor(t, time.Minute), p)
		if !assert.NoError(t, err, p) {
			continue
		}
		assert.NotEmpty(t, m.Params, p)
		for _, q := range m.Params {
			id := m.identity(q)
			_, ok := m.Param(id)
			assert.True(t, ok, "%s: %s's identity %s", p, q.Name, id)
		}
	}
}

func TestParseMetadataRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"Empty":     "",
		"Usage":     "Usage: fence_x [options]\n",
		"OtherRoot": `<?xml version="1.0" ?><html></html>`,
		"NoName":    `<resource-agent><actions><action name="on"/></actions></resource-agent>`,
		"NoActions": `<resource-agent name="fence_x"><parameters/></resource-agent>`,
		"BadParam":  `<resource-agent name="fence_x"><parameters><parameter name="a=b"/></parameters><actions><action name="on"/></actions></resource-agent>`,
		"Truncated": `<resource-agent name="fence_x"><parameters><parameter name="ip">`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseMetadata([]byte(doc))
			assert.ErrorIs(t, err, ErrMetadata)
		})
	}
}

func TestMetadataCacheFollowsTheFile(t *testing.T) {
	f := newFake(t, "fence_changes", commonParams, commonActions, "")
	m1, err := Metadata(ctxFor(t, time.Minute), f.path)
	require.NoError(t, err)
	m2, err := Metadata(ctxFor(t, time.Minute), f.path)
	require.NoError(t, err)
	assert.Same(t, m1, m2)
	// A new version of the agent (another size) is read again.
	b, err := os.ReadFile(f.path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.path, append(b, "# upgraded\n"...), 0o755))
	m3, err := Metadata(ctxFor(t, time.Minute), f.path)
	require.NoError(t, err)
	assert.NotSame(t, m1, m3)
	assert.Equal(t, m1.Name, m3.Name)
}

func TestLookPath(t *testing.T) {
	requireAgent(t, "fence_dummy")
	p, err := LookPath("fence_dummy")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(p))
	p2, err := LookPath(p)
	require.NoError(t, err)
	assert.Equal(t, p, p2)
	plain := filepath.Join(t.TempDir(), "fence_plain")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	for _, bad := range []string{"", "rm", "./fence_dummy", "bin/fence_dummy", "fence_dummy; rm -rf /", "fence_no_such_agent", "/nonexistent/fence_x", "/etc", plain} {
		_, err := LookPath(bad)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe, "%q", bad)
		assert.Equal(t, "agent", pe.Key)
	}
}

func TestIsSecret(t *testing.T) {
	for _, k := range []string{"password", "passwd", "password_script", "community", "snmp_priv_passwd", "apikey", "api-key", "access_key", "secret_key", "hexadecimal_kg", "token", "key"} {
		assert.True(t, IsSecret(k), k)
	}
	for _, k := range []string{"username", "ip", "plug", "identity_file", "ssl_insecure", "tlskey_path"} {
		assert.False(t, IsSecret(k), k)
	}
}

func TestStdinQuoting(t *testing.T) {
	got := stdin([]stdinLine{{"a", "plain"}, {"b", " lead"}, {"c", "trail "}, {"d", `"quoted"`}, {"e", `mid"dle`}, {"f", ""}, {"g", "x=y"}})
	assert.Equal(t, "a=plain\nb=\" lead\"\nc=\"trail \"\nd=\"\"quoted\"\"\ne=mid\"dle\nf=\ng=x=y\n", got)
}
