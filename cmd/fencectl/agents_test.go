package main

import (
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// agentMetadata runs the installed agent's -o metadata.
func agentMetadata(t *testing.T, agent string) raXML {
	t.Helper()
	path := "/usr/sbin/" + agent
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: install fence-agents (make deps)", path)
		}
		t.Skipf("%s is missing: install fence-agents to compare with the reference agent", path)
	}
	out, err := exec.Command(path, "-o", "metadata").Output()
	require.NoError(t, err)
	var ra raXML
	require.NoError(t, xml.Unmarshal(out, &ra))
	return ra
}

// requiredByUs are parameters fencekit requires that the agent's metadata
// marks optional, though the agent cannot work without them.
var requiredByUs = map[string][]string{
	"fence_redfish": {"ip", "ipaddr", "password", "passwd"},
}

// notOffered are the agents' actions fencectl does not offer: diag (an NMI
// to the node) cannot be verified, and fencekit acts only when it can.
var notOffered = []string{"diag"}

// For every agent fencectl answers to, its metadata advertises the agent's
// actions (so Pacemaker asks list only of devices that list, and status
// otherwise), and every parameter of the agent's metadata, old names
// included, is accepted on the command line, as the agent accepts it.
func TestAgentProfilesMatchTheAgents(t *testing.T) {
	for agent, prof := range agentProfiles {
		t.Run(agent, func(t *testing.T) {
			theirs := agentMetadata(t, agent)
			var want []string
			for _, a := range theirs.Actions {
				if !slices.Contains(notOffered, a.Name) {
					want = append(want, a.Name)
				}
			}
			assert.ElementsMatch(t, want, prof.actions, "the profile's actions")

			r := runAs(t, agent, "", "-o", "metadata")
			require.Equal(t, 0, r.code, r.stderr)
			var ours raXML
			require.NoError(t, xml.Unmarshal([]byte(r.stdout), &ours))
			var got []string
			for _, a := range ours.Actions {
				got = append(got, a.Name)
			}
			assert.ElementsMatch(t, want, got, "the metadata's actions")

			d, ok := fence.DefaultRegistry().Lookup(agent)
			require.True(t, ok)
			// Required parameters as the agent has them, but for the ones
			// fencekit needs and the agent's metadata leaves optional
			// (fence_redfish then fails without them at run time).
			oursByName := map[string]string{}
			for _, p := range ours.Params {
				oursByName[p.Name] = p.Required
			}
			for _, p := range theirs.Params {
				got, ok := oursByName[p.Name]
				if !ok || got == p.Required || slices.Contains(requiredByUs[agent], p.Name) {
					continue
				}
				t.Errorf("%s's parameter %s: required=%q, the agent's %q", agent, p.Name, got, p.Required)
			}
			// Defaults as the agent has them, but for the deliberate
			// differences (deliberateDefaults, with their reasons).
			defaults := map[string]string{}
			for _, p := range ours.Params {
				defaults[p.Name] = p.Content.Default
			}
			for _, p := range theirs.Params {
				got, ok := defaults[p.Name]
				if !ok || sameDefault(p.Content.Type, got, p.Content.Default) {
					continue
				}
				if _, ok := deliberateDefaults[agent][p.Name]; !ok {
					t.Errorf("%s's parameter %s: default %q, the agent's %q", agent, p.Name, got, p.Content.Default)
				}
			}
			for name := range deliberateDefaults[agent] {
				p := slices.IndexFunc(theirs.Params, func(p raParam) bool { return p.Name == name })
				if p < 0 || sameDefault(theirs.Params[p].Content.Type, defaults[name], theirs.Params[p].Content.Default) {
					t.Errorf("%s's parameter %s is listed as a deliberate difference, but it has the agent's default", agent, name)
				}
			}
			tab := withIgnored(newTable([]*fence.Driver{d}), d)
			for _, p := range theirs.Params {
				args := []string{"--" + strings.ReplaceAll(p.Name, "_", "-")}
				if p.Content.Type != "boolean" {
					args = append(args, "1")
				}
				_, err := tab.parseArgs(args)
				if err != nil {
					assert.NotContains(t, err.Error(), "not recognized", "%s's option --%s", agent, p.Name)
				}
			}
		})
	}
}

// sameDefault reports whether two defaults mean the same: equal, or both
// true or both false for a boolean (the agents write "1" or nothing,
// fencekit "yes" or "no").
func sameDefault(typ, a, b string) bool {
	if a == b {
		return true
	}
	if typ != "boolean" {
		return false
	}
	truth := func(s string) bool { return s == "1" || s == "yes" || s == "true" || s == "on" }
	return truth(a) == truth(b)
}

// Pacemaker passes port=<node name> to every agent by default
// (pcmk_host_argument): the agents with one plug ignore it, and so does
// fencectl under their names, with the options they accept and fencekit
// does not use.
func TestPortOfPacemakerIgnoredByOnePlugAgents(t *testing.T) {
	bmc := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{})
	stdin := strings.Join([]string{
		"ip=" + ipmisim.Host, "ipport=" + strconv.Itoa(bmc.Port), "username=" + bmc.User, "password=" + bmc.Password,
		"lanplus=1", "cipher=3", "action=off", "port=node8", "nodename=node8",
		"ipmitool_path=/usr/bin/ipmitool", "use_sudo=0", "login_timeout=5", "auth=md5",
	}, "\n") + "\n"
	r := runAs(t, "fence_ipmilan", stdin)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Success: Powered OFF\n", r.stdout)
	assert.Equal(t, fence.StateOff, bmc.Truth())

	// fence_dummy's status file: one plug.
	f := stateFile(t, "on")
	r = runAs(t, "fence_dummy", "", "--status-file", f, "--plug", "node8", "-o", "off")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "off", readFile(t, f))
}

// A method configuration written for an agent, with any of the options
// of that agent's metadata (old names included), is one the strict
// configuration check takes: no option of the agent is an unknown key. The
// agents' *_script options, which run a program to print a secret, are
// refused with the advice to name a Secret instead.
func TestAgentOptionsValidInAConfiguration(t *testing.T) {
	for agent := range agentProfiles {
		t.Run(agent, func(t *testing.T) {
			theirs := agentMetadata(t, agent)
			for _, p := range theirs.Params {
				v := p.Content.Default
				switch {
				case p.Name == "action":
					v = "off"
				case v == "" || p.Content.Type == "boolean":
					v = "1"
				}
				body := "agent_name=" + agent + "\nip=10.0.0.1\nusername=u\npassword=secret-pw\nplug=1\nstatus_file=/tmp/x\n" + p.Name + "=" + v
				cms := []config.ConfigMap{
					{Name: "fence-method-m-n1", Data: map[string]string{"method.properties": body}},
					{Name: "fence-config-n1", Data: map[string]string{"config.properties": "power_management=m"}},
				}
				err := config.ValidateConfigMaps(cms, fence.DefaultRegistry())
				for _, e := range unjoinAll(err) {
					var ce *config.Error
					if !errors.As(e, &ce) || ce.Key != fence.CanonicalKey(p.Name) {
						continue
					}
					if strings.HasSuffix(ce.Key, "_script") {
						assert.Contains(t, ce.Error(), "_secret=NAME/KEY", "%s's option %s", agent, p.Name)
						continue
					}
					assert.NotErrorIs(t, ce, config.ErrUnknownParam, "%s's option %s", agent, p.Name)
				}
			}
		})
	}
}

// unjoinAll returns the errors of a joined error.
func unjoinAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
