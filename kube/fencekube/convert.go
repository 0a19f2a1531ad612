package fencekube

import (
	"errors"
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// This file converts between the Go type NodeFence (api/v1alpha1, as the
// typed client reads it) and the record flow.NodeFence. Reading is strict:
// every value is checked, and every error names the object and the field.
// Nothing is guessed.
//
// The JSON types of the fields are the CRD's structural schema's to
// enforce: the API server refuses an object with a string where a number
// belongs, or a time that is not RFC 3339 with six digits of fraction (the
// only form metav1.MicroTime reads), so the typed client never meets one.
// (Before the one Kubernetes path, this package read the dynamic client's
// objects and checked each field's JSON type by hand, 300 lines that named
// the field of a type error where apimachinery's converter names none;
// with the schema in force the check could never fail, so it went with the
// dynamic client.) What the schema cannot know is checked here: a step,
// status, release or state that is not one of the flow's, spec.node that
// is not the object's name, a negative count.

// maxFieldErrors bounds the errors one conversion reports.
const maxFieldErrors = 10

// fieldErrors collects the malformed fields of one object.
type fieldErrors struct {
	name string
	op   string
	errs []error
}

func (f *fieldErrors) add(field string, format string, args ...any) {
	if len(f.errs) < maxFieldErrors {
		f.errs = append(f.errs, &Error{Kind: Kind, Name: f.name, Op: f.op, Field: field, Err: malformed(format, args...)})
	}
}

func (f *fieldErrors) err() error {
	switch len(f.errs) {
	case 0:
		return nil
	case 1:
		return f.errs[0]
	}
	return errors.Join(f.errs...)
}

// clip shortens s to n bytes, for quoting a value in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// The steps as the object spells them: fence.Step's names.
var stepNames = map[string]fence.Step{
	fence.StepIsolation.String():       fence.StepIsolation,
	fence.StepPowerManagement.String(): fence.StepPowerManagement,
	fence.StepRecovery.String():        fence.StepRecovery,
}

var statusNames = map[string]flow.Status{
	string(flow.StatusNew):     flow.StatusNew,
	string(flow.StatusRunning): flow.StatusRunning,
	string(flow.StatusDone):    flow.StatusDone,
	string(flow.StatusError):   flow.StatusError,
	string(flow.StatusFailed):  flow.StatusFailed,
}

var releaseNames = map[string]flow.Release{
	string(flow.ReleaseNone):    flow.ReleaseNone,
	string(flow.ReleaseStorage): flow.ReleaseStorage,
	string(flow.ReleasePower):   flow.ReleasePower,
	string(flow.ReleaseDump):    flow.ReleaseDump,
}

var stateNames = map[string]fence.State{
	"":        fence.StateUnknown,
	"unknown": fence.StateUnknown,
	"on":      fence.StateOn,
	"off":     fence.StateOff,
}

// uninitializedMessage is the Message of the record of an object whose
// status was never written.
const uninitializedMessage = "NodeFence created; its status is not written yet"

// Initialized reports whether the object's status has been written: an
// object just created (the status subresource drops the status of a
// create) has none.
func Initialized(s *NodeFenceStatus) bool {
	return s.Step != "" || s.Status != "" || len(s.Jobs) > 0 || len(s.History) > 0 ||
		s.Isolated || s.PoweredOff || s.ConfirmedOff || s.Released != "" || s.Releasing != "" || s.Restoring || s.Hold || s.Held
}

// Record converts the object to the record the controller works on. It is
// strict: an unknown step, status, release or device state, spec.node that
// is not the object's name, a negative count or retry, a job without a
// method or a start time, a transition without a time: each is an *Error
// wrapping ErrMalformed naming the field (several are joined).
//
// Version is the resourceVersion, Deleting is set when the object has a
// deletionTimestamp, Clear when spec.retry is above status.observedRetry.
// An object whose status was never written (see Initialized) is the record
// of a fencing that has not started: isolation, New, created at the
// object's creationTimestamp, with no job run. That is what its creator
// stored before its status write, and nothing can have been done to the
// node through it yet.
func Record(o *NodeFence) (*flow.NodeFence, error) {
	f := &fieldErrors{name: o.Name, op: OpDecode}
	if o.Name == "" {
		f.add("metadata.name", "missing")
	}
	if o.Spec.Node == "" {
		f.add("spec.node", "missing")
	} else if o.Spec.Node != o.Name {
		f.add("spec.node", "%q is not the object's name %q", clip(o.Spec.Node, 253), o.Name)
	}
	if o.Spec.Retry < 0 {
		f.add("spec.retry", "%d is negative", o.Spec.Retry)
	}
	s := &o.Status
	nf := &flow.NodeFence{
		Node:     o.Name,
		Deleting: o.DeletionTimestamp != nil,
		Version:  o.ResourceVersion,
		Clear:    o.Spec.Retry > s.ObservedRetry,
	}
	nf.MarkedHealthy = timeOf(o.Spec.MarkedHealthy)
	if c := o.Spec.Confirmation; c != nil {
		// Checked by the CRD's schema; what is wrong still (an empty
		// field) is refused by the flow with the reason, and never makes
		// the record unreadable. Who wrote it is proven by the controller's
		// ConfirmCheck (ConfirmationProof), from the request it names.
		nf.Confirm = &flow.Confirmation{By: c.By, Reason: c.Reason, Incident: timeOf(&c.Incident), Request: c.Request}
	}
	if s.ObservedRetry < 0 {
		f.add("status.observedRetry", "%d is negative", s.ObservedRetry)
	}
	if !Initialized(s) {
		created := utc(o.CreationTimestamp.Time)
		if s.Created != nil {
			created = timeOf(s.Created)
		}
		nf.Step, nf.Status = fence.StepIsolation, flow.StatusNew
		nf.Created, nf.StepStarted, nf.Changed = created, created, created
		nf.Message = uninitializedMessage
		if err := f.err(); err != nil {
			return nil, err
		}
		return nf, nil
	}
	nf.Step = step(f, s.Step, "status.step")
	nf.Status = status(f, s.Status, "status.status")
	nf.Retries = count(f, s.Retries, "status.retries")
	nf.Polls = count(f, s.Polls, "status.polls")
	for i, j := range s.Jobs {
		fld := fmt.Sprintf("status.jobs[%d]", i)
		job := flow.Job{
			Step:         step(f, j.Step, fld+".step"),
			Level:        count(f, j.Level, fld+".level"),
			Index:        count(f, j.Index, fld+".index"),
			Method:       j.Method,
			Action:       action(f, j.Action, fld+".action"),
			Phase:        action(f, j.Phase, fld+".phase"),
			Owner:        j.Owner,
			Started:      timeOf(j.Started),
			Finished:     timeOf(j.Finished),
			OK:           j.OK,
			BestEffort:   j.BestEffort,
			OffConfirmed: j.OffConfirmed,
			ByTime:       j.ByTime,
			Already:      j.Already,
			Unknown:      j.Unknown,
			Error:        j.Error,
			Target:       j.Target,
		}
		if j.Method == "" {
			f.add(fld+".method", "missing")
		}
		if j.Started == nil {
			f.add(fld+".started", "missing")
		}
		if st, ok := stateNames[j.State]; ok {
			job.State = st
		} else {
			f.add(fld+".state", "%q is not a state (want on, off or unknown)", clip(j.State, 32))
		}
		nf.Jobs = append(nf.Jobs, job)
	}
	nf.Isolated, nf.PoweredOff, nf.Restoring = s.Isolated, s.PoweredOff, s.Restoring
	nf.ConfirmedOff, nf.ConfirmRefused = s.ConfirmedOff, s.ConfirmationRefused
	nf.Hold, nf.Held = s.Hold, s.Held
	if c := s.Confirmation; c != nil {
		nf.Confirmation = &flow.Confirmation{By: c.By, Reason: c.Reason, Incident: timeOf(&c.Incident), Request: c.Request, At: timeOf(&c.At)}
	}
	nf.Incident = timeOf(s.Incident)
	nf.Released = release(f, s.Released, "status.released")
	nf.Releasing = release(f, s.Releasing, "status.releasing")
	nf.Created = timeOf(s.Created)
	if nf.Created.IsZero() {
		nf.Created = utc(o.CreationTimestamp.Time)
	}
	nf.StepStarted = timeOf(s.StepStarted)
	nf.Changed = timeOf(s.Changed)
	nf.LastPoll = timeOf(s.LastPoll)
	nf.FencedAt = timeOf(s.FencedAt)
	nf.PodsWaitSince = timeOf(s.PodsWaitSince)
	nf.OnError = s.OnError
	nf.FoundOn = s.FoundOn
	nf.OffCheckedAt = timeOf(s.OffCheckedAt)
	nf.Message = s.Message
	for i, h := range s.History {
		fld := fmt.Sprintf("status.history[%d]", i)
		if h.Time == nil {
			f.add(fld+".time", "missing")
		}
		nf.History = append(nf.History, flow.Transition{
			Time:    timeOf(h.Time),
			Step:    step(f, h.Step, fld+".step"),
			Status:  status(f, h.Status, fld+".status"),
			Message: h.Message,
		})
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	return nf, nil
}

func step(f *fieldErrors, s, field string) fence.Step {
	st, ok := stepNames[s]
	if !ok {
		if s == "" {
			f.add(field, "missing")
		} else {
			f.add(field, "%q is not a step (want isolation, power_management or recovery)", clip(s, 32))
		}
	}
	return st
}

func status(f *fieldErrors, s, field string) flow.Status {
	st, ok := statusNames[s]
	if !ok {
		if s == "" {
			f.add(field, "missing")
		} else {
			f.add(field, "%q is not a status (want New, Running, Done, Error or Failed)", clip(s, 32))
		}
	}
	return st
}

// actionNames are the actions a job may carry out; "" is a job written
// before jobs had them.
var actionNames = map[string]fence.Action{
	"":                          fence.ActionNone,
	fence.ActionOn.String():     fence.ActionOn,
	fence.ActionOff.String():    fence.ActionOff,
	fence.ActionReboot.String(): fence.ActionReboot,
}

func action(f *fieldErrors, s, field string) fence.Action {
	a, ok := actionNames[s]
	if !ok {
		f.add(field, "%q is not an action (want on, off or reboot)", clip(s, 32))
	}
	return a
}

func actionName(a fence.Action) string {
	if a == fence.ActionNone {
		return ""
	}
	return a.String()
}

func release(f *fieldErrors, s, field string) flow.Release {
	r, ok := releaseNames[s]
	if !ok {
		f.add(field, "%q is not a pod release (want Storage, Power or empty)", clip(s, 32))
	}
	return r
}

func count(f *fieldErrors, n int64, field string) int {
	if n < 0 || n > math.MaxInt32 {
		f.add(field, "%d is out of range", n)
		return 0
	}
	return int(n)
}

func timeOf(t *metav1.MicroTime) time.Time {
	if t == nil || t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func microTime(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewMicroTime(t.UTC())
	return &mt
}

// FromRecord returns the object of a record: named after the node, with
// resourceVersion nf.Version and the status nf holds. Spec.Retry and
// Status.ObservedRetry are not part of the record: they are zero, and the
// Store sets them from the stored object. Times are kept to the
// microsecond, as the object stores them.
func FromRecord(nf *flow.NodeFence) *NodeFence {
	o := &NodeFence{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: nf.Node, ResourceVersion: nf.Version},
		Spec:       NodeFenceSpec{Node: nf.Node},
	}
	s := &o.Status
	s.Step = nf.Step.String()
	s.Status = string(nf.Status)
	s.Retries, s.Polls = int64(nf.Retries), int64(nf.Polls)
	for _, j := range nf.Jobs {
		state := ""
		if j.State.Known() {
			state = j.State.String()
		}
		s.Jobs = append(s.Jobs, NodeFenceJob{
			Step: j.Step.String(), Level: int64(j.Level), Index: int64(j.Index), Method: j.Method,
			Action: actionName(j.Action), Phase: actionName(j.Phase),
			Owner: j.Owner, Started: microTime(j.Started), Finished: microTime(j.Finished),
			OK: j.OK, BestEffort: j.BestEffort, OffConfirmed: j.OffConfirmed, ByTime: j.ByTime, Already: j.Already,
			Unknown: j.Unknown, State: state, Error: j.Error, Target: clip(j.Target, 1024),
		})
	}
	s.Isolated, s.PoweredOff, s.Restoring = nf.Isolated, nf.PoweredOff, nf.Restoring
	s.ConfirmedOff, s.ConfirmationRefused = nf.ConfirmedOff, nf.ConfirmRefused
	s.Hold, s.Held = nf.Hold, nf.Held
	if c := nf.Confirmation; c != nil {
		s.Confirmation = &NodeFenceConfirmed{By: c.By, Reason: c.Reason, Request: c.Request,
			Incident: metav1.NewMicroTime(c.Incident.UTC()), At: metav1.NewMicroTime(c.At.UTC())}
	}
	s.Incident = microTime(nf.Incident)
	s.Released, s.Releasing = string(nf.Released), string(nf.Releasing)
	s.Created = microTime(nf.Created)
	s.StepStarted = microTime(nf.StepStarted)
	s.Changed = microTime(nf.Changed)
	s.LastPoll = microTime(nf.LastPoll)
	s.FencedAt = microTime(nf.FencedAt)
	s.PodsWaitSince = microTime(nf.PodsWaitSince)
	s.OnError = nf.OnError
	s.FoundOn = nf.FoundOn
	s.OffCheckedAt = microTime(nf.OffCheckedAt)
	s.Message = nf.Message
	for _, h := range nf.History {
		s.History = append(s.History, NodeFenceTransition{
			Time: microTime(h.Time), Step: h.Step.String(), Status: string(h.Status), Message: h.Message,
		})
	}
	return o
}
