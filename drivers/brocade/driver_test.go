package brocade

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fencekit/fencekit/fence"
)

// knownHostsFile writes an empty known_hosts file.
func knownHostsFile(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	return f
}

func TestRegistered(t *testing.T) {
	for _, name := range []string{"brocade", "fence_brocade", "BROCADE+ssh"} {
		d, ok := fence.DefaultRegistry().Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "brocade", d.Name)
	}
	for _, p := range Driver.Params {
		assert.NotEmpty(t, p.Description, p.Name)
		assert.Equal(t, fence.CanonicalKey(p.Name), p.Name)
	}
}

func TestOptionsFromParams(t *testing.T) {
	kh := knownHostsFile(t)
	a, err := fence.ParseAddress("brocade+ssh://fc-sw1:2222")
	require.NoError(t, err)
	o, err := OptionsFromParams(a, fence.NewParams(
		"login", "admin", "passwd", "s3cret", "identity-file", "/k", "known_hosts", kh+", /etc/other",
		"host_key_fingerprint", "SHA256:abc,SHA256:def", "login_timeout", "2.5", "command_timeout", "7",
		"cmd_prompt", "> ", "command_mode", "EXEC", "ssh", "", "secure", "1"))
	require.NoError(t, err)
	assert.Equal(t, Options{
		Host: "fc-sw1", Port: 2222, Username: "admin", Password: fence.NewSecret("s3cret"), IdentityFile: "/k",
		KnownHostsFiles: []string{kh, "/etc/other"}, HostKeyFingerprints: []string{"SHA256:abc", "SHA256:def"},
		LoginTimeout: 2500 * time.Millisecond, CommandTimeout: 7 * time.Second, Prompt: "> ", Mode: ModeExec,
	}, o)

	// The agent's command line, as fencectl hands it over.
	p := fence.NewParams("ip", "10.0.0.9", "ipport", "22", "username", "admin", "password", "pw",
		"ssh_options", `-oUserKnownHostsFile=/tmp/kh -o "ConnectTimeout 3" -i /root/.ssh/fc -p 2022 -oPubkeyAuthentication=no -4`)
	a, _, err = fence.AddressFromParams(p)
	require.NoError(t, err)
	o, err = OptionsFromParams(a, p)
	require.NoError(t, err)
	assert.Equal(t, []string{"/tmp/kh"}, o.KnownHostsFiles)
	assert.Equal(t, 3*time.Second, o.LoginTimeout)
	assert.Equal(t, "/root/.ssh/fc", o.IdentityFile)
	assert.Equal(t, 2022, o.Port)
	assert.False(t, o.InsecureIgnoreHostKey)

	o, err = OptionsFromParams(a, fence.NewParams("ssh_options", "-oStrictHostKeyChecking=no -oUserKnownHostsFile=/dev/null"))
	require.NoError(t, err)
	assert.True(t, o.InsecureIgnoreHostKey)
	assert.Empty(t, o.KnownHostsFiles)

	for params, key := range map[*fence.Params]string{
		{"ssh": "no"}:                             "ssh",
		{"secure": "0"}:                           "secure",
		{"telnet": "yes"}:                         "telnet",
		{"login_timeout": "0"}:                    "login_timeout",
		{"command_timeout": "soon"}:               "command_timeout",
		{"command_mode": "telnet"}:                "command_mode",
		{"ssh_insecure": "perhaps"}:               "ssh_insecure",
		{"ssh_options": "-L 8080:x:80"}:           "ssh_options",
		{"ssh_options": "-oProxyCommand=nc x 22"}: "ssh_options",
		{"ssh_options": "-oStrictHostKeyChecking=no -oUserKnownHostsFile=/tmp/kh"}: "ssh_options",
		{"ssh_options": "-p"}:          "ssh_options",
		{"ssh_options": "'unbalanced"}: "ssh_options",
	} {
		_, err := OptionsFromParams(fence.Address{Host: "h"}, *params)
		require.Error(t, err, key)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe, key)
		assert.Equal(t, key, pe.Key)
		assert.ErrorIs(t, err, fence.ErrConfig)
	}
	for _, addr := range []string{"brocade+telnet://sw", "ipmi://sw", "brocade://sw/path", "brocade://sw?x=1"} {
		a, err := fence.ParseAddress(addr)
		require.NoError(t, err)
		_, err = OptionsFromParams(a, fence.Params{})
		assert.Error(t, err, addr)
	}
}

func TestNewChecks(t *testing.T) {
	kh := knownHostsFile(t)
	base := Options{Host: "sw", Username: "admin", Password: fence.NewSecret("pw-Secret-1"), KnownHostsFiles: []string{kh}}
	d, err := New(base)
	require.NoError(t, err)
	assert.Equal(t, "sw:22", d.Addr())

	for name, tc := range map[string]struct {
		mod func(*Options)
		key string
	}{
		"no host":            {func(o *Options) { o.Host = " " }, "ip"},
		"bad port":           {func(o *Options) { o.Port = 70000 }, "ipport"},
		"no user":            {func(o *Options) { o.Username = "" }, "username"},
		"no credential":      {func(o *Options) { o.Password = fence.NewSecret("") }, "password"},
		"bad prompt":         {func(o *Options) { o.Prompt = "(" }, "command_prompt"},
		"missing key":        {func(o *Options) { o.IdentityFile = "/nonexistent/key" }, "identity_file"},
		"not a key":          {func(o *Options) { o.IdentityFile = kh }, "identity_file"},
		"missing known":      {func(o *Options) { o.KnownHostsFiles = []string{"/nonexistent/kh"} }, "known_hosts"},
		"bad fingerprint":    {func(o *Options) { o.HostKeyFingerprints = []string{"SHA256:short"} }, "host_key_fingerprint"},
		"md5 fingerprint":    {func(o *Options) { o.HostKeyFingerprints = []string{"MD5:aa:bb"} }, "host_key_fingerprint"},
		"not a fingerprint":  {func(o *Options) { o.HostKeyFingerprints = []string{"abc"} }, "host_key_fingerprint"},
		"insecure and known": {func(o *Options) { o.InsecureIgnoreHostKey = true }, "ssh_insecure"},
		"callback and known": {func(o *Options) { o.HostKeyCallback = ssh.InsecureIgnoreHostKey() }, "known_hosts"},
	} {
		o := base
		tc.mod(&o)
		_, err := New(o)
		require.Error(t, err, name)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, tc.key, pe.Key, name)
		assert.NotContains(t, err.Error(), "pw-Secret-1", name)
	}

	// No host key option and no known_hosts file at all: refused, with
	// the way out named.
	t.Setenv("HOME", t.TempDir())
	if _, err := os.Stat("/etc/ssh/ssh_known_hosts"); err == nil {
		t.Skip("/etc/ssh/ssh_known_hosts exists")
	}
	o := base
	o.KnownHostsFiles = nil
	_, err = New(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ssh_insecure=yes")
	assert.Contains(t, err.Error(), "host_key_fingerprint")
	o.InsecureIgnoreHostKey = true
	_, err = New(o)
	require.NoError(t, err)
	// The user's known_hosts is the default when it exists.
	home := os.Getenv("HOME")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), nil, 0o600))
	o.InsecureIgnoreHostKey = false
	d, err = New(o)
	require.NoError(t, err)
	assert.NotNil(t, d.known)
}

// Opened through the registry, as fencectl and fence's configuration do.
func TestRegistryOpen(t *testing.T) {
	kh := knownHostsFile(t)
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "node-3", Name: "fc-a", Driver: "fence_brocade", Params: fence.NewParams("ipaddr", "127.0.0.1", "ipport", "1", "login", "admin", "passwd", "pw-Secret-2", "known_hosts", kh, "plug", "7", "login_timeout", "2")})
	require.NoError(t, err)
	d := m.Device.(*Device)
	defer d.Close()
	assert.Equal(t, "7", m.Plug)
	assert.Equal(t, "127.0.0.1:1", d.Addr())
	_, err = fence.Do(context.Background(), m, fence.ActionOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.Contains(t, err.Error(), "node node-3, method fc-a, driver brocade")
	assert.Contains(t, err.Error(), "brocade ssh 127.0.0.1:1: connect:")
	assert.NotContains(t, err.Error(), "pw-Secret-2")

	_, err = fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "node-3", Name: "fc-a", Params: fence.NewParams("address", "brocade+ssh://sw:22", "username", "admin", "password", "pw-Secret-2", "ssh_insecure", "yes", "known_hosts", kh)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field ssh_insecure")
	assert.NotContains(t, err.Error(), "pw-Secret-2")
}
