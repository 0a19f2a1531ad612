package flow

// The reasons of the events of a fencing (Command.Reason), as they appear
// on the node (kubectl describe node, kubectl get events): for alerts,
// dashboards and tests to match without spelling them again.
const (
	// ReasonIsolation, ReasonPowerManagement and ReasonRecovery: a step
	// starts.
	ReasonIsolation       = "FenceIsolation"
	ReasonPowerManagement = "FencePowerManagement"
	ReasonRecovery        = "FenceRecovery"
	// ReasonRunning: a level of the step runs.
	ReasonRunning = "FenceRunning"
	// ReasonIsolated and ReasonPowerFenced: every required device of a
	// level confirmed the node cut from its storage, or off.
	ReasonIsolated    = "FenceIsolated"
	ReasonPowerFenced = "FencePowerFenced"
	// ReasonPoweredOn: the level's ons ran after its verified offs and the
	// release of the pods.
	ReasonPoweredOn = "FencePoweredOn"
	// ReasonPowerOnFailed: a device could not switch the node on again
	// after the fence (the node stays fenced).
	ReasonPowerOnFailed = "FencePowerOnFailed"
	// ReasonRecovered: the node is back, neither isolated nor off.
	ReasonRecovered = "FenceRecovered"
	// ReasonRefused: the policy gate refused the step; asked again later.
	ReasonRefused = "FenceRefused"
	// ReasonConfigError: the node's fence configuration is missing or
	// wrong; nothing is fenced until it is fixed.
	ReasonConfigError = "FenceConfigError"
	// ReasonKdumpWait: power management waits for the node's kdump.
	ReasonKdumpWait = "FenceKdumpWait"
	// ReasonKdumpRelease: the pods of a dumping node are released before
	// its device fence (Options.ReleaseOnDump).
	ReasonKdumpRelease = "FenceKdumpRelease"
	// ReasonPodsReleased, ReasonPodsNotReleased: the pod treatment after a
	// verified fence, done or failed (retried).
	ReasonPodsReleased    = "FencePodsReleased"
	ReasonPodsNotReleased = "FencePodsNotReleased"
	// ReasonPodsRestored, ReasonPodsNotRestored: the pod treatment undone,
	// or failed to be (retried).
	ReasonPodsRestored    = "FencePodsRestored"
	ReasonPodsNotRestored = "FencePodsNotRestored"
	// ReasonPodsWait and ReasonPodsWaitTimeout: the node stays off until
	// its released pods are gone, or is switched on after
	// Options.PodsTimeout all the same.
	ReasonPodsWait        = "FencePodsWait"
	ReasonPodsWaitTimeout = "FencePodsWaitTimeout"
	// ReasonLevelFailed: a level failed; the next one is tried.
	ReasonLevelFailed = "FenceLevelFailed"
	// ReasonError: the step failed; it is retried after a backoff.
	ReasonError = "FenceError"
	// ReasonFailed: the step failed and its retries are spent.
	ReasonFailed = "FenceFailed"
	// ReasonWithdrawn: the request that asked for the fencing (a
	// remediation) was withdrawn before the node was fenced: no further
	// switch starts.
	ReasonWithdrawn = "FenceWithdrawn"
	// ReasonConfirmed: a person confirmed the node off (or cut from its
	// storage) for the current incident; no device proved it. The node
	// counts as fenced and its pods are released.
	ReasonConfirmed = "FenceConfirmedByPerson"
	// ReasonConfirmRefused: a person's confirmation was not acted on; the
	// event says why (the node is Ready, the confirmation names another
	// incident, detect-only mode).
	ReasonConfirmRefused = "FenceConfirmationRefused"
	// ReasonHoldFailed: making the node unschedulable (or schedulable
	// again) failed; retried.
	ReasonHoldFailed = "FenceHoldFailed"
	// ReasonFoundOn: a device that fenced the node reads it on again (or
	// its port enabled) while its pods are released: it was switched on
	// behind the controller. ReasonOffAgain: every such device reads it
	// off again.
	ReasonFoundOn  = "FencedNodeFoundOn"
	ReasonOffAgain = "FencedNodeOffAgain"
	// ReasonAbandoned: the record was deleted by a user; the pod
	// treatment is undone and the record forgotten.
	ReasonAbandoned = "FenceAbandoned"
)
