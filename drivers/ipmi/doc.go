// Package ipmi is fencekit's IPMI driver: it powers a server off and on
// through its BMC over the LAN, in Go (github.com/bougou/go-ipmi's client;
// no ipmitool), with IPMI v2.0 RMCP+ sessions ("lanplus", the default) or
// IPMI v1.5 sessions ("lan").
//
// Importing the package registers the driver "ipmi" in fence's default
// registry, standing in for the ClusterLabs agents fence_ipmilan and
// fence_ipmilanplus, with their parameters (see Driver): lanplus, cipher,
// privlvl and hexadecimal_kg, plus ipmitool_timeout and ipmi_retries for
// the time given to each request. Its address is ipmi://host[:port]
// (ipmi+lan://host for IPMI v1.5), or the ip and ipport parameters.
//
// # What each call sends
//
//   - Status: Get Chassis Status; the "power is on" bit is the state.
//   - Set(on) and Set(off): Chassis Control power up and power down (a hard
//     off, as fence_ipmilan's).
//   - Cycle (fence.Cycler, the agents' --method cycle): Chassis Control
//     power cycle. A BMC that refuses to cycle a chassis that is off (the
//     specification recommends completion code D5h) gets a power up.
//   - SoftOff (fence.SoftOffer): Chassis Control soft shutdown, an ACPI
//     request to the operating system to shut down.
//   - Monitor (fence.Monitor): Get Device ID.
//   - Reset, which the engine never uses: Chassis Control hard reset, which
//     restarts the server without removing its power, so it fences nothing.
//
// A BMC has one chassis: the only plug is "" and any other fails with
// fence.ErrUnknownPlug.
//
// # Sessions
//
// A Device holds one session, set up on first use and reused by every
// later call, so a verified off (status, power down, status) is three round
// trips. go-ipmi's client is not safe for concurrent use, so calls take
// turns on the session. A session found broken (no reply, a reply that is
// not RMCP) is dropped, and the next call sets up a new one; a read that
// failed that way on a session set up by an earlier call is tried once more
// on a new session (a BMC that rebooted has forgotten the old one). Close
// ends the session (Close Session), waiting at most about a second for the
// BMC. Setting up a session costs five round trips with IPMI v2.0 (Get
// Channel Authentication Capabilities, Open Session, RAKP 1 and 3, Set
// Session Privilege Level) and four with IPMI v1.5.
//
// The cipher suite is always named (default 3) so that the client never
// probes the BMC's suites: ipmi_sim does not answer that probe, which costs
// ipmitool and go-ipmi seconds. Cipher suite 0 (no authentication at all:
// the BMC takes any password) is refused.
//
// # Errors
//
// Every error of a call is an *Error that names the BMC's address, the
// session type and the IPMI command; it never holds the password. Errors
// wrap fence's sentinels: fence.ErrLoginDenied when the BMC refuses the user
// name, password or privilege level; fence.ErrUnreachable when nothing
// answers (with ErrNoReply when requests went unanswered for the whole
// timeout and retries, which reports itself as a timeout); ErrMalformed
// when a reply cannot be parsed; a *CompletionError when the BMC answered
// with an error completion code.
//
// Set, Cycle and SoftOff mark an error with fence.NotDone only when the
// BMC surely did not act: the session could not be set up (the command was
// never sent), or the BMC answered the command with an error completion
// code (except C3h, a timeout while processing, and FFh, unspecified).
// Everything else (no reply, a malformed reply, a context that ended while
// waiting for the reply) leaves the outcome unknown, and the engine reads
// the state again before it acts again. A command that may have run is
// never sent again by this driver on a new session. go-ipmi resends an
// unanswered request within its retries, on the same session and with the
// same sequence number, as ipmitool does; the driver lets it do so for
// reads, never for Chassis Control (see below).
//
// # Replies that belong to the session
//
// go-ipmi v0.9.1 matches a reply to its request by the IPMI sequence number
// and command only. It checks neither the RMCP+ session ID, nor the session
// sequence number, nor the integrity code of an authenticated cipher suite:
// a datagram that reaches the client's port with a plausible sequence
// number, such as a forged "the chassis is off", would be taken for the
// BMC's answer (TestSpoofedRepliesIgnored shows it). go-ipmi offers one
// hook for this, the UDP connection it talks through (WithUDPProxy), and
// the driver puts a guard there (guard.go). The guard follows the session
// setup as it passes (it verifies RAKP Message 2's key exchange code with
// the password and derives the session integrity key with go-ipmi's own
// exported crypto), and then passes a reply up only when it carries the
// session's ID, a session sequence number not seen before (within a window
// of 32), the encryption the cipher suite asks for, and a valid integrity
// code (HMAC-SHA1-96, HMAC-MD5-128, MD5-128 or HMAC-SHA256-128). A dropped
// datagram is as if lost: the call times out, and the engine reads the
// state again. The guard also keeps a Chassis Control from being sent
// twice: go-ipmi's resend of it is dropped, so a power cycle never runs
// twice (TestChassisControlNotResent).
//
// Not covered: IPMI v1.5 sessions, whose replies pass as go-ipmi takes them
// (v1.5 is warned about as insecure, once per device); cipher suites without
// integrity (1, 6, 15), whose replies are checked for the session ID and
// sequence number only; the pre-session Get Channel Authentication
// Capabilities, which carries no session.
//
// # Known limits
//
// go-ipmi's client keeps each session alive with a Get Session Info every
// 30 s from a goroutine of its own that does not take turns with the
// driver's calls; in the rare case where it interleaves with a call, that
// call gets no matching reply and fails as a lost reply would. Two-key
// logins (hexadecimal_kg) and the choice of the IPMI v1.5 authentication
// type are not offered by go-ipmi v0.9.1's client: hexadecimal_kg is
// refused, and v1.5 sessions use the strongest type the BMC offers (MD5,
// then MD2, then a straight password).
package ipmi
