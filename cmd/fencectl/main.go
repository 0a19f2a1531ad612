// Command fencectl fences bare-metal nodes with fencekit's drivers, speaking
// the command-line dialect of the ClusterLabs fence agents (fence_ipmilan,
// fence_apc, fence_dummy, ...), so that it can stand in for them in scripts
// and in Pacemaker.
//
// # Choosing a driver
//
// --driver names a driver ("fake") or an agent it stands in for
// ("fence_dummy"). Installed or linked under an agent's name (fence_dummy),
// fencectl uses that agent's driver by default. An address URL such as
// --address fake://rack1 picks the driver from its scheme.
//
// # Options
//
// The agents' options, with their short forms, aliases and defaults:
//
//	-a, --ip (--ipaddr)        -u, --ipport          -l, --username (--login)
//	-p, --password (--passwd)  -S, --password-script -n, --plug (--port)
//	-o, --action               -m, --method          -C, --separator
//	--power-timeout  --power-wait  --stonith-status-sleep  --retry-on  --delay
//	--shell-timeout  --ssl-insecure  --disable-timeout
//	-v, --verbose  --verbose-level  -D, --debug-file  -q, --quiet  -h, --help  -V, --version
//
// plus fencekit's --address, --driver, --retry-off, --io-timeout, --soft, and
// every parameter the chosen driver declares (for the fake driver --plugs,
// --initial, --state-file, --switch-delay): --help lists them. Options take
// --opt=value, --opt value, -ovalue and -o value; flags take no value.
// Unambiguous prefixes of long options are accepted, as getopt does.
//
// # Strict mode
//
// Installed as fence_fencekit (or with FENCEKIT_STRICT=1), fencectl refuses
// what the agents let pass: a standard-input line that does not parse or
// names no option, an option given twice, a state file in a missing
// directory. Each is an error (exit 1) and nothing is switched.
// FENCEKIT_STRICT=0 turns it off. Under an agent's name the agents'
// behaviour is kept.
//
// # Where the defaults differ from the agents'
//
// Under an agent's name, the metadata and the options follow that agent's
// own metadata, option by option, defaults included, but for these
// deliberate differences (checked against the installed agents by
// TestAgentProfilesMatchTheAgents):
//
//   - fence_ipmilan: lanplus=1 (IPMI v2.0, as fence_ipmilanplus; v1.5
//     sessions protect the password with MD5 at best).
//   - fence_ipmilan, fence_ipmilanplus: cipher=3 (named, where the agent
//     lets ipmitool choose); ipmitool_timeout=1 (ipmitool's own default; the
//     agent passes -N 2).
//   - Every agent: power_wait=0, because fencekit reads the power state back
//     until it is confirmed instead of sleeping; shell_timeout=10, the bound
//     of every answer of a device (--io-timeout), where the agents' 3 s bounds
//     their shell. A reboot still holds the plug off for min_off (2 s, a
//     fencekit option) after its off is confirmed and before its on, as
//     fence_ipmilan's power_wait of 2 s does: an outlet switched back on
//     within milliseconds may not drop a server whose power supplies ride
//     through it, and some BMCs refuse an on that close to an off.
//   - fence_apc_snmp, fence_eaton_snmp: snmp_auth_prot=MD5 and
//     snmp_priv_prot=DES, net-snmp's defaults, which the agents leave to it,
//     named.
//   - fence_brocade: SSH on port 22 (ssh and secure on), where the agent
//     defaults to telnet on 23 with the password in clear; no cmd_prompt
//     default, as fencekit recognises the FOS shell's prompt.
//   - fence_dummy: no status_file default (/tmp/fence_dummy.status for the
//     agent): without one, the fake device lives in the process.
//   - fence_sbd: shell_timeout=30, the bound of every read or write of up
//     to three SBD devices. Its reboot (method cycle) clears the reset once
//     it has stood for msgwait, where the agent leaves it standing.
//
// The options the agents use for programs fencectl does not run
// (ipmitool_path, sudo, snmpget_path, ssh_path, ...) are accepted with the
// agents' defaults and ignored.
//
// # Standard input
//
// Run with no argument at all, fencectl reads key=value lines from standard
// input, as the agents do under Pacemaker: the agents' internal names
// (ipaddr, login, passwd, port) and long names with '-' or '_', '#'
// comments, blank lines, one pair of double quotes around a value removed,
// nodename= taken only as a label for messages, unknown keys warned about
// and ignored, and driver= for the driver. Credentials then never appear on
// a command line.
//
// # Actions and output
//
// Actions: on, off, reboot (the default), status, list, list-status,
// monitor, metadata, manpage, validate-all. Results go to standard output
// as the agents print them ("Status: ON", "Success: Powered OFF", "Success:
// Already ON", "Success: Rebooted", "plug,name" lines); failures go to
// standard error in the agents' log format, followed by fencekit's detailed
// error on its own line:
//
//	2026-11-22 11:00:39,537 ERROR: Failed: Unable to obtain correct plug status or plug is not available
//	2026-11-22 11:00:39,537 ERROR: fence: method fencectl, driver fake, plug "": status: ...
//
// The exit status is 0 on success, 2 for status when the plug is off, 1 on
// any failure. A reboot whose power on failed after a verified off still
// succeeds, as with the agents, after logging "Timed out waiting to power
// ON". Passwords are never printed: not in messages, not in --verbose
// records, not in metadata.
//
// # Examples
//
//	fencectl --driver fake --state-file /tmp/node1.state --action status
//	fencectl --address fake://rack1 --plugs 4 -n 3 -o off
//	fencectl --address fake://rack1 -o list-status
//	fencectl --driver fence_dummy -o metadata
//	printf 'driver=fake\nstate_file=/tmp/node1.state\naction=reboot\n' | fencectl
//	ln -s fencectl fence_dummy && ./fence_dummy --status-file /tmp/node1.state -o on
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
