package fencekube

import (
	"errors"
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
)

// This file converts between the three forms of a NodeFence: the object
// as the dynamic client gives it (unstructured), the Go type NodeFence, and
// the record flow.NodeFence. Reading is strict: every field is checked,
// and every error names the object and the field. Nothing is guessed.
//
// FromUnstructured reads the object field by field by hand, where
// apimachinery's runtime.DefaultUnstructuredConverter could convert it in
// one call: measured on a NodeFence with one wrong field each, the
// converter names no field ("unrecognized type: int64" for a string in
// spec.retry, "cannot restore struct from: string" for a job that is not
// an object), and encoding/json names the field without the list index
// ("status.jobs.level") and none for a time that does not parse. An
// operator reading the NodeFenceMalformed event must be told which field
// of which job to fix; the decoder below names it (status.jobs[1].level).

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

// FromUnstructured converts an object read with the dynamic client to the
// Go type. Every field of spec and status is checked for its JSON type, and
// times must be RFC 3339 (with or without fractional seconds); unknown
// fields are ignored (the API server prunes them). The error is an *Error
// wrapping ErrMalformed that names the field, or several joined.
// Values (steps, statuses, counts) are checked by Record.
func FromUnstructured(u *unstructured.Unstructured) (*NodeFence, error) {
	d := &decoder{fieldErrors: fieldErrors{name: u.GetName(), op: OpDecode}}
	o := &NodeFence{}
	if av := u.GetAPIVersion(); av != SchemeGroupVersion.String() {
		d.add("apiVersion", "%q is not %s", av, SchemeGroupVersion)
	}
	if k := u.GetKind(); k != Kind {
		d.add("kind", "%q is not %s", k, Kind)
	}
	o.TypeMeta = metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &o.ObjectMeta); err != nil {
			d.add("metadata", "%v", err)
		}
	} else {
		d.add("metadata", "missing")
	}
	if o.Name == "" {
		d.add("metadata.name", "missing")
	}

	spec, _ := d.object(u.Object, "spec", "spec")
	o.Spec.Node = d.str(spec, "node", "spec.node")
	o.Spec.Retry = d.int(spec, "retry", "spec.retry")
	o.Spec.MarkedHealthy = d.time(spec, "markedHealthy", "spec.markedHealthy")
	if c, _ := d.object(spec, "confirmation", "spec.confirmation"); c != nil {
		o.Spec.Confirmation = &NodeFenceConfirmation{
			By:     d.str(c, "by", "spec.confirmation.by"),
			Reason: d.str(c, "reason", "spec.confirmation.reason"),
		}
		if t := d.time(c, "incident", "spec.confirmation.incident"); t != nil {
			o.Spec.Confirmation.Incident = *t
		}
	}

	st, _ := d.object(u.Object, "status", "status")
	s := &o.Status
	s.Step = d.str(st, "step", "status.step")
	s.Status = d.str(st, "status", "status.status")
	s.Retries = d.int(st, "retries", "status.retries")
	s.Polls = d.int(st, "polls", "status.polls")
	for i, item := range d.list(st, "jobs", "status.jobs") {
		f := fmt.Sprintf("status.jobs[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			d.add(f, "not an object")
			continue
		}
		s.Jobs = append(s.Jobs, NodeFenceJob{
			Step:         d.str(m, "step", f+".step"),
			Level:        d.int(m, "level", f+".level"),
			Index:        d.int(m, "index", f+".index"),
			Method:       d.str(m, "method", f+".method"),
			Action:       d.str(m, "action", f+".action"),
			Phase:        d.str(m, "phase", f+".phase"),
			Owner:        d.str(m, "owner", f+".owner"),
			Started:      d.time(m, "started", f+".started"),
			Finished:     d.time(m, "finished", f+".finished"),
			OK:           d.bool(m, "ok", f+".ok"),
			BestEffort:   d.bool(m, "bestEffort", f+".bestEffort"),
			OffConfirmed: d.bool(m, "offConfirmed", f+".offConfirmed"),
			ByTime:       d.bool(m, "byTime", f+".byTime"),
			Already:      d.bool(m, "already", f+".already"),
			Unknown:      d.bool(m, "unknown", f+".unknown"),
			State:        d.str(m, "state", f+".state"),
			Error:        d.str(m, "error", f+".error"),
		})
	}
	s.Isolated = d.bool(st, "isolated", "status.isolated")
	s.PoweredOff = d.bool(st, "poweredOff", "status.poweredOff")
	s.ConfirmedOff = d.bool(st, "confirmedOff", "status.confirmedOff")
	if c, _ := d.object(st, "confirmation", "status.confirmation"); c != nil {
		s.Confirmation = &NodeFenceConfirmed{
			By:     d.str(c, "by", "status.confirmation.by"),
			Reason: d.str(c, "reason", "status.confirmation.reason"),
		}
		if t := d.time(c, "incident", "status.confirmation.incident"); t != nil {
			s.Confirmation.Incident = *t
		}
		if t := d.time(c, "at", "status.confirmation.at"); t != nil {
			s.Confirmation.At = *t
		}
	}
	s.ConfirmationRefused = d.str(st, "confirmationRefused", "status.confirmationRefused")
	s.Incident = d.time(st, "incident", "status.incident")
	s.Released = d.str(st, "released", "status.released")
	s.Releasing = d.str(st, "releasing", "status.releasing")
	s.Restoring = d.bool(st, "restoring", "status.restoring")
	s.Hold = d.bool(st, "hold", "status.hold")
	s.Held = d.bool(st, "held", "status.held")
	s.Created = d.time(st, "created", "status.created")
	s.StepStarted = d.time(st, "stepStarted", "status.stepStarted")
	s.Changed = d.time(st, "changed", "status.changed")
	s.LastPoll = d.time(st, "lastPoll", "status.lastPoll")
	s.FencedAt = d.time(st, "fencedAt", "status.fencedAt")
	s.PodsWaitSince = d.time(st, "podsWaitSince", "status.podsWaitSince")
	s.OnError = d.str(st, "onError", "status.onError")
	s.FoundOn = d.str(st, "foundOn", "status.foundOn")
	s.OffCheckedAt = d.time(st, "offCheckedAt", "status.offCheckedAt")
	s.Message = d.str(st, "message", "status.message")
	for i, item := range d.list(st, "history", "status.history") {
		f := fmt.Sprintf("status.history[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			d.add(f, "not an object")
			continue
		}
		s.History = append(s.History, NodeFenceTransition{
			Time:    d.time(m, "time", f+".time"),
			Step:    d.str(m, "step", f+".step"),
			Status:  d.str(m, "status", f+".status"),
			Message: d.str(m, "message", f+".message"),
		})
	}
	s.ObservedRetry = d.int(st, "observedRetry", "status.observedRetry")
	s.ObservedGeneration = d.int(st, "observedGeneration", "status.observedGeneration")
	// The conditions are derived from the rest (see Conditions): read for
	// the times of their transitions, checked by the CRD's schema.
	if cs := d.list(st, "conditions", "status.conditions"); len(cs) > 0 {
		var c struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"conditions": cs}, &c); err != nil {
			d.add("status.conditions", "%v", err)
		}
		s.Conditions = c.Conditions
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return o, nil
}

// decoder reads typed values out of an object's JSON form. A missing or
// null value is the zero value; a value of the wrong type is an error.
type decoder struct {
	fieldErrors
}

func (d *decoder) value(m map[string]any, key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok && v != nil
}

func (d *decoder) object(m map[string]any, key, field string) (map[string]any, bool) {
	v, ok := d.value(m, key)
	if !ok {
		return nil, true
	}
	o, ok := v.(map[string]any)
	if !ok {
		d.add(field, "%s is not an object", typeName(v))
	}
	return o, ok
}

func (d *decoder) list(m map[string]any, key, field string) []any {
	v, ok := d.value(m, key)
	if !ok {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.add(field, "%s is not a list", typeName(v))
	}
	return l
}

func (d *decoder) str(m map[string]any, key, field string) string {
	v, ok := d.value(m, key)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.add(field, "%s is not a string", typeName(v))
	}
	return s
}

func (d *decoder) bool(m map[string]any, key, field string) bool {
	v, ok := d.value(m, key)
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		d.add(field, "%s is not a boolean", typeName(v))
	}
	return b
}

func (d *decoder) int(m map[string]any, key, field string) int64 {
	v, ok := d.value(m, key)
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n)
		}
		d.add(field, "%v is not an integer", n)
		return 0
	}
	d.add(field, "%s is not an integer", typeName(v))
	return 0
}

func (d *decoder) time(m map[string]any, key, field string) *metav1.MicroTime {
	s := d.str(m, key, field)
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.add(field, "%q is not an RFC 3339 time", clip(s, 64))
		return nil
	}
	mt := metav1.NewMicroTime(t)
	return &mt
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// clip shortens s to n bytes, for quoting a value in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ToUnstructured returns the object in the dynamic client's form.
func ToUnstructured(o *NodeFence) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, &Error{Kind: Kind, Name: o.Name, Op: OpEncode, Err: err}
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(SchemeGroupVersion.String())
	u.SetKind(Kind)
	return u, nil
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
		// Checked by the CRD's schema and the admission policy; what is
		// wrong still (an empty field) is refused by the flow with the
		// reason, and never makes the record unreadable.
		nf.Confirm = &flow.Confirmation{By: c.By, Reason: c.Reason, Incident: timeOf(&c.Incident)}
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
		nf.Confirmation = &flow.Confirmation{By: c.By, Reason: c.Reason, Incident: timeOf(&c.Incident), At: timeOf(&c.At)}
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
			Unknown: j.Unknown, State: state, Error: j.Error,
		})
	}
	s.Isolated, s.PoweredOff, s.Restoring = nf.Isolated, nf.PoweredOff, nf.Restoring
	s.ConfirmedOff, s.ConfirmationRefused = nf.ConfirmedOff, nf.ConfirmRefused
	s.Hold, s.Held = nf.Hold, nf.Held
	if c := nf.Confirmation; c != nil {
		s.Confirmation = &NodeFenceConfirmed{By: c.By, Reason: c.Reason,
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
