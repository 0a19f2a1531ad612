package v1alpha1

// The condition types of NodeFence and NodeFenceRemediation, as Node Health
// Check and fence-agents-remediation name theirs where they have one.
const (
	// ConditionProcessing is True while the fencing (or the remediation)
	// is under way, False once it is over: the node fenced and its pods
	// released, recovered, or failed.
	ConditionProcessing = "Processing"
	// ConditionFenced is True while devices have confirmed the node off or
	// cut from its storage (every required device of a level), False
	// before and after (recovered), and False with reason FoundOn while a
	// device that fenced it reads it on again (switched on behind the
	// controller; status.foundOn says which).
	ConditionFenced = "Fenced"
	// ConditionPodsReleased is True while the node's pods are released
	// (the out-of-service taint, or their deletion) after a verified
	// fence, False before and once the treatment is undone.
	ConditionPodsReleased = "PodsReleased"
	// ConditionSucceeded is True once the node is fenced and its pods
	// released; False when the fencing failed; Unknown while it runs.
	ConditionSucceeded = "Succeeded"
)

// The reasons of the conditions.
const (
	ReasonIsolation         = "Isolation"         // Processing: the isolation step runs
	ReasonPowerManagement   = "PowerManagement"   // Processing: the power management step runs
	ReasonRecovery          = "Recovery"          // Processing: the recovery step runs
	ReasonRecovered         = "Recovered"         // the node is back: switched on, untainted
	ReasonFailed            = "Failed"            // the step failed, retries spent
	ReasonWaiting           = "Waiting"           // nothing fenced yet (admission, kdump, retry)
	ReasonIsolated          = "Isolated"          // Fenced: cut from its storage
	ReasonPoweredOff        = "PoweredOff"        // Fenced: powered off
	ReasonConfirmedByPerson = "ConfirmedByPerson" // Fenced: a person confirmed it off; no device did
	ReasonNotFenced         = "NotFenced"         // Fenced: no device confirmed it yet
	ReasonFoundOn           = "FoundOn"           // Fenced: a device that fenced it reads it on again
	ReasonStorage           = "StoragePodsReleased"
	ReasonPower             = "OutOfService"    // all pods released after a verified power off
	ReasonDump              = "KdumpRecognized" // all pods released while the node dumps its kernel
	ReasonNotReleased       = "NotReleased"
	ReasonFencedReleased    = "NodeFencedPodsReleased" // Succeeded
	ReasonInProgress        = "InProgress"
	// ReasonLevelsFailed: Succeeded False while the step is retried after
	// every level of it failed once (not done, or an unknown outcome): the
	// configuration cannot fence the node now, and a checker may escalate
	// at once; the retries go on only while nothing else takes over.
	ReasonLevelsFailed = "EveryLevelFailed"
)

// The reasons of a remediation's conditions that fence-agents-remediation
// uses too, so that dashboards and runbooks written for it read fencekit's.
const (
	ReasonRemediationStarted   = "RemediationStarted"
	ReasonRemediationSucceeded = "RemediationFinishedSuccessfully"
	ReasonInterruptedByNHC     = "RemediationInterruptedByNHC"
	ReasonNodeNotFound         = "RemediationFinishedNodeNotFound"
	// ReasonHeld: the fencing is held by an operator's decision (a pause,
	// a maintenance, an exclusion): nothing is being done, and the
	// remediation neither failed nor succeeded (Processing False,
	// Succeeded Unknown).
	ReasonHeld = "FencingHeld"
	// ReasonDetectOnly: the controller runs in detect-only mode and will
	// not remediate (Processing False, Succeeded False): another
	// remediator may.
	ReasonDetectOnly = "DetectOnly"
)
