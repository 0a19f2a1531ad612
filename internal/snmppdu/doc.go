// Package snmppdu is the SNMP plumbing shared by fencekit's PDU drivers
// (drivers/apc, drivers/eaton): a Device that switches one outlet of a
// switched PDU through gosnmp, SNMP v1, v2c or v3, with the tables of the
// PDU models the ClusterLabs agents know (APCModels, EatonModels), the
// agents' parameters (Params, ConfigFromParams), and the classification of
// SNMP's failures into fence's sentinels.
//
// What a Device guarantees, for the drivers' documentation:
//
//   - The model is detected from sysObjectID.0 on first use and kept; every
//     state read carries sysObjectID.0 in the same GET, so another device
//     at the address is noticed (ErrDeviceChanged). An unknown sysObjectID
//     fails (ErrUnknownModel): no table is guessed.
//   - A state read is one GET, a switch one SET; a walk reads a PDU's
//     columns together, a GETBULK (or, for SNMPv1, a GETNEXT) per batch of
//     rows.
//   - A missing outlet (noSuchObject, noSuchInstance, SNMPv1's noSuchName,
//     the Eaton Switched ePDU's 0) wraps fence.ErrUnknownPlug; a value
//     outside the model's mapping is fence.StateUnknown with
//     fence.ErrBadState. Neither is ever taken for off.
//   - Reads are sent again within the retries; a SET is sent once. A SET
//     without reply leaves the outcome unknown (ErrNoReply and
//     fence.ErrOutcomeUnknown); a SET refused with an error status is
//     fence.NotDone but for genErr and undoFailed; any failure before the
//     SET left is fence.NotDone.
//   - SNMPv3 reports of refused credentials (usmStatsUnknownUserNames,
//     usmStatsWrongDigests, usmStatsUnsupportedSecLevels,
//     usmStatsDecryptionErrors), authorizationError and noAccess wrap
//     fence.ErrLoginDenied. A request the agent drops without a word (a
//     wrong community or privacy passphrase, or a device that is down)
//     fails with ErrNoReply after the timeout and retries, and says what
//     the silence may mean.
//   - Errors are *Error values naming the driver, the device's address, the
//     request and the object; they never hold a community or passphrase.
//   - The SNMPv3 engine is discovered by this package, which makes the
//     localised keys itself (see usm.go): a device's first request costs
//     one round trip and about a millisecond more than with SNMPv2c.
package snmppdu
