package flow

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

// Status is the status of a NodeFence's current step, as the
// node-fencing design names them (new, running, done, error), plus Failed:
// retries exhausted, waiting for a user to clear it.
type Status string

// The statuses of a NodeFence.
const (
	// StatusNew: the step's methods have not started; the step waits for
	// the policy gate (isolation, power management), a kdump to end (power
	// management) or a usable configuration.
	StatusNew Status = "New"
	// StatusRunning: the step's methods are running, one job at a time.
	StatusRunning Status = "Running"
	// StatusDone: the step's methods succeeded.
	StatusDone Status = "Done"
	// StatusError: the step failed; it is retried after a back-off.
	StatusError Status = "Error"
	// StatusFailed: the step failed MaxRetries times. It stays so, visible,
	// until the node is ready again (recovery starts) or a user clears it
	// (NodeFence.Clear).
	StatusFailed Status = "Failed"
)

// ParseStatus parses a status name (any case).
func ParseStatus(s string) (Status, error) {
	for _, st := range []Status{StatusNew, StatusRunning, StatusDone, StatusError, StatusFailed} {
		if equalFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown fence status %q (want New, Running, Done, Error or Failed)", s)
}

// Release says which of a node's pods were released after a verified
// fence (the node-fencing design's pod treatment).
type Release string

// The pod releases.
const (
	// ReleaseNone: no pods released.
	ReleaseNone Release = ""
	// ReleaseStorage: the node was isolated from its storage (a device
	// confirmed the port disabled); the pods that used that storage may go.
	ReleaseStorage Release = "Storage"
	// ReleasePower: a device confirmed the node powered off; all its pods may
	// go, and the out-of-service taint may be applied.
	ReleasePower Release = "Power"
	// ReleaseDump: the node reports it is dumping its kernel (fence_kdump),
	// which it does only once that kernel crashed: its pods no longer run,
	// and with Options.ReleaseOnDump they may all go before a device has
	// fenced it (the node-fencing design: "once dumping is recognized, we
	// can delete all pods"). The pod treatments release every pod for it,
	// as for ReleasePower; the device fence follows when the dump ends.
	ReleaseDump Release = "Dump"
)

// releaseRank orders the releases by what they release: a power release
// (or a dump's) covers a storage release.
func releaseRank(r Release) int {
	switch r {
	case ReleaseStorage:
		return 1
	case ReleaseDump:
		return 2
	case ReleasePower:
		return 3
	}
	return 0
}

// Job is one switch of a NodeFence step: one PlanStep of a level (a
// method's off or on, or its whole action when it has one phase), run
// in-process through DoPhase. The design's job objects are these.
type Job struct {
	Step   fence.Step
	Level  int // 0-based level of the step
	Index  int // 0-based position of the method in its level
	Method string
	// Action is the method's action in the step (its own, or the step's);
	// Phase the half of it this job carries out (ActionOff or ActionOn).
	Action fence.Action
	Phase  fence.Action
	// Owner names the controller instance that started the job.
	Owner    string
	Started  time.Time
	Finished time.Time // zero while the job runs
	// Outcome of a finished job.
	OK           bool
	BestEffort   bool
	OffConfirmed bool
	// ByTime is set when the device's off is proven by elapsed time (SBD),
	// not read back from a switch.
	ByTime  bool
	Already bool
	Unknown bool        // the outcome is unknown (the device may have acted)
	State   fence.State // the last state the device reported
	Error   string
	// Target says what the switch acted on when the controller chose it
	// for the node (a storage isolation's addresses), and who reported it;
	// empty otherwise.
	Target string
}

// Running reports whether the job has started and not finished.
func (j *Job) Running() bool { return !j.Started.IsZero() && j.Finished.IsZero() }

// JobOutcome is what running a job gave, as FinishJob records it.
type JobOutcome struct {
	Result *fence.Result // may be nil when the method could not be opened
	Err    error
	// BestEffort is the method's BestEffort flag.
	BestEffort bool
	// Target is Job.Target.
	Target string
}

// Transition is one entry of a NodeFence's history.
type Transition struct {
	Time    time.Time
	Step    fence.Step
	Status  Status
	Message string
}

// MaxHistory bounds NodeFence.History; older entries are dropped.
const MaxHistory = 20

// NodeFence is the persisted record of one node's fencing (the
// node-fencing design's NodeFence object). Everything the controller needs
// to resume after a crash is in it, so the controller keeps no state of its
// own.
type NodeFence struct {
	Node    string
	Step    fence.Step
	Status  Status
	Retries int // retries of the current step after an error
	Polls   int // polls in power management, done, with the node still not ready
	// Jobs are the method runs of the current attempt of the current step.
	Jobs []Job
	// Isolated is set once a device confirmed the node isolated from its
	// storage; PoweredOff once a device confirmed it off. Both hold until
	// recovery is done.
	Isolated   bool
	PoweredOff bool
	// Released is the pod treatment carried out; Releasing the one asked
	// and not yet confirmed done.
	Released, Releasing Release
	// Restoring is set while the pod treatment is being undone (the taint
	// removed) after recovery or when the fencing is abandoned.
	Restoring bool
	// Hold is set while the node is to stay unschedulable (a NoSchedule
	// taint, controller.Holder): from the admission of its first fencing
	// step (or a person's confirmation) until it has been ready for
	// Options.HealthyDelay after its recovery, or, with a negative delay,
	// until a person marked it healthy (MarkedHealthy). A node that flaps
	// takes no pods in between. Held is set once the node is held, and
	// cleared once it is not.
	Hold, Held bool
	// MarkedHealthy is when a person marked the recovered node healthy,
	// as the store read it (spec.markedHealthy); it counts only when made
	// since the recovery began.
	MarkedHealthy time.Time
	// FencedAt is when the current attempt of an isolation or power
	// management step was proven: every required device of the level
	// confirmed off. The level's ons (a reboot's second half) come after
	// it, once the pods are released. Zero until then.
	FencedAt time.Time
	// PodsWaitSince is when the wait for the node's pods to be gone began
	// (after they were released, before the level's ons).
	PodsWaitSince time.Time
	// OnError says which device could not be switched on again after the
	// fence, and why. The node is fenced; it stays off and released, and
	// its recovery waits for it to be ready.
	OnError string
	// FoundOn, when set, says which device read the fenced node on again
	// (or its port enabled), and when: switched on behind the controller,
	// by an operator or a BMC's power-restore policy, while its pods are
	// released. The node stays recorded as fenced (its pods were released
	// on a proof that held then) but no device proves it now: an alarm,
	// cleared when every device reads it off again, or at its recovery.
	// OffCheckedAt is when its devices were last read again
	// (CmdCheckOff).
	FoundOn      string
	OffCheckedAt time.Time
	// Clear is a user's request to retry a Failed fencing.
	Clear bool
	// Confirm is a person's confirmation that the node is off, as the
	// store read it from the record's request (the NodeFence's
	// spec.confirmation, whose By the API server checked against the
	// writer's user name); nil when there is none. The flow reads it and
	// never changes it. It is acted on once, for the incident it names
	// (Incident), while the node is not ready and no device has fenced it;
	// see Confirmation.
	Confirm *Confirmation
	// Confirmation is the confirmation accepted for the current incident
	// (At set), kept until the next incident for the record; nil when none
	// was. ConfirmedOff is set with it and holds, as PoweredOff does,
	// until the node's recovery: the node counts as fenced on a person's
	// word, not a device's.
	Confirmation *Confirmation
	ConfirmedOff bool
	// ConfirmRefused says why Confirm was not acted on; empty when there
	// is none or it was accepted.
	ConfirmRefused string
	// Incident is when the current incident began: the record's creation,
	// or the moment a recovered node was found unresponsive again. A
	// confirmation names it, so that none outlives its incident. Zero in a
	// record written before it existed: Created stands for it.
	Incident time.Time
	// Deleting is set by the store when a user asked to delete the record:
	// the fencing is abandoned (pods restored, then the record forgotten).
	Deleting bool

	Created     time.Time
	StepStarted time.Time // when the current step (or its attempt) started
	Changed     time.Time // when Status last changed
	LastPoll    time.Time
	// Message says what the record waits for or why it failed.
	Message string
	History []Transition
	// Version is the store's opaque version of the record (a
	// resourceVersion), for optimistic concurrency.
	Version string
}

// Confirmation is a person's confirmation that a node is off (or cut from
// its storage) when no device can prove it: the commonest case is a BMC
// that lost power with its host. It is bound to one incident of one
// record.
type Confirmation struct {
	// By is the confirmer's user name, as the API server authenticated it.
	By string
	// Reason is what the person checked ("rack B7 has no power").
	Reason string
	// Incident is the incident confirmed (NodeFence.IncidentStart).
	Incident time.Time
	// Request names the store's record of who made the confirmation (on
	// Kubernetes, a CertificateSigningRequest whose creator the API server
	// wrote), which the controller's ConfirmCheck reads; empty where the
	// store's writer vouches for the confirmation itself.
	Request string
	// At is when the controller accepted it; zero in a request.
	At time.Time
}

// Same reports whether c and d are one confirmation (At aside): a
// confirmation written again, with another reason or another record of
// its writer, is another.
func (c *Confirmation) Same(d *Confirmation) bool {
	return c != nil && d != nil && c.By == d.By && c.Reason == d.Reason && c.Incident.Equal(d.Incident) && c.Request == d.Request
}

// ConfirmPending reports whether the record holds a person's confirmation
// not acted on yet (accepted or refused as it stands).
func (nf *NodeFence) ConfirmPending() bool {
	return nf.Confirm != nil && !nf.Confirm.Same(nf.Confirmation)
}

// IncidentStart is when the current incident began (Incident, or Created
// for a record that has none): what a person's confirmation must name.
func (nf *NodeFence) IncidentStart() time.Time {
	if nf.Incident.IsZero() {
		return nf.Created
	}
	return nf.Incident
}

// Fenced reports whether the node counts as fenced now: devices confirmed
// it off or cut from its storage, or a person confirmed it.
func (nf *NodeFence) Fenced() bool { return nf.Isolated || nf.PoweredOff || nf.ConfirmedOff }

// Closed reports whether the fencing is over: recovery done and nothing left
// to undo.
func (nf *NodeFence) Closed() bool {
	return nf.Step == fence.StepRecovery && nf.Status == StatusDone && nf.Released == ReleaseNone && !nf.Restoring && !nf.Hold && !nf.Held
}

// Active reports whether the node's fencing is in flight, for the policy
// gates: from the admission of its first step until power management is
// done (or the fencing failed, or the node recovered). A node fenced off for
// good no longer counts as in flight (it still counts as unresponsive), so
// a dead machine does not block the fencing of others forever.
func (nf *NodeFence) Active() bool {
	switch {
	case nf.Closed(), nf.Status == StatusFailed:
		return false
	case nf.Step == fence.StepPowerManagement && nf.Status == StatusDone:
		return false
	case nf.Step == fence.StepRecovery:
		return nf.Status == StatusRunning
	}
	// A first step still waiting for admission does not count yet.
	return !(nf.Status == StatusNew && len(nf.Jobs) == 0 && !nf.Fenced() && nf.Retries == 0)
}

// Clone returns a deep copy.
func (nf *NodeFence) Clone() *NodeFence {
	c := *nf
	c.Jobs = slices.Clone(nf.Jobs)
	c.History = slices.Clone(nf.History)
	if nf.Confirm != nil {
		x := *nf.Confirm
		c.Confirm = &x
	}
	if nf.Confirmation != nil {
		x := *nf.Confirmation
		c.Confirmation = &x
	}
	return &c
}

// FinishJob records the outcome of job i at now. It is a pure change of the
// record; the controller persists it and calls Advance again.
func (nf *NodeFence) FinishJob(i int, o JobOutcome, now time.Time) {
	j := &nf.Jobs[i]
	j.Finished = now
	j.BestEffort = o.BestEffort
	j.Target = o.Target
	if r := o.Result; r != nil {
		j.OffConfirmed = r.OffConfirmed
		j.ByTime = r.ByTime
		j.Already = r.Already
		j.State = r.State
	}
	if o.Err != nil {
		j.OK = false
		j.Unknown = fence.IsOutcomeUnknown(o.Err)
		j.Error = o.Err.Error()
		return
	}
	j.OK = true
}

// Options tune the NodeFence flow. The zero value means the defaults.
type Options struct {
	// PowerDelay is how long a node that stays not ready after its
	// isolation waits before power management starts (5 min in the
	// node-fencing design).
	PowerDelay time.Duration
	// PollInterval and MaxPolls: after power management is done, the node
	// is polled every PollInterval (30 s); still not ready after MaxPolls
	// (10) polls, the step errors.
	PollInterval time.Duration
	MaxPolls     int
	// MaxRetries is how many times a step that errored is retried (3;
	// negative: none) before the record is Failed; RetryBackoff (30 s) is the wait before
	// the first retry, doubling after each.
	MaxRetries   int
	RetryBackoff time.Duration
	// JobTimeout bounds one job. A job started by another controller
	// instance and not finished is taken over (run again) only once
	// JobTimeout has passed since it started (default 10 min).
	JobTimeout time.Duration
	// PodsTimeout bounds the wait, after a fenced node's pods were
	// released, for them (and their volume attachments) to be gone before
	// the level's devices are switched on again (default 2 min). Past it,
	// the node is switched on all the same, with a warning.
	PodsTimeout time.Duration
	// HealthyDelay is how long a recovered node must have been ready
	// before its hold ends (it takes pods again) and its record closes: a
	// node that flaps (ready for a few seconds, then gone again) takes no
	// pods in between, and is fenced again. 0 (the default) ends the hold
	// at its recovery; negative, only once a person marked it healthy
	// (NodeFence.MarkedHealthy). The pod treatment (the out-of-service
	// taint) is undone at the recovery either way: the node is ready.
	HealthyDelay time.Duration
	// MinOff is the least time a fenced level's devices stay off before
	// the first on of its reboot, from the moment the level fenced the
	// node (fence.Options.MinOff, for the persisted switches of the
	// controller): 0 means fence.DefaultMinOff, negative none. The wait
	// for the node's pods usually lasts longer.
	MinOff time.Duration
	// ReleaseOnDump releases a node's pods (ReleaseDump) as soon as it is
	// known to dump its kernel, once the policy gate admits its power
	// management, instead of after the device fence that follows the dump:
	// its StatefulSet pods start elsewhere during a dump that may take
	// minutes. Off by default: fence_kdump messages are not authenticated,
	// so a host that can send UDP from the node's address could have the
	// pods of a running node released.
	ReleaseOnDump bool
}

func (o Options) withDefaults() Options {
	if o.PowerDelay <= 0 {
		o.PowerDelay = 5 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 30 * time.Second
	}
	if o.MaxPolls <= 0 {
		o.MaxPolls = 10
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3 // negative stays: no retry, and stays so when defaulted again
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 30 * time.Second
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 10 * time.Minute
	}
	if o.PodsTimeout <= 0 {
		o.PodsTimeout = 2 * time.Minute
	}
	if o.MinOff == 0 {
		o.MinOff = fence.DefaultMinOff // negative stays: none, and stays none when defaulted again
	}
	return o
}

// Defaults returns the options with every zero field set to its default.
func (o Options) Defaults() Options { return o.withDefaults() }

// Observation is what the controller saw of a node when it advances the
// node's NodeFence.
type Observation struct {
	Now time.Time
	// Ready is the node's Ready condition.
	Ready bool
	// Unresponsive is true when the node has not been ready for the
	// configured duration: it reopens a closed record.
	Unresponsive bool
	// Steps is the node's configuration: the method names of each step,
	// one slice per level (NodeConfig.Steps), and Actions the methods' own
	// actions (NodeConfig.Actions). ConfigErr, when set, says why there is
	// none; nothing is fenced on a bad configuration.
	Steps     map[fence.Step][][]string
	Actions   map[string]fence.Action
	ConfigErr error
	// Admission is the policy gate's answer for starting the current step,
	// nil when it was not asked. Isolation and power management start only
	// when admitted; recovery needs no admission.
	Admission *Admission
	// Dumping is true when the node reports it is dumping its kernel (and
	// its configuration enables kdump): power management waits.
	Dumping    bool
	DumpDetail string
	// Owner names this controller instance; Busy reports whether it is
	// running the record's unfinished job right now.
	Owner string
	Busy  bool
	// ReadySince is when the node's Ready condition last turned true (when
	// Ready): the healthy delay counts from it.
	ReadySince time.Time
	// Withdrawn is true when the fencing was asked for by a request (a
	// remediation) that no longer asks (deleted, or timed out by its
	// checker, who escalates to another remediator): before the node is
	// fenced, no further switch of the step starts (a job in flight is
	// the controller's to cancel), and the step fails with
	// ReasonWithdrawn. Once the node is fenced, the release of its pods
	// and the reboot's on go on.
	Withdrawn bool
	// Deleting is true when the record is being deleted (by a user): the
	// fencing is abandoned; released pods are restored first.
	Deleting bool
	// ConfirmBlocked, when set, says why no person's confirmation is acted
	// on now (detect-only mode): NodeFence.Confirm is refused with it.
	ConfirmBlocked string
	// Pods is the answer to CmdCheckPods, nil when it was not asked.
	Pods *PodsCheck
	// Off is the answer to CmdCheckOff, nil when it was not asked.
	Off *OffCheck
}

// OffCheck is what the devices that fenced a node read when they were
// read again (CmdCheckOff): nothing is switched.
type OffCheck struct {
	// On names the devices (methods) that read the node on (or its port
	// enabled); empty when none did.
	On []string
	// Known is true when every device was read, on or off; false when
	// one could not be (unreachable, wrong machine, no configuration).
	Known bool
	// Detail says what was read, or why a device could not be read.
	Detail string
}

// PodsCheck tells whether a fenced node's released pods are gone.
type PodsCheck struct {
	// Gone is true when none of the released pods is left on the node
	// (and none of its volumes is still attached), or when there is
	// nothing to wait for.
	Gone bool
	// Detail says what is left, or why it could not be told.
	Detail string
}

// Admission is a policy decision as Advance sees it.
type Admission struct {
	Admit  bool
	Reason string
}

// CommandKind names what a Command asks the controller to do.
type CommandKind uint8

// The commands Advance emits.
const (
	// CmdRunJob: run the job Command.Job, then FinishJob and Advance.
	CmdRunJob CommandKind = iota + 1
	// CmdAdmit: ask the policy gate whether the current step may start,
	// then Advance with Observation.Admission set.
	CmdAdmit
	// CmdReleasePods: carry out Command.Release, then ReleasedPods.
	CmdReleasePods
	// CmdRestorePods: undo the pod treatment (remove the out-of-service
	// taint), then RestoredPods.
	CmdRestorePods
	// CmdEvent: record an event (Command.Reason, Command.Message,
	// Command.Warning).
	CmdEvent
	// CmdForget: the record may be deleted (abandoned and restored).
	CmdForget
	// CmdCheckPods: tell whether the node's released pods are gone, then
	// Advance with Observation.Pods set.
	CmdCheckPods
	// CmdHold: make the node unschedulable (a NoSchedule taint), then
	// HeldNode(true), and go on with the next command whether it worked
	// or not (a hold that failed is asked again at the next Advance; it
	// never holds up the fencing).
	CmdHold
	// CmdUnhold: make it schedulable again, then HeldNode(false).
	CmdUnhold
	// CmdCheckOff: read again the devices that fenced the node (the
	// required offs of its current attempt that succeeded), switching
	// nothing, then Advance with Observation.Off set. Asked every
	// Options.PollInterval while the node is fenced by devices, its pods
	// released, not ready, and its level has no on that ran.
	CmdCheckOff
)

// Command is one thing Advance asks the controller to do, after it has
// persisted the record Advance returned.
type Command struct {
	Kind    CommandKind
	Job     int     // CmdRunJob: index into NodeFence.Jobs
	Release Release // CmdReleasePods
	// CmdEvent:
	Reason  string
	Message string
	Warning bool
}

// ReleasedPods records that the pod treatment r was carried out.
func (nf *NodeFence) ReleasedPods(r Release) {
	if releaseRank(r) > releaseRank(nf.Released) {
		nf.Released = r
	}
	if releaseRank(r) >= releaseRank(nf.Releasing) {
		nf.Releasing = ReleaseNone
	}
}

// HeldNode records that the node is held (made unschedulable) or not.
func (nf *NodeFence) HeldNode(held bool) { nf.Held = held }

// RestoredPods records that the pod treatment was undone.
func (nf *NodeFence) RestoredPods() {
	nf.Released, nf.Releasing, nf.Restoring = ReleaseNone, ReleaseNone, false
}

// stepAction is the action a step asks of its methods; a method's own
// action (the node-fencing design's action=off) replaces it.
func stepAction(s fence.Step) fence.Action {
	switch s {
	case fence.StepIsolation:
		return fence.ActionOff
	case fence.StepPowerManagement:
		return fence.ActionReboot
	default:
		return fence.ActionOn
	}
}

// StepAction is the action the step asks of its methods: off for
// isolation, reboot for power management, on for recovery. A method's own
// action (action=off in its ConfigMap) replaces it.
func StepAction(s fence.Step) fence.Action { return stepAction(s) }

// Advance is the NodeFence flow: from a record and an observation it
// returns the next record and the commands to carry out, in order, once the
// record is persisted. It is pure: the same inputs give the same outputs,
// and rec is not changed. A nil rec starts a new fencing of the node named
// by node.
func Advance(rec *NodeFence, node string, obs Observation, opts Options) (*NodeFence, []Command) {
	o := opts.withDefaults()
	a := &advancer{obs: obs, opts: o}
	if rec == nil {
		nf := &NodeFence{Node: node, Created: obs.Now, Incident: obs.Now}
		a.nf = nf
		a.start(fence.StepIsolation, "node not ready for the configured duration: fencing starts")
	} else {
		a.nf = rec.Clone()
	}
	a.checkOff()
	a.run()
	return a.nf, a.cmds
}

type advancer struct {
	nf   *NodeFence
	obs  Observation
	opts Options
	cmds []Command
}

func (a *advancer) event(warning bool, reason, format string, args ...any) {
	a.cmds = append(a.cmds, Command{Kind: CmdEvent, Reason: reason, Message: fmt.Sprintf(format, args...), Warning: warning})
}

// set changes the status and records the transition in the history.
func (a *advancer) set(st Status, msg string) {
	nf := a.nf
	nf.Status = st
	nf.Message = msg
	nf.Changed = a.obs.Now
	nf.History = append(nf.History, Transition{Time: a.obs.Now, Step: nf.Step, Status: st, Message: msg})
	if n := len(nf.History); n > MaxHistory {
		nf.History = slices.Delete(nf.History, 0, n-MaxHistory)
	}
}

// start begins step s as New.
func (a *advancer) start(s fence.Step, why string) {
	nf := a.nf
	nf.Step = s
	nf.Jobs = nil
	nf.Polls = 0
	nf.FencedAt, nf.PodsWaitSince, nf.OnError = time.Time{}, time.Time{}, ""
	nf.StepStarted = a.obs.Now
	nf.Retries = 0
	a.set(StatusNew, why)
	a.event(s != fence.StepRecovery, stepReason(s), "%s: %s", s, why)
}

// reopen begins a new incident of a recovered (or recovering) node: the
// isolation step starts again, and a person's confirmation of the last
// incident no longer counts for this one (one that still holds the node
// fenced, its recovery unfinished, is kept with it).
func (a *advancer) reopen(why string) {
	nf := a.nf
	nf.Incident = a.obs.Now
	if !nf.ConfirmedOff {
		nf.Confirmation = nil
	}
	nf.ConfirmRefused = ""
	a.start(fence.StepIsolation, why)
}

func stepReason(s fence.Step) string {
	switch s {
	case fence.StepIsolation:
		return ReasonIsolation
	case fence.StepPowerManagement:
		return ReasonPowerManagement
	default:
		return ReasonRecovery
	}
}

// run advances as far as the observation allows. Each branch either
// changes the record and loops, or stops.
func (a *advancer) run() {
	for i := 0; i < 8; i++ { // a few transitions per observation at most
		if !a.step() {
			break
		}
	}
	if a.nf.Hold && !a.nf.Held && !slices.ContainsFunc(a.cmds, func(c Command) bool { return c.Kind == CmdHold }) {
		// A hold asked earlier and not confirmed (it failed): asked again,
		// first.
		a.cmds = append([]Command{{Kind: CmdHold}}, a.cmds...)
	}
}

func (a *advancer) step() bool {
	nf, obs := a.nf, a.obs

	if obs.Deleting {
		return a.abandon()
	}
	if nf.Releasing != ReleaseNone {
		// A pod release asked earlier is not confirmed: ask again (it is
		// idempotent) before anything else.
		a.cmds = append(a.cmds, Command{Kind: CmdReleasePods, Release: nf.Releasing})
		return false
	}
	if nf.Restoring {
		a.cmds = append(a.cmds, Command{Kind: CmdRestorePods})
		return false
	}
	if nf.Held && !nf.Hold {
		// The end of a hold asked earlier is not confirmed: ask again
		// (the record closes only once the node takes pods again). A
		// hold that is not confirmed is asked again too (run), but never
		// stops the fencing: it is a courtesy, the fence is the safety.
		a.cmds = append(a.cmds, Command{Kind: CmdUnhold})
		return false
	}
	if nf.Clear {
		nf.Clear = false
		if nf.Status == StatusFailed {
			nf.Retries = 0
			a.start(nf.Step, "cleared by a user: the step starts again")
			return true
		}
	}

	if nf.ConfirmPending() {
		changed, wait := a.confirm()
		if wait {
			return false
		}
		if changed {
			return true
		}
	}

	if obs.Withdrawn && nf.Step != fence.StepRecovery && nf.FencedAt.IsZero() &&
		(nf.Status == StatusNew || nf.Status == StatusRunning || nf.Status == StatusError) {
		if i, ok := a.runningJob(); ok && !a.takeover(i) {
			return false // in flight: the controller cancels it; its result comes first
		}
		a.set(StatusFailed, "the request for this fencing was withdrawn (its remediation deleted, or timed out by its checker) before the node was fenced: no further switch starts")
		a.event(true, ReasonWithdrawn, "%s: %s", nf.Step, nf.Message)
		return true
	}

	switch nf.Status {
	case StatusNew:
		return a.onNew()
	case StatusRunning:
		return a.onRunning()
	case StatusDone:
		return a.onDone()
	case StatusError:
		return a.onError()
	case StatusFailed:
		return a.recoverOrReopen()
	default:
		a.set(StatusNew, fmt.Sprintf("unknown status %q reset to New", nf.Status))
		return true
	}
}

// confirm acts on a person's confirmation not acted on yet
// (NodeFence.Confirm). It reports whether it changed the record, and
// whether the step must wait (a device switch is in flight: its outcome
// comes first).
func (a *advancer) confirm() (changed, wait bool) {
	nf, obs, c := a.nf, a.obs, a.nf.Confirm
	why := ""
	switch {
	case c.By == "" || strings.TrimSpace(c.Reason) == "":
		why = "it names no confirmer or no reason"
	case !c.Incident.Equal(nf.IncidentStart()):
		why = fmt.Sprintf("it names the incident that began %s, not the current one, which began %s: confirm again",
			stamp(c.Incident), stamp(nf.IncidentStart()))
	case obs.Ready:
		why = "the node is Ready: only a node that is not ready may be confirmed off"
	case nf.Step == fence.StepRecovery:
		why = "the node's fencing is over: it is recovering"
	case nf.PoweredOff:
		why = "not needed: devices confirmed the node off"
	case obs.ConfirmBlocked != "":
		why = obs.ConfirmBlocked
	}
	if why != "" {
		if nf.ConfirmRefused == why {
			return false, false
		}
		nf.ConfirmRefused = why
		a.event(true, ReasonConfirmRefused, "the confirmation by %s that the node is off is not acted on: %s", c.By, why)
		return true, false
	}
	if i, ok := a.runningJob(); ok && !a.takeover(i) {
		return false, true
	}
	nf.Confirmation = &Confirmation{By: c.By, Reason: c.Reason, Incident: c.Incident, Request: c.Request, At: obs.Now}
	nf.ConfirmRefused = ""
	nf.ConfirmedOff = true
	nf.Hold = true
	nf.Step = fence.StepPowerManagement
	nf.Jobs, nf.Polls, nf.Retries = nil, 0, 0
	nf.StepStarted, nf.FencedAt, nf.LastPoll = obs.Now, obs.Now, obs.Now
	nf.PodsWaitSince, nf.OnError = time.Time{}, ""
	msg := fmt.Sprintf("confirmed off by a person, not by a device: %s: %s", c.By, clip(c.Reason, maxReason))
	a.set(StatusDone, msg)
	a.event(true, ReasonConfirmed, "%s; the node's pods are released as after a verified off", msg)
	if nf.Released != ReleasePower {
		a.release(ReleasePower)
	}
	return true, false
}

// maxReason bounds the part of a confirmation's reason that messages and
// events repeat.
const maxReason = 256

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (a *advancer) abandon() bool {
	nf := a.nf
	if i, ok := a.runningJob(); ok && !a.takeover(i) {
		// Never drop a record while one of its jobs may be acting.
		return false
	}
	if nf.Released != ReleaseNone || nf.Releasing != ReleaseNone {
		if !nf.Restoring {
			nf.Restoring = true
			a.event(false, ReasonAbandoned, "fencing abandoned: restoring the node's pods")
		}
		a.cmds = append(a.cmds, Command{Kind: CmdRestorePods})
		return false
	}
	if nf.Hold || nf.Held {
		nf.Hold = false
		a.cmds = append(a.cmds, Command{Kind: CmdUnhold})
		return false
	}
	a.cmds = append(a.cmds, Command{Kind: CmdForget})
	return false
}

func (a *advancer) runningJob() (int, bool) {
	for i := range a.nf.Jobs {
		if a.nf.Jobs[i].Running() {
			return i, true
		}
	}
	return 0, false
}

// takeover reports whether an unfinished job may be run again: it was
// started by this controller instance (which is not running it: it was
// restarted), or by another one whose job timeout has passed.
func (a *advancer) takeover(i int) bool {
	j := a.nf.Jobs[i]
	if a.obs.Busy {
		return false
	}
	return j.Owner == a.obs.Owner || a.obs.Now.Sub(j.Started) >= a.opts.JobTimeout
}

func (a *advancer) onNew() bool {
	nf, obs := a.nf, a.obs
	if nf.Step != fence.StepRecovery && obs.Ready {
		a.start(fence.StepRecovery, "node ready again before the "+nf.Step.String()+" step started")
		return true
	}
	if nf.Step == fence.StepRecovery && !obs.Ready {
		// Never unfence a node that is not ready.
		if obs.Unresponsive {
			a.reopen("node not ready for the configured duration again before its recovery: fencing starts")
			return true
		}
		return false
	}
	if obs.ConfigErr != nil || obs.Steps == nil {
		msg := "no fence configuration for the node"
		if obs.ConfigErr != nil {
			msg = "fence configuration error: " + obs.ConfigErr.Error()
		}
		if nf.Message != msg {
			nf.Message = msg
			a.event(true, ReasonConfigError, "%s (nothing fenced; retried when the configuration changes)", msg)
			return true
		}
		return false
	}
	levels := obs.Steps[nf.Step]
	if len(levels) == 0 {
		switch nf.Step {
		case fence.StepIsolation:
			if len(obs.Steps[fence.StepPowerManagement]) == 0 {
				if nf.Message != msgNoMethods {
					nf.Message = msgNoMethods
					a.event(true, ReasonConfigError, "%s", msgNoMethods)
					return true
				}
				return false
			}
			nf.Step = fence.StepPowerManagement
			a.start(fence.StepPowerManagement, "no isolation methods configured")
			return true
		case fence.StepRecovery:
			// Nothing to switch back on: the node is recovered as soon as
			// it is ready, and its pods are restored (the out-of-service
			// taint removed) as after a recovery level.
			a.recovered("recovered (no recovery methods configured)", "node recovered (no recovery methods configured)")
			return true
		default:
			a.set(StatusDone, "no "+nf.Step.String()+" methods configured")
			return true
		}
	}
	if nf.Step == fence.StepPowerManagement && obs.Dumping {
		// The detail of a dump changes by the second ("last 3s ago"): the
		// record and the event say it once, when the wait begins.
		msg := msgKdumpWait + obs.DumpDetail
		if !strings.HasPrefix(nf.Message, msgKdumpWait) {
			nf.Message = msg
			a.event(false, ReasonKdumpWait, "%s", msg)
			return true
		}
		if !a.opts.ReleaseOnDump || releaseRank(nf.Released) >= releaseRank(ReleaseDump) {
			return false
		}
		// Releasing the pods of a node that no device has fenced yet is
		// a fencing decision: the policy gate is asked first.
		if obs.Admission == nil {
			a.cmds = append(a.cmds, Command{Kind: CmdAdmit})
			return false
		}
		if !obs.Admission.Admit {
			refused := msgKdumpWait + "pods not released: refused by policy: " + obs.Admission.Reason
			if nf.Message != refused {
				nf.Message = refused
				a.event(true, ReasonRefused, "%s: releasing the pods of a dumping node: %s (asked again at the next pass)", nf.Step, obs.Admission.Reason)
				return true
			}
			return false
		}
		nf.Message = msgKdumpWait + "its pods are released"
		a.event(true, ReasonKdumpRelease, "the node is dumping its kernel: its pods are released before a device fences it (the dump is reported by fence_kdump, which is not authenticated)")
		a.release(ReleaseDump)
		return true
	}
	if nf.Step != fence.StepRecovery {
		if obs.Admission == nil {
			a.cmds = append(a.cmds, Command{Kind: CmdAdmit})
			return false
		}
		if !obs.Admission.Admit {
			msg := MsgRefusedByPolicy + obs.Admission.Reason
			if nf.Message != msg {
				nf.Message = msg
				a.event(true, ReasonRefused, "%s: %s (asked again at the next pass)", nf.Step, obs.Admission.Reason)
				return true
			}
			return false
		}
	}
	if nf.Step != fence.StepRecovery && !nf.Hold {
		// Admitted: the node takes no new pods from now until it has been
		// healthy again for the healthy delay.
		nf.Hold = true
		a.cmds = append(a.cmds, Command{Kind: CmdHold})
	}
	nf.StepStarted = obs.Now
	a.set(StatusRunning, fmt.Sprintf("running %s level 1", nf.Step))
	a.event(false, ReasonRunning, "%s: running level 1: %v", nf.Step, levels[0])
	return a.startLevel(0)
}

// startLevel runs the first switch of level. A fencing level whose plan
// begins with an on has no off at all: it cannot fence, and fails before
// anything is switched.
func (a *advancer) startLevel(level int) bool {
	plan := a.plan(level)
	if stepAction(a.nf.Step).Fences() && (len(plan) == 0 || plan[0].Phase == fence.ActionOn) {
		return a.levelFailed(level, "no method of the level switches the node off")
	}
	a.addJob(level, 0)
	return false // the job runs before anything else
}

const msgKdumpWait = "waiting for the kdump to end: "

// MsgRefusedByPolicy begins the message of a record whose step the policy
// gate refused to start (a pause, a maintenance, an exclusion, detect-only
// mode, a storm guard), followed by the gate's reason.
const MsgRefusedByPolicy = "refused by policy: "

const msgNoMethods = "no isolation or power management methods configured for the node: nothing can fence it"

// plan returns the plan of level of the current step (nil when the
// configuration has no such level).
func (a *advancer) plan(level int) []fence.PlanStep {
	levels := a.obs.Steps[a.nf.Step]
	if level < 0 || level >= len(levels) {
		return nil
	}
	own := make([]fence.Action, len(levels[level]))
	for i, name := range levels[level] {
		own[i] = a.obs.Actions[name]
	}
	return fence.PlanLevel(stepAction(a.nf.Step), own)
}

// addJob starts the switch at position pos of level's plan.
func (a *advancer) addJob(level, pos int) {
	nf := a.nf
	st := a.plan(level)[pos]
	name := a.obs.Steps[nf.Step][level][st.Method]
	nf.Jobs = append(nf.Jobs, Job{Step: nf.Step, Level: level, Index: st.Method, Method: name,
		Action: st.Action, Phase: st.Phase, Owner: a.obs.Owner, Started: a.obs.Now})
	a.cmds = append(a.cmds, Command{Kind: CmdRunJob, Job: len(nf.Jobs) - 1})
}

func (a *advancer) onRunning() bool {
	nf, obs := a.nf, a.obs
	if len(nf.Jobs) == 0 {
		a.set(StatusNew, "running without jobs: started again")
		return true
	}
	last := len(nf.Jobs) - 1
	j := nf.Jobs[last]
	if j.Running() {
		if a.takeover(last) {
			nf.Jobs[last].Owner = obs.Owner
			nf.Jobs[last].Started = obs.Now
			a.cmds = append(a.cmds, Command{Kind: CmdRunJob, Job: last})
		}
		return false
	}
	plan := a.plan(j.Level)
	pos := slices.IndexFunc(plan, func(p fence.PlanStep) bool { return p.Method == j.Index && p.Phase == j.Phase })
	levels := obs.Steps[nf.Step]
	if pos < 0 || levels[j.Level][j.Index] != j.Method || plan[pos].Action != j.Action {
		// The configuration changed under a running step: start it again
		// with the new one (every switch reads the device first).
		a.fail("the configuration of the step changed while it ran")
		return true
	}
	fencing := stepAction(nf.Step).Fences()
	if !j.OK {
		switch {
		case fencing && j.Phase == fence.ActionOn:
			// The level fenced the node before this on: the failure is
			// reported, not counted against the fence.
			if !strings.Contains(nf.OnError, j.Method+": ") {
				nf.OnError = joinMsg(nf.OnError, j.Method+": "+j.Error)
				a.event(true, ReasonPowerOnFailed, "%s: %s could not switch the node on again after the fence (the node stays off and its pods released; recovery waits for it): %s",
					nf.Step, j.Method, j.Error)
				return true
			}
		case !j.BestEffort:
			return a.levelFailed(j.Level, fmt.Sprintf("method %s failed: %s", j.Method, j.Error))
		}
	}
	next := a.nextPos(j.Level, plan, pos)
	offsOver := next == len(plan) || plan[next].Phase == fence.ActionOn
	if fencing && nf.FencedAt.IsZero() && offsOver {
		// Every off of the level has run: judge them together.
		if why := a.judgeOffs(j.Level, plan); why != "" {
			return a.levelFailed(j.Level, why)
		}
		a.fenced(j.Level)
		return true
	}
	if next < len(plan) {
		if fencing && plan[next].Phase == fence.ActionOn && plan[pos].Phase != fence.ActionOn &&
			(a.obs.Now.Before(nf.FencedAt.Add(max(a.opts.MinOff, 0))) || !a.podsGone()) {
			// Held off first (the controller comes back when the hold
			// ends), then the pods checked.
			return false
		}
		a.addJob(j.Level, next)
		return false
	}
	if !fencing {
		ok := 0
		for _, x := range nf.Jobs {
			if x.Level == j.Level && !x.Finished.IsZero() && x.OK {
				ok++
			}
		}
		if ok == 0 {
			return a.levelFailed(j.Level, "no method of the level succeeded")
		}
	}
	a.stepDone(j.Level)
	return true
}

// nextPos returns the position in plan after pos, skipping the ons of
// methods whose off failed (best-effort methods: DoLevels does not switch
// them on either); len(plan) when none is left.
func (a *advancer) nextPos(level int, plan []fence.PlanStep, pos int) int {
	for n := pos + 1; n < len(plan); n++ {
		failedOff := slices.ContainsFunc(a.nf.Jobs, func(x Job) bool {
			return x.Level == level && x.Index == plan[n].Method && x.Phase == fence.ActionOff && !x.Finished.IsZero() && !x.OK
		})
		if plan[n].Phase != fence.ActionOn || !failedOff {
			return n
		}
	}
	return len(plan)
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// judgeOffs judges a level's offs as DoLevels does: every method that must
// succeed and has an off confirmed its device off, and at least one did. It
// returns why not, or "".
func (a *advancer) judgeOffs(level int, plan []fence.PlanStep) string {
	confirmed := 0
	for _, x := range a.nf.Jobs {
		if x.Level != level || x.Finished.IsZero() || x.Phase != fence.ActionOff {
			continue
		}
		switch {
		case x.OK && x.OffConfirmed:
			confirmed++
		case !x.BestEffort:
			return fmt.Sprintf("method %s did not confirm the node off", x.Method)
		}
	}
	if confirmed == 0 {
		return "no method of the level confirmed the node off"
	}
	return ""
}

// fenced records that the level's offs proved the node fenced: the pods
// are released next, while the node is off, and the level's ons (if any)
// come after.
func (a *advancer) fenced(level int) {
	nf := a.nf
	nf.FencedAt = a.obs.Now
	nf.FoundOn, nf.OffCheckedAt = "", time.Time{}
	switch nf.Step {
	case fence.StepIsolation:
		nf.Isolated = true
		nf.Message = fmt.Sprintf("isolated from storage by level %d", level+1) + a.targets(level)
		a.event(false, ReasonIsolated, "node isolated: every device of level %d confirmed it%s", level+1, a.targets(level))
		if nf.Released == ReleaseNone {
			a.release(ReleaseStorage)
		}
	default:
		nf.PoweredOff = true
		nf.Message = fmt.Sprintf("power fenced by level %d", level+1)
		if by := a.byTime(level); by != "" {
			nf.Message += "; the proof is time: " + by
			a.event(false, ReasonPowerFenced, "node power fenced: every device of level %d confirmed it off; the proof is time: %s", level+1, by)
			break
		}
		a.event(false, ReasonPowerFenced, "node power fenced: every device of level %d confirmed it off", level+1)
		if nf.Released != ReleasePower {
			a.release(ReleasePower)
		}
	}
}

// targets says what the level's offs acted on where the controller chose it
// for the node (Job.Target: a storage isolation's addresses, and who
// reported them), as "; cut off: ..."; empty when no job says.
func (a *advancer) targets(level int) string {
	var ts []string
	for _, j := range a.nf.Jobs {
		if j.Level == level && j.Phase == fence.ActionOff && j.OK && j.Target != "" && !slices.Contains(ts, j.Target) {
			ts = append(ts, j.Target)
		}
	}
	if len(ts) == 0 {
		return ""
	}
	return "; cut off: " + strings.Join(ts, "; ")
}

// byTime names the methods of the level whose off is proven by elapsed
// time (Job.ByTime), and says what that means; empty when none is.
func (a *advancer) byTime(level int) string {
	var names []string
	for _, j := range a.nf.Jobs {
		if j.Level == level && j.Phase == fence.ActionOff && j.OK && j.ByTime && !slices.Contains(names, j.Method) {
			names = append(names, j.Method)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ", ") + " (no switch read back: the node stopped itself, its watchdog's guaranteed time passed)"
}

// podsGone reports whether the level's ons may run: the node's released
// pods are gone, or PodsTimeout passed since the wait began. Otherwise it
// asks for a check (CmdCheckPods) or records what is left.
func (a *advancer) podsGone() bool {
	nf, obs := a.nf, a.obs
	if nf.PodsWaitSince.IsZero() {
		nf.PodsWaitSince = obs.Now
	}
	if obs.Pods == nil {
		a.cmds = append(a.cmds, Command{Kind: CmdCheckPods})
		return false
	}
	if obs.Pods.Gone {
		return true
	}
	if obs.Now.Sub(nf.PodsWaitSince) >= a.opts.PodsTimeout {
		a.event(true, ReasonPodsWaitTimeout, "%s: the node's pods are not all gone %v after their release (%s): switching the node on all the same",
			nf.Step, a.opts.PodsTimeout, obs.Pods.Detail)
		return true
	}
	msg := msgPodsWait + obs.Pods.Detail
	if !strings.HasPrefix(nf.Message, msgPodsWait) {
		// The detail changes as pods go: said once, when the wait begins.
		nf.Message = msg
		a.event(false, ReasonPodsWait, "%s", msg)
	}
	return false
}

const msgPodsWait = "node fenced and off: waiting for its released pods to be gone before switching it on: "

// WaitingForPods reports whether the record waits for the node's released
// pods to be gone before its level's devices are switched on again.
func (nf *NodeFence) WaitingForPods() bool {
	if nf.Status != StatusRunning || nf.PodsWaitSince.IsZero() || len(nf.Jobs) == 0 {
		return false
	}
	j := nf.Jobs[len(nf.Jobs)-1]
	return !j.Running() && j.Phase == fence.ActionOff
}

func (a *advancer) levelFailed(level int, why string) bool {
	nf := a.nf
	levels := a.obs.Steps[nf.Step]
	if level+1 < len(levels) {
		a.event(true, ReasonLevelFailed, "%s level %d failed (%s): trying level %d", nf.Step, level+1, why, level+2)
		nf.Message = fmt.Sprintf("running %s level %d", nf.Step, level+2)
		return a.startLevel(level + 1)
	}
	a.fail(fmt.Sprintf("%s level %d failed: %s", nf.Step, level+1, why))
	return true
}

func (a *advancer) fail(why string) {
	a.set(StatusError, why)
	a.event(true, ReasonError, "%s", why)
}

func (a *advancer) stepDone(level int) {
	nf := a.nf
	switch nf.Step {
	case fence.StepIsolation:
		a.set(StatusDone, fmt.Sprintf("isolated from storage by level %d", level+1)+a.targets(level))
	case fence.StepPowerManagement:
		nf.LastPoll = a.obs.Now
		msg := fmt.Sprintf("power fenced by level %d", level+1)
		if by := a.byTime(level); by != "" {
			msg += "; the proof is time: " + by
		}
		if nf.OnError != "" {
			msg += "; switching it on again failed (" + nf.OnError + "): the node stays off, its pods released"
		} else if a.levelHasOn(level) {
			a.event(false, ReasonPoweredOn, "node switched on again after its fence and the release of its pods (level %d)", level+1)
		}
		a.set(StatusDone, msg)
	default:
		a.recovered("recovered", fmt.Sprintf("node recovered (level %d)", level+1))
	}
}

// recovered ends the recovery step: the node is neither isolated nor off,
// and released pods are to be restored.
func (a *advancer) recovered(msg, event string) {
	nf := a.nf
	nf.Isolated, nf.PoweredOff, nf.ConfirmedOff = false, false, false
	nf.FoundOn, nf.OffCheckedAt = "", time.Time{}
	a.event(false, ReasonRecovered, "%s", event)
	if nf.Released != ReleaseNone {
		// The node is ready: the pod treatment (the out-of-service taint)
		// is undone now; its hold keeps new pods away for the healthy
		// delay.
		nf.Restoring = true
	}
	if nf.Hold && !a.healthyLongEnough() {
		msg += "; it takes pods again " + a.healthyWhen()
	} else {
		nf.Hold = false
	}
	a.set(StatusDone, msg)
}

// healthyWhen says when a recovered node takes pods again.
func (a *advancer) healthyWhen() string {
	if a.opts.HealthyDelay < 0 {
		return "once a person marks it healthy (kubectl fence healthy " + a.nf.Node + ")"
	}
	return fmt.Sprintf("once it has been ready for %v", a.opts.HealthyDelay)
}

// healthyLongEnough reports whether the node has been ready for the
// healthy delay.
func (a *advancer) healthyLongEnough() bool {
	if !a.obs.Ready {
		return false
	}
	if a.opts.HealthyDelay < 0 {
		return !a.nf.MarkedHealthy.IsZero() && a.nf.Step == fence.StepRecovery && !a.nf.MarkedHealthy.Before(a.nf.StepStarted)
	}
	return a.opts.HealthyDelay == 0 || !a.obs.ReadySince.IsZero() && a.obs.Now.Sub(a.obs.ReadySince) >= a.opts.HealthyDelay
}

// offCheckDue reports whether the devices that fenced the node are to be
// read again now (CmdCheckOff).
func (a *advancer) offCheckDue() bool {
	due := a.nf.OffCheckDue(a.opts, a.obs.Ready || a.obs.Deleting)
	return !due.IsZero() && !a.obs.Now.Before(due)
}

// OffCheckDue is when the devices that fenced the node are next read
// again (CmdCheckOff) under opts: PollInterval after the last read, or
// after the fence. Zero when they are not to be read: the node is ready
// (ready), or not fenced by devices (on a person's word no device could
// read it), or its pods are not released, or the step is not over (done,
// or failed with its retries spent), or its level switched the node on
// again (a reboot's on makes it on by design; an on that failed leaves it
// off).
func (nf *NodeFence) OffCheckDue(opts Options, ready bool) time.Time {
	if ready || !nf.PoweredOff && !nf.Isolated || nf.Released == ReleaseNone || nf.Releasing != ReleaseNone ||
		nf.Restoring || nf.Step == fence.StepRecovery || nf.Status != StatusDone && nf.Status != StatusFailed {
		return time.Time{}
	}
	if slices.ContainsFunc(nf.Jobs, func(j Job) bool { return j.Phase == fence.ActionOn && j.OK }) ||
		!slices.ContainsFunc(nf.Jobs, func(j Job) bool { return j.Phase == fence.ActionOff && j.OK && !j.BestEffort }) {
		return time.Time{}
	}
	last := nf.OffCheckedAt
	if last.IsZero() {
		last = nf.FencedAt
	}
	if last.IsZero() {
		last = nf.Changed
	}
	return last.Add(opts.withDefaults().PollInterval)
}

// checkOff asks for the devices that fenced the node to be read again
// when it is due, and acts on what they read: a device that reads the
// node on raises the alarm (FoundOn, a warning event), every device
// reading it off again clears it. A device that cannot be read changes
// nothing (the device health checks report it).
func (a *advancer) checkOff() {
	if !a.offCheckDue() {
		return
	}
	nf, obs := a.nf, a.obs
	if obs.Off == nil {
		a.cmds = append(a.cmds, Command{Kind: CmdCheckOff})
		return
	}
	nf.OffCheckedAt = obs.Now
	what := "its devices"
	if nf.Isolated && !nf.PoweredOff {
		what = "its storage isolation"
	}
	switch {
	case len(obs.Off.On) > 0:
		if nf.FoundOn != "" {
			return // said once
		}
		nf.FoundOn = fmt.Sprintf("%s read the node on at %s", strings.Join(obs.Off.On, ", "), stamp(obs.Now))
		nf.Message = "fenced, but " + nf.FoundOn + ": switched on behind the controller (by a person, or a power-restore policy); no device proves " + what + " now"
		a.event(true, ReasonFoundOn, "%s; its pods stay released: find out who switched it on, and switch it off or let it recover", nf.Message)
	case obs.Off.Known && nf.FoundOn != "":
		nf.FoundOn = ""
		nf.Message = "fenced: every device reads the node off again"
		a.event(false, ReasonOffAgain, "%s", nf.Message)
	}
}

func (a *advancer) levelHasOn(level int) bool {
	return slices.ContainsFunc(a.plan(level), func(p fence.PlanStep) bool { return p.Phase == fence.ActionOn })
}

func (a *advancer) release(r Release) {
	a.nf.Releasing = r
}

func (a *advancer) onDone() bool {
	nf, obs := a.nf, a.obs
	switch nf.Step {
	case fence.StepIsolation:
		if obs.Ready {
			a.start(fence.StepRecovery, "node ready again after isolation")
			return true
		}
		if obs.Steps != nil && len(obs.Steps[fence.StepPowerManagement]) == 0 {
			return false // nothing more to do; stays isolated until ready
		}
		if obs.Now.Sub(nf.Changed) >= a.opts.PowerDelay {
			a.start(fence.StepPowerManagement, fmt.Sprintf("node still not ready %v after its isolation", a.opts.PowerDelay))
			return true
		}
		return false
	case fence.StepPowerManagement:
		if obs.Ready {
			a.start(fence.StepRecovery, "node ready again after power management")
			return true
		}
		if nf.ConfirmedOff && !nf.PoweredOff {
			// A person's word, not a device's: no poll fails the step
			// into a retry that would switch devices nobody could reach.
			// The node stays fenced until it is ready again.
			return false
		}
		if obs.Now.Sub(nf.LastPoll) >= a.opts.PollInterval {
			nf.LastPoll = obs.Now
			nf.Polls++
			if nf.Polls >= a.opts.MaxPolls {
				a.fail(fmt.Sprintf("node still not ready after power management (%d polls)", nf.Polls))
				return true
			}
			return true
		}
		return false
	default:
		if nf.Status == StatusDone && nf.Hold && !nf.Restoring {
			// Recovered, and held for the healthy delay.
			if obs.Unresponsive && !obs.Ready {
				nf.Retries = 0
				a.reopen("node not ready for the configured duration again before it took pods again: fencing starts")
				return true
			}
			if a.healthyLongEnough() {
				nf.Hold = false
				msg := fmt.Sprintf("recovered, and ready for %v: it takes pods again", a.opts.HealthyDelay)
				if a.opts.HealthyDelay < 0 {
					msg = "recovered, and marked healthy by a person: it takes pods again"
				}
				a.set(StatusDone, msg)
				return true
			}
			return false
		}
		if !nf.Closed() {
			return false
		}
		if obs.Unresponsive && !obs.Ready {
			// Not while it is Ready: a request for a node that is Ready
			// again (a checker's, not yet withdrawn) reopens nothing.
			nf.Retries = 0
			a.reopen("node not ready for the configured duration again: fencing starts")
			return true
		}
		return false
	}
}

// recoverOrReopen moves a record that is stopped (Failed) or waiting for a
// retry (Error) on as its node tells: to recovery when the node is ready
// again, back to fencing when it fails again during its recovery. It
// reports whether it moved the record.
func (a *advancer) recoverOrReopen() bool {
	nf, obs := a.nf, a.obs
	if obs.Ready && nf.Step != fence.StepRecovery {
		a.start(fence.StepRecovery, "node ready again")
		return true
	}
	if obs.Unresponsive && !obs.Ready && nf.Step == fence.StepRecovery {
		a.reopen("node not ready for the configured duration again during its recovery: fencing starts")
		return true
	}
	return false
}

func (a *advancer) onError() bool {
	if a.recoverOrReopen() {
		return true
	}
	nf, obs := a.nf, a.obs
	if nf.Retries >= a.opts.MaxRetries {
		a.set(StatusFailed, fmt.Sprintf("%s failed %d times; clear the NodeFence to retry: %s", nf.Step, nf.Retries+1, nf.Message))
		a.event(true, ReasonFailed, "%s", nf.Message)
		return true
	}
	if obs.Now.Before(nf.RetryDue(a.opts)) {
		return false
	}
	retries := nf.Retries + 1
	a.start(nf.Step, fmt.Sprintf("retry %d of %d", retries, a.opts.MaxRetries))
	nf.Retries = retries
	return true
}

// RetryDue is when a step that errored is retried under opts (its backoff
// after the error, doubling with each retry); zero when the record is not
// waiting for a retry, or its retries are spent.
func (nf *NodeFence) RetryDue(opts Options) time.Time {
	o := opts.withDefaults()
	if nf.Status != StatusError || nf.Retries >= o.MaxRetries {
		return time.Time{}
	}
	return nf.Changed.Add(o.RetryBackoff << min(nf.Retries, 16))
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
