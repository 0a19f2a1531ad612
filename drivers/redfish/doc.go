// Package redfish is fencekit's driver for Redfish BMCs (the DMTF Redfish
// REST API, over HTTPS): it powers a computer system on and off, cycles it
// and shuts it down gracefully through its #ComputerSystem.Reset action,
// and reads its PowerState. It stands in for the ClusterLabs agent
// fence_redfish and registers itself as the driver "redfish" when
// imported:
//
//	import _ "github.com/fencekit/fencekit/drivers/redfish"
//
// or use New directly. Unlike the agent, it checks the HTTP status of
// every request, sends only the reset types the system offers, never takes
// PoweringOff (or any state but On and Off) for a state, verifies TLS
// certificates unless asked not to, can use sessions, and keeps one
// connection and what it discovered for the device's life, so that a
// verified off is three round trips. On a service with several computer
// systems and none chosen (systems_uri, or a plug naming a system's Id),
// the agent switches the last member of the Systems collection; the
// driver refuses with ErrSeveralSystems, whose message names the system
// the agent would take: a guess could switch off a machine that is not
// the node and report it fenced.
//
// The driver makes its own requests with net/http (one client and
// transport per device, each request bound to its context) and decodes
// replies with its own small structures and gofish's schema types
// (PowerState, ResetType, ActionTarget, ActionInfo, Error). It does not use
// gofish's client (v0.26.0). Measured side by side on the Redfish
// responder (BenchmarkVerifiedOff, tool=gofish, in BENCHMARKS.md), gofish's
// client used with care (connected once, connections kept alive, each
// call's context through WithContext, the system read by the status kept
// for the reset) makes the same three requests on one kept-alive
// connection per verified off, and takes 29 % more time, 44 % more bytes
// and 5 % more allocations. The driver's own requests also tell the fence
// core, of a request that failed, whether it surely was not sent (safe to
// try the next method), was refused (a 4xx: not done) or has an unknown
// outcome, which gofish's client reports as one error; and its session
// log-out is bounded in time.
package redfish
