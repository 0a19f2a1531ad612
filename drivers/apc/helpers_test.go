package apc

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// secret is a community that no error or output may ever hold.
const secret = "Qz7-unl1kely-c0mmunity"

// version is how a test reaches a simulator: an SNMP version and its
// credentials, as Options and as the agent's options.
type version struct {
	name string
	set  func(o *Options, s *snmpsim.Sim)
	args func(s *snmpsim.Sim) []string
}

var (
	// v1 is the agent's default: SNMPv1 and community private, no options.
	v1 = version{"v1", func(o *Options, s *snmpsim.Sim) { o.Version, o.Community = "1", fence.NewSecret(s.Options.Community) },
		func(s *snmpsim.Sim) []string {
			if s.Options.Community == snmpsim.DefaultCommunity {
				return nil
			}
			return []string{"--community", s.Options.Community}
		}}
	v2 = version{"v2c", func(o *Options, s *snmpsim.Sim) { o.Version, o.Community = "2c", fence.NewSecret(s.Options.Community) },
		func(s *snmpsim.Sim) []string {
			return []string{"--snmp-version", "2c", "--community", s.Options.Community}
		}}
	v3 = version{"v3", func(o *Options, s *snmpsim.Sim) {
		o.Version, o.Username = "3", snmpsim.DefaultUser
		o.AuthProtocol, o.AuthPassword = "SHA", fence.NewSecret(snmpsim.DefaultAuthPass)
		o.PrivProtocol, o.PrivPassword = "AES", fence.NewSecret(snmpsim.DefaultPrivPass)
	}, func(s *snmpsim.Sim) []string {
		return []string{"--snmp-version", "3", "--username", snmpsim.DefaultUser, "--password", snmpsim.DefaultAuthPass,
			"--snmp-auth-prot", "SHA", "--snmp-sec-level", "authPriv", "--snmp-priv-prot", "AES", "--snmp-priv-passwd", snmpsim.DefaultPrivPass}
	}}
)

// openSim returns a device for s, closed when t ends.
func openSim(t testing.TB, s *snmpsim.Sim, v version, mod func(*Options)) *Device {
	t.Helper()
	o := Options{Host: snmpsim.Host, Port: s.Port, Timeout: 2 * time.Second}
	v.set(&o, s)
	if mod != nil {
		mod(&o)
	}
	d, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// method wraps a device for fence.Do, with fast polling.
func method(d fence.Device, plug string) *fence.Method {
	return &fence.Method{Name: "pdu-off", Node: "node-1", Driver: "apc", Device: d, Plug: plug, Options: fence.Options{
		PollInterval: 10 * time.Millisecond, PowerTimeout: 5 * time.Second,
	}}
}

// outletOf maps a plug of the simulator (a number, or a name nodeN) to
// its number.
func outletOf(s *snmpsim.Sim, plug string) string {
	for n, name := range s.Options.Names {
		if name == plug {
			return strconv.Itoa(n)
		}
	}
	return strings.TrimPrefix(plug, "node")
}

// result is what one run of a program printed and returned.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runProc runs a program as a process (see proctest.Run).
func runProc(t testing.TB, bin string, args ...string) result {
	t.Helper()
	r := proctest.Run(t, nil, bin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code, took: r.Took}
}

// agentName is the ClusterLabs agent the driver stands in for.
const agentName = "fence_apc_snmp"

// requireAgent returns the agent's path, or skips t (fails it under
// CI=true) when it or net-snmp's tools are missing.
func requireAgent(t testing.TB) string {
	t.Helper()
	snmpsim.RequireTool(t, "snmpget", "snmp")
	return snmpsim.RequireTool(t, agentName, "fence-agents")
}

// agentArgs are the agent's options to run action on plug of s.
func agentArgs(s *snmpsim.Sim, v version, plug, action string, extra ...string) []string {
	args := []string{"--ip", snmpsim.Host, "--ipport", strconv.Itoa(s.Port)}
	args = append(args, v.args(s)...)
	if plug != "" {
		args = append(args, "--plug", plug)
	}
	args = append(args, "--action", action)
	return append(args, extra...)
}

// TestMain removes the fencectl the tests built.
func TestMain(m *testing.M) { proctest.Main(m) }

// fencectl returns cmd/fencectl built once per test binary, or skips t
// when that fencectl does not know the apc driver.
func fencectl(t testing.TB) string {
	t.Helper()
	return proctest.Fencectl(t, "apc", "--snmp-priv-prot")
}
