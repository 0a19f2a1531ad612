// Package eaton is fencekit's driver for Eaton ePDUs over SNMP, in Go
// (github.com/gosnmp/gosnmp; no net-snmp tools): it switches one outlet of
// the PDU off and on, as the ClusterLabs agent fence_eaton_snmp does.
//
// Importing the package registers the driver "eaton" in fence's default
// registry, standing in for fence_eaton_snmp, with its parameters (see
// Driver). Its address is eaton://host[:port], or the ip and ipport
// parameters; the port defaults to 161.
//
// # Models
//
// The first call reads sysObjectID.0 and picks the PDU's model from it, as
// the agent does, once per Device:
//
//   - Eaton Managed ePDU (.1.3.6.1.4.1.534.6.6.6): outlet N's state and
//     command are .1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.(N-1), 0 off and 1 on
//     (outlets count from 0 on the device, from 1 for the agent and here);
//   - Eaton Switched ePDU (.1.3.6.1.4.1.20677.1 and .2): outlet N's state is
//     .1.3.6.1.4.1.20677.2.6.3.N.0 (1 on, 2 off; 0 means no such outlet),
//     its command .1.3.6.1.4.1.20677.2.6.2.(N+1).0, since command 1 switches
//     every outlet at once.
//
// Any other sysObjectID fails with ErrUnknownModel (the agent fails too);
// the parameter pdu_model (Options.Model) names the model when detection
// cannot. Neither model has outlet names in the agent's tables: a plug is
// an outlet's number. List (fence.Lister) walks the state column.
//
// # What each call sends
//
//   - Status: one GET of the outlet's state, with sysObjectID.0 (to notice
//     another device at the address: ErrDeviceChanged). A missing outlet is
//     an error wrapping fence.ErrUnknownPlug; a value other than the model's
//     on and off is fence.StateUnknown with an error wrapping
//     fence.ErrBadState.
//   - Set: one SET of the outlet's command, sent once. Cycle (fence.Cycler)
//     writes the model's cycle command (2 on the Managed ePDU, 3 on the
//     Switched ePDU) the same way.
//   - Monitor (fence.Monitor): one GET of sysObjectID.0.
//
// SNMP v1, v2c (communities) and v3 (the user-based security model, every
// security level, authentication MD5, SHA and SHA-2, privacy DES and AES)
// are supported, with the agent's parameter names and defaults (SNMPv1 and
// community "private"; for v3, net-snmp's MD5 and DES). The agent waits 2 s
// after each command by default (power_wait); this driver needs no wait,
// since the engine reads the state until it changes.
//
// # Errors
//
// Every error of a call is an *Error that names the PDU's address, the SNMP
// request and the object, and never holds a community or a passphrase.
// Reads that go unanswered are sent again within snmp_retries and then fail
// with ErrNoReply and fence.ErrUnreachable: a wrong community, a wrong
// SNMPv3 privacy passphrase and a PDU that is down look alike, since an
// SNMP agent drops such requests without a word. Refused SNMPv3
// credentials and a community or user without write access fail at once
// with fence.ErrLoginDenied.
//
// A SET is never sent again blindly: if its reply is lost, Set fails with
// ErrNoReply and fence.ErrOutcomeUnknown, and the engine reads the state
// before it acts again. A SET the PDU refuses with an error status
// (wrongValue, notWritable, noAccess, ...) is fence.NotDone; genErr and
// undoFailed leave the outcome unknown.
package eaton
