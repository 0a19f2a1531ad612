package main

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/fencekit/fencekit/drivers/agent"
	"github.com/fencekit/fencekit/fence"
)

// agentProfile is what fencectl follows when it stands in for a ClusterLabs
// agent (run under that agent's name, or with a driver that stands in for
// it): the actions that agent's metadata lists, and whether it takes a plug
// at all. The agent's options that mean nothing natively (they name a
// program fencectl does not run) are the driver's (fence.Driver.Ignored):
// accepted and ignored, as the agents ignore what they do not use. Each
// profile is checked against the installed agent's -o metadata by
// TestAgentProfilesMatchTheAgents.
type agentProfile struct {
	// actions are the actions the metadata advertises. An agent without
	// list and list-status makes Pacemaker ask status, not list, to learn
	// which nodes a device fences.
	actions []string
	// noPlug: the agent's device has one plug (a BMC's chassis, the dummy's
	// status file); a plug given anyway, such as the port=<node name>
	// Pacemaker adds by default, is ignored, as the agent ignores it.
	noPlug bool
}

var (
	bmcActions = []string{"on", "off", "reboot", "status", "monitor", "metadata", "manpage", "validate-all"}
	pduActions = []string{"on", "off", "reboot", "status", "list", "list-status", "monitor", "metadata", "manpage", "validate-all"}
	ipmilan    = agentProfile{actions: bmcActions, noPlug: true}
)

var agentProfiles = map[string]agentProfile{
	"fence_ipmilan":     ipmilan,
	"fence_ipmilanplus": ipmilan,
	"fence_redfish":     {actions: bmcActions, noPlug: true},
	"fence_apc_snmp":    {actions: pduActions},
	"fence_eaton_snmp":  {actions: pduActions},
	"fence_brocade":     {actions: []string{"on", "off", "status", "list", "list-status", "monitor", "metadata", "manpage", "validate-all"}},
	"fence_dummy":       {actions: bmcActions, noPlug: true},
	"fence_sbd":         {actions: pduActions},
}

// profile returns the agent profile of a run: the program's name when it
// is an agent's the driver stands in for, else the driver's first agent.
// ok is false for a driver that stands in for no profiled agent (fencectl's
// own actions and plug handling then apply).
func (c *cli) profile(d *fence.Driver) (agentProfile, bool) {
	if d == nil {
		return agentProfile{}, false
	}
	if p, ok := agentProfiles[c.prog]; ok && slices.Contains(d.Agents, c.prog) {
		return p, true
	}
	if d.Name == "fake" {
		// The fake is fence_dummy only under that name; as itself it is a
		// device with plugs that lists them.
		return agentProfile{}, false
	}
	for _, a := range d.Agents {
		if p, ok := agentProfiles[a]; ok {
			return p, true
		}
	}
	return agentProfile{}, false
}

// withIgnored adds to tab the ignored options of drivers (the options of
// the agents they stand in for that fencectl does not need), unless tab has
// them already.
func withIgnored(tab *table, drivers ...*fence.Driver) *table {
	for _, d := range drivers {
		for _, io := range d.Ignored {
			if _, ok := tab.byKey[io.Name]; ok {
				continue
			}
			flag := io.Type == "boolean"
			o := &option{Key: io.Name, Flag: flag, Type: io.Type, Kind: kindIgnored, Default: io.Default, Desc: io.Description}
			o.Metavar = metavarFor(io.Name, o.Type)
			tab.opts = append(tab.opts, o)
			tab.index(o)
		}
	}
	return tab
}

// wrappedAgent returns the agent the agent driver is to run, read from the
// command line (--agent NAME, --agent=NAME) or standard input (agent=NAME)
// before they are parsed, so that the agent's own options can be accepted.
func wrappedAgent(args, lines []string) string {
	for i, a := range args {
		switch {
		case a == "--agent" && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--agent="):
			return strings.TrimPrefix(a, "--agent=")
		}
	}
	for _, l := range lines {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && strings.TrimSpace(k) == "agent" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// withAgentOptions adds to tab the options of the agent the agent driver
// runs, from the agent's metadata: given on the command line or standard
// input, they are passed on to the agent as the driver passes its
// parameters (on its standard input). A metadata that cannot be read adds
// nothing (the driver's own error says why when it opens the agent).
func withAgentOptions(ctx context.Context, tab *table, name string) *table {
	if name == "" {
		return tab
	}
	meta, err := agent.Metadata(ctx, name)
	if err != nil {
		return tab
	}
	for _, p := range meta.Params {
		if p.Deprecated {
			continue
		}
		if _, ok := tab.byKey[p.Key]; ok {
			continue
		}
		o := &option{Key: p.Key, Type: p.Type, Desc: p.ShortDesc, Default: p.Default, Secret: p.Secret,
			Choices: p.Choices, Kind: kindParam, Driver: "agent"}
		if o.Type == "" {
			o.Type = "string"
		}
		if o.Type == "boolean" {
			o.Flag = true
		}
		if len(o.Choices) > 0 {
			o.Type = "select"
		}
		o.Metavar = metavarFor(o.Key, o.Type)
		tab.opts = append(tab.opts, o)
		tab.index(o)
	}
	return tab
}

// Defaults that differ from the agents' on purpose, by agent and parameter,
// with the reason; TestAgentProfilesMatchTheAgents checks that every other
// default is the agent's. The package documentation lists them too.
var (
	bmcDefaults = map[string]string{
		"cipher":           "fencekit names the RMCP+ suite it uses (3: SHA1 and AES); the agent leaves the choice to ipmitool",
		"power_wait":       "fencekit reads the power state back until it is confirmed instead of sleeping a fixed time after each switch",
		"shell_timeout":    "the bound of every answer of the device (io_timeout): 10 s, not the agent's 3 s for its shell",
		"ipmitool_timeout": "a lost IPMI request is sent again after 1 s, ipmitool's own default; the agent passes -N 2",
	}
	deliberateDefaults = map[string]map[string]string{
		"fence_ipmilan": merged(bmcDefaults, map[string]string{
			"lanplus": "IPMI v2.0 (RMCP+) by default, as fence_ipmilanplus: v1.5 sessions protect the password with MD5 at best",
		}),
		"fence_ipmilanplus": bmcDefaults,
		"fence_redfish": {
			"shell_timeout": bmcDefaults["shell_timeout"],
		},
		"fence_apc_snmp":   snmpDefaults,
		"fence_eaton_snmp": merged(snmpDefaults, map[string]string{"power_wait": bmcDefaults["power_wait"]}),
		"fence_brocade": {
			"ipport":         "SSH (port 22) by default: the agent's telnet (23) sends the password in clear",
			"secure":         "SSH by default, as above",
			"ssh":            "SSH by default, as above",
			"cmd_prompt":     "fencekit recognises the FOS shell's prompt itself",
			"command_prompt": "fencekit recognises the FOS shell's prompt itself",
			"shell_timeout":  bmcDefaults["shell_timeout"],
		},
		"fence_sbd": {
			"shell_timeout": "the bound of every read or write of the SBD devices (io_timeout): 30 s, a few dozen sector reads of up to three devices, not the agent's 3 s for its shell",
		},
		"fence_dummy": {
			"status_file":   "no shared file in /tmp by default: without a status file the fake device lives in the process",
			"shell_timeout": bmcDefaults["shell_timeout"],
		},
	}
	snmpDefaults = map[string]string{
		"snmp_auth_prot": "net-snmp's default (MD5), which the agent leaves to snmpget, named",
		"snmp_priv_prot": "net-snmp's default (DES), which the agent leaves to snmpget, named",
		"shell_timeout":  bmcDefaults["shell_timeout"],
	}
)

// merged returns a map with the entries of both.
func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
