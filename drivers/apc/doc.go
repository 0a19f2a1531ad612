// Package apc is fencekit's driver for APC switched rack PDUs (and the Tripp
// Lite PDUs that the same ClusterLabs agent drives) over SNMP, in Go
// (github.com/gosnmp/gosnmp; no net-snmp tools): it switches one outlet of
// the PDU off and on, as fence_apc_snmp does.
//
// Importing the package registers the driver "apc" in fence's default
// registry, standing in for the agents fence_apc_snmp and
// fence_tripplite_snmp, with their parameters (see Driver). Its address is
// apc://host[:port], or the ip and ipport parameters; the port defaults to
// 161.
//
// # Models
//
// The first call reads sysObjectID.0 and picks the PDU's model from it, as
// the agent does, once per Device:
//
//   - APC rPDU (.1.3.6.1.4.1.318.1.3.4.5): state
//     .1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.N (1 on, 2 off), command
//     .1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.N, names .1.3.6.1.4.1.318.1.1.12.3.5.1.1.2;
//   - APC rPDU2 (.1.3.6.1.4.1.318.1.3.4.6, the agent's "Master Switch with
//     firmware v6.x"): state and names in the MasterSwitch table, command in
//     the rPDU table;
//   - APC MasterSwitch (.1.3.6.1.4.1.318.1.3.4.1 and .2): state and command
//     .1.3.6.1.4.1.318.1.1.4.4.2.1.3.N, names .1.3.6.1.4.1.318.1.1.4.4.2.1.4;
//   - Tripp Lite (.1.3.6.1.4.1.850.1) and Tripp Lite LX
//     (.1.3.6.1.4.1.850.1.1.1), with 2 for on and 1 for off.
//
// The agent takes any other sysObjectID for a MasterSwitch; this driver
// fails with ErrUnknownModel instead, since a guess at the wrong table reads
// a missing object, which the agent then takes for "off". The parameter
// pdu_model (Options.Model) names the model when detection cannot. The
// MasterSwitch Plus (.1.3.6.1.4.1.318.1.3.4.4, outlets addressed as
// switch:outlet) is not supported.
//
// # Outlets
//
// A plug is an outlet's number (1, 2, ...) or its name, as the PDU's name
// column has it; the names are walked once and kept, and every use of a name
// checks that it still belongs to its outlet (in the same GET as the state,
// or in a GET before the SET), walking the names again when it does not. A
// name that several outlets share is refused. List (fence.Lister) reads the
// state and name columns together in one walk.
//
// # What each call sends
//
//   - Status: one GET of the outlet's state, with sysObjectID.0 (to notice
//     another device at the address: ErrDeviceChanged) and, for a plug given
//     by name, the outlet's name. A missing outlet (noSuchInstance,
//     noSuchObject, or SNMPv1's noSuchName) is an error wrapping
//     fence.ErrUnknownPlug, never "off" (the agent reports a missing outlet
//     as off, and an off of it as "Success: Already OFF"); a value other than
//     the model's on and off is fence.StateUnknown with an error wrapping
//     fence.ErrBadState.
//   - Set: one SET of the outlet's command, sent once. Cycle (fence.Cycler,
//     the agents' --method cycle) writes the model's reboot command the
//     same way (the Tripp Lite models have none).
//   - Monitor (fence.Monitor): one GET of sysObjectID.0.
//
// SNMP v1, v2c (communities) and v3 (the user-based security model, every
// security level, authentication MD5, SHA and SHA-2, privacy DES and AES)
// are supported, with the agents' parameter names and defaults (SNMPv1 and
// community "private"; for v3, net-snmp's MD5 and DES).
//
// # Errors
//
// Every error of a call is an *Error that names the PDU's address, the SNMP
// request and the object, and never holds a community or a passphrase.
// Reads that go unanswered are sent again within snmp_retries and then fail
// with ErrNoReply and fence.ErrUnreachable: a wrong community, a wrong
// SNMPv3 privacy passphrase and a PDU that is down look alike, since an
// SNMP agent drops such requests without a word. Refused SNMPv3
// credentials (an agent's report: unknown user, wrong digest, unsupported
// security level) and a community or user without write access fail at
// once with fence.ErrLoginDenied.
//
// A SET is never sent again blindly: if its reply is lost, Set fails with
// ErrNoReply and fence.ErrOutcomeUnknown, and the engine reads the state
// before it acts again. A SET the PDU refuses with an error status
// (wrongValue, notWritable, noAccess, ...) is fence.NotDone; genErr and
// undoFailed leave the outcome unknown.
package apc
