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
// (PowerState, ResetType, ActionTarget, ActionInfo, Error). It does not
// use gofish's client: that client holds one context for all its
// requests, closes the connection after each request unless told
// otherwise, reads the service root on every connect, and logs out of a
// session without a time bound.
package redfish
