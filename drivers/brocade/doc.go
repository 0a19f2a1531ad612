// Package brocade is fencekit's driver for Brocade Fibre Channel switches
// (Fabric OS) over SSH: fabric fencing, which isolates a node from its
// storage by disabling the node's switch port, in Go (golang.org/x/crypto/ssh;
// no ssh program, no expect). It stands in for the ClusterLabs agent
// fence_brocade with --ssh, and registers itself as the driver "brocade"
// when imported:
//
//	import _ "github.com/fencekit/fencekit/drivers/brocade"
//
// or use New directly. A port's state is its isolation: fence.StateOff is
// persistently disabled (fenced), fence.StateOn anything else. A port
// disabled only for now (portdisable) reads as on: a switch reboot or a
// portenable would reconnect the node to its storage, so it is not a fence,
// and an off sends portCfgPersistentDisable to it. fence_brocade reads such
// a port as off and sends nothing; this driver differs there on purpose. A
// recovery's on finds such a port on and leaves it as someone else left it
// (fencekit never disables a port only for now).
//
// # What each call sends
//
// The commands are the reference agent's (fence_brocade 4.12.1):
//
//   - Status: switchshow. The port's line of its port table says
//     "Disabled (Persistent)" after its Proto column for off; a line with
//     no disable is on. Unlike the agent, the driver finds the columns by
//     the table's header (so a director's Slot column is understood),
//     reports a port whose line it cannot read, or that is disabled
//     without "(Persistent)", as unknown (never off) and then asks portshow
//     PORT, whose portFlags (PERSISTENT_DISABLE) and portDisableReason
//     must agree (a disable that is not persistent is on), and fails with
//     fence.ErrUnknownPlug for a port switchshow does not list (the agent
//     crashes there).
//   - Set(off): portCfgPersistentDisable PORT; Set(on):
//     portCfgPersistentEnable PORT. FOS answers nothing when the command
//     worked. An error message (permission denied, invalid port, command
//     not found) is a refusal; any other answer leaves the outcome unknown.
//     The port must be one switchshow listed: the last table read is used,
//     so a verified off (status, set, status) is three commands.
//   - List (fence.Lister): switchshow's ports, with their states.
//   - Monitor (fence.Monitor): switchshow, which must show a port table.
//
// A plug is a port index, as switchshow's Index column shows it and as the
// agent takes it ("3"), or slot/port on a director ("2/15"); commands name
// the port as FOS takes it, slot/port on a director. Any other plug fails
// with fence.ErrUnknownPlug before anything is sent: nothing the caller
// writes reaches the switch's command line as it is.
//
// # Connection and session
//
// A Device holds one SSH connection, made on first use and reused by every
// later call, which take turns on it. In the default mode (ModeShell) it
// runs the switch's CLI as the agent does, on a pseudo-terminal without
// echo: one FOS login however many commands follow, each command a line,
// its output ending at the prompt. The prompt is learned at login: the
// first line that looks like a FOS prompt (NAME:...:USER>, or the
// command_prompt expression), confirmed by sending an empty line and
// seeing the same prompt again, so that a banner (the SSH banner, or
// notices the CLI prints before its prompt) is passed over, and the shell
// is known to be in step; two prompts in one command's output end the
// session. Line ends (\n, \r\n, \r), escape sequences, blank lines, tabs
// and runs of spaces are taken as they come. ModeExec (command_mode=exec)
// sends each command as an SSH exec request of its own on the connection
// instead (ssh switch 'switchshow'): no prompt to read, but one FOS login
// per command, and a switch that runs the CLI for exec requests only.
//
// When the switch ends the session or the connection (an idle timeout, a
// restart), the next call makes a new one; a read that fails that way on a
// connection made by an earlier call is sent once more on a new one, and a
// port command only when it surely never left. A command whose reply does
// not come in time, or whose context ends, leaves the session out of step:
// the connection is closed, and the next call makes a new one. Close ends
// the connection at once (after an "exit" to the CLI, not waited for).
//
// # Authentication and host keys
//
// The driver logs in with the password (password and keyboard-interactive
// methods) or the identity file (publickey; an encrypted key's passphrase
// is the password, as with the agents), or both. It verifies the switch's
// host key before it sends a credential: against OpenSSH known_hosts files
// (known_hosts; by default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts,
// those that exist, asking the switch for the key types they hold for it),
// or against pinned fingerprints (host_key_fingerprint, SHA256:... as
// ssh-keygen -l prints it). With neither, opening fails: the check is
// skipped only when asked (ssh_insecure=yes). The agent, by contrast,
// answers "yes" to ssh's question about an unknown key and records it.
//
// # Timeouts
//
// login_timeout (default 5 s, as the agent's) bounds connecting, the SSH
// handshake, the login and the first prompt; command_timeout (default 10
// s) bounds each command's reply. Both also end with the call's context,
// whichever comes first.
//
// # Errors
//
// Every error is an *Error that names the switch (host:port) and the step
// (connect, login, shell, or the command sent), and wraps fence's
// sentinels: fence.ErrLoginDenied for refused credentials and for an
// untrusted host key (ErrHostKey), fence.ErrUnreachable when the switch
// cannot be reached or the connection fails, fence.ErrUnknownPlug,
// fence.ErrBadState for a port whose state cannot be read, ErrMalformed for
// a reply that cannot be understood (with the start of what the switch
// printed), ErrCommandTimeout, ErrRefused, ErrUnexpectedReply. Errors
// never hold the password: text quoted from the switch has it replaced by
// REDACTED. Set marks an error fence.NotDone only when the command surely
// did not run: before it was sent (a bad or unknown port, a failed login,
// a context already done) or when the switch refused it with an error
// message; anything after sending (a timeout, a dropped connection, an
// answer that is not understood) leaves the outcome unknown, and the
// engine reads the state again.
//
// # Known limits
//
// Telnet is not offered. A port command that FOS answers with a question
// (as for some ports of an ISL trunk) gets no answer: it times out, with
// the outcome unknown, and the session is closed, which FOS takes as "no".
// fence_brocade has no reboot (fabric fencing); the driver has no native
// cycle, and fence.Do's reboot is an off then an on.
package brocade
