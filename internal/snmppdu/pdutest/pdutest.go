// Package pdutest is the test suite and harness the SNMP PDU drivers
// (drivers/apc, drivers/eaton) share, so that each driver's tests say only
// what differs (its kind, models, agent and bad input):
//
//   - Driver.Run: the registry, fence's conformance suite on every model
//     and SNMP version, agreement with the ClusterLabs agent and with
//     fencectl on a live snmpd simulator, a missing outlet, fencectl's
//     agent driver;
//   - Driver.BadInput, Driver.FenceAgentsRemediationCommandLines, and
//     Driver.VerifiedOff, the benchmark beside the agent and fencectl;
//   - the harness under them: the SNMP versions a test reaches the
//     simulator with, a device opened on it, and the agent's options for
//     the same PDU.
package pdutest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmppdu"
	"github.com/fencekit/fencekit/internal/snmpsim"
	"github.com/fencekit/fencekit/internal/testtool"
)

// Secret is a community that no error or output may ever hold.
const Secret = "Qz7-unl1kely-c0mmunity"

// Version is how a test reaches a simulator: an SNMP version and its
// credentials, as a Config and as the agent's options.
type Version struct {
	Name string
	Set  func(c *snmppdu.Config, s *snmpsim.Sim)
	Args func(s *snmpsim.Sim) []string
}

var (
	// V1 is the agents' default: SNMPv1 and community private, no options.
	V1 = Version{"v1", func(c *snmppdu.Config, s *snmpsim.Sim) {
		c.Version, c.Community = "1", fence.NewSecret(s.Options.Community)
	},
		func(s *snmpsim.Sim) []string {
			if s.Options.Community == snmpsim.DefaultCommunity {
				return nil
			}
			return []string{"--community", s.Options.Community}
		}}
	// V2 is SNMPv2c with the simulator's community.
	V2 = Version{"v2c", func(c *snmppdu.Config, s *snmpsim.Sim) {
		c.Version, c.Community = "2c", fence.NewSecret(s.Options.Community)
	},
		func(s *snmpsim.Sim) []string {
			return []string{"--snmp-version", "2c", "--community", s.Options.Community}
		}}
	// V3 is SNMPv3 authPriv with SHA and AES.
	V3 = Version{"v3", func(c *snmppdu.Config, s *snmpsim.Sim) {
		c.Version, c.Username = "3", snmpsim.DefaultUser
		c.AuthProtocol, c.AuthPassword = "SHA", fence.NewSecret(snmpsim.DefaultAuthPass)
		c.PrivProtocol, c.PrivPassword = "AES", fence.NewSecret(snmpsim.DefaultPrivPass)
	}, func(s *snmpsim.Sim) []string {
		return []string{"--snmp-version", "3", "--username", snmpsim.DefaultUser, "--password", snmpsim.DefaultAuthPass,
			"--snmp-auth-prot", "SHA", "--snmp-sec-level", "authPriv", "--snmp-priv-prot", "AES", "--snmp-priv-passwd", snmpsim.DefaultPrivPass}
	}}
)

// OpenSim returns a device of kind k for s, reached with v and changed by
// mod, closed when t ends.
func OpenSim(t testing.TB, k snmppdu.Kind, s *snmpsim.Sim, v Version, mod func(*snmppdu.Config)) *snmppdu.Device {
	t.Helper()
	c := snmppdu.Config{Host: snmpsim.Host, Port: s.Port, Timeout: 2 * time.Second}
	v.Set(&c, s)
	if mod != nil {
		mod(&c)
	}
	d, err := k.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Ctx returns a context for one test step.
func Ctx(t testing.TB) context.Context { return testtool.Timeout(t, 30*time.Second) }

// Method wraps a device of driver for fence.Do, with fast polling.
func Method(driver string, d fence.Device, plug string) *fence.Method {
	return &fence.Method{Name: "pdu-off", Node: "node-1", Driver: driver, Device: d, Plug: plug, Options: fence.Options{
		PollInterval: 10 * time.Millisecond, PowerTimeout: 5 * time.Second,
	}}
}

// OutletOf maps a plug of the simulator (a number, an outlet's name, or
// nodeN) to its number.
func OutletOf(s *snmpsim.Sim, plug string) string {
	for n, name := range s.Options.Names {
		if name == plug {
			return strconv.Itoa(n)
		}
	}
	return strings.TrimPrefix(plug, "node")
}

// RequireAgent returns the agent's path, or skips t (fails it under
// CI=true) when it or net-snmp's tools are missing.
func RequireAgent(t testing.TB, agent string) string {
	t.Helper()
	snmpsim.RequireTool(t, "snmpget", "snmp")
	return snmpsim.RequireTool(t, agent, "fence-agents")
}

// AgentArgs are the agent's options to run action on plug of s, reached
// with v, then extra.
func AgentArgs(s *snmpsim.Sim, v Version, plug, action string, extra ...string) []string {
	args := []string{"--ip", snmpsim.Host, "--ipport", strconv.Itoa(s.Port)}
	args = append(args, v.Args(s)...)
	if plug != "" {
		args = append(args, "--plug", plug)
	}
	args = append(args, "--action", action)
	return append(args, extra...)
}
