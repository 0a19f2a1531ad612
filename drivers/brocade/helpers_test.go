package brocade

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/testtool"
)

// Timeouts of the tests: generous, as the machine may be loaded, and
// bounded.
const (
	testLogin   = 20 * time.Second
	testCommand = 20 * time.Second
)

// start starts an emulated switch for t.
func start(t testing.TB, o brocadesim.Options) *brocadesim.Switch {
	t.Helper()
	return brocadesim.Start(t, o)
}

// passwordOptions are Options to log in to sw with its password, its
// host key verified by its known_hosts file.
func passwordOptions(sw *brocadesim.Switch) Options {
	return Options{
		Host: brocadesim.Host, Port: sw.Port, Username: sw.User, Password: fence.NewSecret(sw.Password),
		KnownHostsFiles: []string{sw.KnownHosts},
		LoginTimeout:    testLogin, CommandTimeout: testCommand,
	}
}

// keyOptions are Options to log in to sw with its client key, its host
// key pinned by fingerprint.
func keyOptions(sw *brocadesim.Switch) Options {
	return Options{
		Host: brocadesim.Host, Port: sw.Port, Username: sw.User, IdentityFile: sw.ClientKey,
		HostKeyFingerprints: []string{sw.Fingerprint},
		LoginTimeout:        testLogin, CommandTimeout: testCommand,
	}
}

// openDevice opens a device, closed when t ends.
func openDevice(t testing.TB, o Options) *Device {
	t.Helper()
	d, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context { return testtool.Timeout(t, 60*time.Second) }

// method wraps a device for fence.Do, with fast polling.
func method(d fence.Device, plug string) *fence.Method {
	return &fence.Method{Name: "fc-fence", Node: "node-1", Driver: "brocade", Device: d, Plug: plug, Options: fence.Options{
		PollInterval: 10 * time.Millisecond, PowerTimeout: 20 * time.Second, IOTimeout: 30 * time.Second,
	}}
}

// truth reads a port's state on the switch, failing t on an error.
func truth(t testing.TB, sw *brocadesim.Switch, plug string) fence.State {
	t.Helper()
	st, err := sw.Truth(plug)
	require.NoError(t, err)
	return st
}
