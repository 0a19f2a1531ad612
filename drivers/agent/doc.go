// Package agent is fencekit's adapter for the ClusterLabs fence agents
// (fence_apc_snmp, fence_ipmilan, fence_redfish, fence_virsh, ... from the
// fence-agents package): it runs an agent as a fence device, so that
// fencekit reaches every device the agents support beside its native
// drivers.
//
// Importing the package registers the driver "agent" in fence's default
// registry (see Driver); the agent is chosen by the agent parameter. New
// opens a device directly, Metadata reads an agent's metadata, and
// LookPath resolves an agent's name.
//
// # How an agent is run
//
// Every call (Status, Set, Cycle, List, Monitor) runs the agent once, with
// no command-line argument at all and its options on standard input, one
// name=value line each, as Pacemaker runs them: credentials never appear on
// a command line. (What the agent does with them is its own business:
// fence_ipmilan, for one, hands the password to ipmitool's command line.)
// A value with white space at either end, or wrapped in double quotes, is
// wrapped in double quotes, which the agents strip. The agent:
//
//   - runs as the leader of a process group of its own; when the call's
//     context ends, Options.Timeout passes (default 60 s), the device is
//     closed, or the agent prints more than Options.OutputLimit (default
//     1 MiB) on standard output or error, the whole group is killed (the
//     agent and what it started: ipmitool, ssh, snmpget);
//   - gets a minimal environment: PATH=/usr/local/sbin:/usr/local/bin:
//     /usr/sbin:/usr/bin:/sbin:/bin, LANG=C, LC_ALL=C, PYTHONWARNINGS=ignore,
//     PYTHONDONTWRITEBYTECODE=1, and Options.Env; nothing is inherited from
//     the host process;
//   - runs in /, takes its turn: Options.Limit runs at once per device,
//     default 1 (Pacemaker's pcmk_action_limit), the others wait within
//     their context.
//
// An agent's metadata (fence_x -o metadata, the resource-agent XML) is read
// once per version of its file and cached; New refuses an agent that does
// not list the status, on and off actions (fence_kdump, for one).
//
// # Parameters
//
// A method's parameters (canonical keys, see fence.Params) fall in three
// groups:
//
//   - read by fencekit, never passed to the agent: driver, agent_name,
//     agent, agent_timeout, agent_check_plugs, address (its host and port stand for ip and
//     ipport when those are not set; a path or query is refused),
//     io_timeout, retry_off, soft, must_succeed (must_sucess), template,
//     nodename;
//   - set by this package on every run, whatever the parameters say: action;
//     plug (or port, as the agent spells it) from the call; method=cycle for
//     Cycle only; delay=0, power_wait=0 and retry_on=0, because the engine
//     (fence.Do) owns the delay, the waits, the retries and the
//     verification, so that each run is one attempt; stonith_status_sleep
//     as given, in whole seconds, at least 1; power_timeout, the agents'
//     count of status reads after a set (and their bound on each command
//     they run), as given (default the agent's, 20) but lowered so that the
//     reads end before the call's deadline, leaving a quarter of the time,
//     at least 2 s, for the agent's start and login. Left out: quiet (hides
//     the messages errors are made of), verbose, verbose_level, debug,
//     debug_file (print the agent's exchanges, credentials included), help
//     and version (exit 0 without acting), disable_timeout (lifts the
//     agent's own limits), separator and plug_separator (the defaults, ",",
//     are what List parses and what a plug may not hold);
//   - every other parameter is the agent's: it must be in the agent's
//     metadata (under its current or its deprecated name: login for
//     username, ipaddr for ip), or New fails with a *fence.ParamError
//     naming the key; a parameter the metadata marks required must be set
//     (but for action and the plug). Values are checked and written as the
//     agent reads them: an integer must be one; seconds may be fractional
//     or a Go duration and are rounded up to whole seconds (the agents take
//     integers only); a select must be one of its choices (any case); a
//     boolean is yes/no, true/false, on/off, 1/0 and is written 1 when true
//     and left out when false, since the agents take any boolean that is
//     present as set (ssl_insecure=0 would still skip the certificate
//     check), except that a false boolean the agent turns on by default is
//     written 0 (fence_ipmilanplus's lanplus=0). A value holding a line
//     break is refused. Two spellings of one option (login and username)
//     must agree. missing_as_off set is refused: a plug the device does
//     not have must fail, never read off.
//
// Secret values (IsSecret: passwords, communities, tokens, keys, API keys,
// IPMI Kg keys) go to the agent's standard input and nowhere else: errors
// and log records quote the agent's messages with every secret value
// replaced by REDACTED (fence.Scrub, as every driver), and withhold them
// altogether when a secret is shorter than 4 characters.
//
// # Plugs
//
// An agent without a plug parameter (fence_dummy) has one plug, "". An
// agent whose plug only stands for its address (those with port_as_ip:
// fence_ipmilan, fence_redfish) has one plug, "", unless port_as_ip is set,
// when the plug is the device's address. Other agents (PDUs, switches,
// hypervisors) take the plug as given, and need one. Any other plug fails
// with fence.ErrUnknownPlug, and so does a plug holding ",", which the
// agents would split into several plugs.
//
// Some agents read a plug they cannot find as off: fence_apc_snmp, given an
// outlet number the switch lacks, reads "No Such Instance" as off, which
// would count as fenced. So, for an agent that lists its plugs, a plug
// read off must be in the device's plug list, by ID or name, or Status
// fails with fence.ErrUnknownPlug. The list is read (one more run) on the
// first off read of a device, and again whenever a plug is not in it.
// Options.NoPlugCheck, or agent_check_plugs=no, turns the check off, for
// devices whose plugs go by names the list does not show.
//
// # Results and errors
//
// The agents (fencing.py 4.x) exit 0 on success, 2 for a status that is
// off, and 1 for every failure, with the reason on standard error; older
// agents and others exit with fencing.py's EC_ codes. This package reads
// them so:
//
//	call    exit  standard output                result
//	Status  0     exactly one "Status: ON"         fence.StateOn
//	Status  2     exactly one "Status: OFF"        fence.StateOff
//	Status  0, 2  anything else                    ErrBadState, ErrGarbage; never a state
//	Set     0     a "Success:" line (not naming    nil (accepted; fence.Do verifies)
//	              the opposite state)
//	Set     0     no "Success:" line, or the       ErrGarbage, outcome unknown
//	              opposite state
//	Cycle   0     a "Success:" line, and no        nil
//	              "Timed out waiting to power ON"
//	              on standard error
//	List    0     "plug,alias,state" (list-status) the plugs; a line without
//	              or "plug,alias" (list)           separator is ErrGarbage
//	Monitor 0     anything                         nil
//	any     other see below                        an error
//
// A failure is recognised by the words of the agent's error lines
// (standard error without its WARNING lines), first match wins, else by
// the exit status; "not done" marks an error of Set and Cycle with
// fence.NotDone (the agent surely did not act), the others are marked
// fence.OutcomeUnknown:
//
//	words (any case)                              exit  wraps                 Set/Cycle
//	Unable to connect/login to fencing device       3   fence.ErrLoginDenied  not done
//	does not have the correct privileges           11   fence.ErrLoginDenied  not done
//	Connection refused, Failed to establish a new   -   fence.ErrUnreachable  not done
//	  connection, Name or service not known, No
//	  route to host, ... name resolution, Network
//	  is unreachable, Could not resolve host
//	Timed out waiting to power ON|OFF             6, 7  fence.ErrTimeout      unknown
//	Connection timed out, Read timed out,           5   fence.ErrUnreachable  unknown
//	  timed out, Timeout: No Response
//	Connection lost                                 4   fence.ErrUnreachable  unknown
//	Can not find VM UUID, You have to enter        12   fence.ErrUnknownPlug  not done
//	  existing machine, Can't find port
//	Unable to obtain correct plug status, Unable  8, 9  fence.ErrBadState     unknown
//	  to get PowerState, Couldn't get power
//	  information
//	You have to ..., Parse error, Unrecognised    2, 10 fence.ErrConfig       not done
//	  action, is not a valid, not a valid
//	  choice, Unable to run, validate-all failed,
//	  Unable to create file, Identity file
//	(none of these)                               other ErrAgentFailed        unknown
//
// A Python traceback on standard error makes any of these "unknown". The
// status read that an agent makes before it sets a plug may fail with
// "Unable to obtain correct plug status" just as a read after the set may,
// so that one is "unknown" too. A run that did not start (the context was
// done, the device closed, the plug refused) is "not done"; a run that was
// killed (context, timeout, too much output, Close) is "unknown". Every
// error is an *Error naming the agent, the device's host, the action, the
// plug and the exit status, and quoting the agent's last error lines;
// fence.Do wraps it in a fence.Error that names the node and the method.
package agent
