package teardown

import (
	"errors"
	"net/http"
)

// Reason is the reason of an Airship status response: a word saying why a
// request or a step ended as it did.
type Reason string

// The reasons of the responses of Airship's node teardown design, and the
// few fencekit adds where the design leaves a case open (marked "not in
// Airship's design").
const (
	// ReasonSuccess: every step succeeded (200).
	ReasonSuccess Reason = "Success"
	// ReasonBadRequest: a request parameter cannot work, such as a drain
	// grace period not below the drain timeout (400).
	ReasonBadRequest Reason = "BadRequest"
	// ReasonMissingDesignRef: the design reference is missing, from the
	// etcd health query's design_ref or the body of a decommission or
	// remove-etcd (400).
	ReasonMissingDesignRef Reason = "MissingDesignRef"
	// ReasonUnauthorized: the caller did not authenticate (401; not in
	// Airship's design, whose services authenticate through Keystone).
	ReasonUnauthorized Reason = "Unauthorized"
	// ReasonNotFound: the node is not in the cluster (404).
	ReasonNotFound Reason = "NotFound"
	// ReasonConflict: remove-from-cluster refused a node that is not
	// cordoned, drained and free of labels, or another teardown request for
	// the node is running (409).
	ReasonConflict Reason = "Conflict"
	// ReasonPreconditionFailed: the target revision does not exist, or
	// committed revisions without a site-action tag lie between the last
	// site action and it (412; the teardown design says "fail due to a
	// missing precondition" without naming a code).
	ReasonPreconditionFailed Reason = "PreconditionFailed"
	// ReasonDrainNodeError: the drain failed (500).
	ReasonDrainNodeError Reason = "DrainNodeError"
	// ReasonClearLabelsError: clearing the labels, or the pods settling
	// afterwards, failed (500).
	ReasonClearLabelsError Reason = "ClearLabelsError"
	// ReasonRemoveEtcdError: an etcd member on the node could not be
	// removed in time, or removing it would break its cluster's quorum
	// (500).
	ReasonRemoveEtcdError Reason = "RemoveEtcdError"
	// ReasonEtcdNotAccessible: an etcd cluster did not answer as healthy
	// within etcd-ready-timeout, or could not be read at all (500).
	ReasonEtcdNotAccessible Reason = "EtcdNotAccessible"
	// ReasonShutdownKubeletError: the kubelet was not seen to stop (500).
	ReasonShutdownKubeletError Reason = "ShutdownKubeletError"
	// ReasonDestroyNodeError: the provisioner failed to wipe or release the
	// node, or the node was not confirmed powered off (500; not in Airship's
	// design, which defers to the provisioner's own status responses).
	ReasonDestroyNodeError Reason = "DestroyNodeError"
	// ReasonDeleteNodeError: the Node could not be deleted (500).
	ReasonDeleteNodeError Reason = "DeleteNodeError"
	// ReasonDisassociateStepFailure: a step of the decommission (drain,
	// clear labels, remove etcd, etcd health) failed; the details say
	// which (500).
	ReasonDisassociateStepFailure Reason = "DisassociateStepFailure"
	// ReasonInternalError: something that is neither the request's fault nor
	// a step's, such as a missing port or a failed read before any step ran
	// (500; not in Airship's design).
	ReasonInternalError Reason = "InternalError"
)

// Code returns the HTTP status code that goes with the reason: 200, 400,
// 401, 404, 409, 412, or 500 for the step errors and unknown reasons.
func (r Reason) Code() int {
	switch r {
	case ReasonSuccess:
		return http.StatusOK
	case ReasonBadRequest, ReasonMissingDesignRef:
		return http.StatusBadRequest
	case ReasonUnauthorized:
		return http.StatusUnauthorized
	case ReasonNotFound:
		return http.StatusNotFound
	case ReasonConflict:
		return http.StatusConflict
	case ReasonPreconditionFailed:
		return http.StatusPreconditionFailed
	}
	return http.StatusInternalServerError
}

// Message kinds used in Details.MessageList.
const (
	// KindValidation marks a message about a request field.
	KindValidation = "ValidationMessage"
	// KindStep marks a message about one step of a plan.
	KindStep = "StepResult"
	// KindHealth marks the health of one etcd member (the teardown design's
	// HealthMessage: message Healthy, Unhealthy or "Unable to access Etcd").
	KindHealth = "HealthMessage"
)

// Status is an Airship status response, the shape every response of the
// teardown design takes. It marshals to the conventional JSON:
//
//	{"kind":"Status","apiVersion":"v1.0","metadata":{},"status":"Failure",
//	 "message":"...","reason":"Conflict","details":{"errorCount":1,
//	 "messageList":[{"message":"...","error":true,"kind":"StepResult","name":"remove-from-cluster"}]},
//	 "code":409}
type Status struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Metadata   struct{} `json:"metadata"`
	// Status is "Success" for a 2xx code, "Failure" otherwise.
	Status  string  `json:"status"`
	Message string  `json:"message"`
	Reason  Reason  `json:"reason"`
	Details Details `json:"details"`
	Code    int     `json:"code"`
}

// Details is the details section of a Status.
type Details struct {
	// ErrorCount counts the messages whose Error is true.
	ErrorCount int `json:"errorCount"`
	// MessageList holds one message per step, request field or etcd
	// member, as the response is about.
	MessageList []Message `json:"messageList"`
}

// Message is one entry of Details.MessageList.
type Message struct {
	Message string `json:"message"`
	// Error is true when the message reports a failure.
	Error bool `json:"error"`
	// Kind is KindStep, KindValidation or KindHealth.
	Kind string `json:"kind"`
	// Name is what the message is about: a step, a request field, an etcd
	// member ("cluster/member").
	Name string `json:"name"`
}

// NewStatus builds a Status with the reason's code, counting the messages
// that are errors. A nil list becomes an empty one, so that the JSON always
// holds a list.
func NewStatus(reason Reason, message string, msgs []Message) *Status {
	st := &Status{Kind: "Status", APIVersion: "v1.0", Message: message, Reason: reason, Code: reason.Code()}
	st.Status = "Success"
	if st.Code >= 300 {
		st.Status = "Failure"
	}
	if msgs == nil {
		msgs = []Message{}
	}
	st.Details.MessageList = msgs
	for _, m := range msgs {
		if m.Error {
			st.Details.ErrorCount++
		}
	}
	return st
}

// StatusOf turns an error of this package into a status response: nil is
// 200 Success; an *Error (or several, joined, as Request.Validate and
// Executor.Plan return them) takes its Reason and code from the first, with
// one message per error naming its field or step; any other error is 500
// InternalError.
func StatusOf(err error) *Status {
	if err == nil {
		return NewStatus(ReasonSuccess, "ok", nil)
	}
	errs := leaves(err)
	var first *Error
	msgs := make([]Message, 0, len(errs))
	for _, e := range errs {
		var te *Error
		if !errors.As(e, &te) {
			msgs = append(msgs, Message{Message: e.Error(), Error: true, Kind: KindStep})
			continue
		}
		if first == nil {
			first = te
		}
		m := Message{Message: te.Error(), Error: true, Kind: KindStep, Name: te.Step.String()}
		if te.Step == 0 {
			m.Kind, m.Name = KindValidation, te.Field
		}
		msgs = append(msgs, m)
	}
	reason := ReasonInternalError
	if first != nil && first.Reason != "" {
		reason = first.Reason
	}
	msg := err.Error()
	if len(errs) > 1 && first != nil {
		msg = first.Error() + " (and more: see details)"
	}
	return NewStatus(reason, msg, msgs)
}

// leaves flattens joined errors (errors.Join, or any error with
// Unwrap() []error that is not an *Error) into a list.
func leaves(err error) []error {
	if _, ok := err.(*Error); ok {
		return []error{err}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			if e != nil {
				out = append(out, leaves(e)...)
			}
		}
		return out
	}
	return []error{err}
}
