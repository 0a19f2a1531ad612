package reinstall

import (
	"fmt"

	"github.com/fencekit/fencekit/internal/enum"
	"github.com/fencekit/fencekit/internal/strictjson"
)

// OrderBody is the JSON answer to the installer's lookup: an Order.
type OrderBody struct {
	// Kind is "not-allocated", "boot-local", "reinstall" or "halt".
	Kind        string   `json:"kind"`
	Machine     string   `json:"machine"`
	Generation  uint64   `json:"generation,omitempty"`
	Image       string   `json:"image,omitempty"`
	PrimaryDisk *DiskRef `json:"primaryDisk,omitempty"`
	Attempt     int      `json:"attempt,omitempty"`
	DiskIntact  bool     `json:"diskIntact,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

// OrderBodyOf returns an order's body.
func OrderBodyOf(o Order) OrderBody {
	b := OrderBody{Kind: o.Kind.String(), Machine: o.Machine, Generation: o.Generation, Image: o.Image,
		Attempt: o.Attempt, DiskIntact: o.DiskIntact, Reason: o.Reason}
	if !o.PrimaryDisk.IsZero() {
		d := o.PrimaryDisk
		b.PrimaryDisk = &d
	}
	return b
}

// Order returns the order a body holds, checked (Order.Validate for a
// reinstall): the installer wipes nothing on an order it cannot read.
func (b OrderBody) Order() (Order, error) {
	o := Order{Machine: b.Machine, Generation: b.Generation, Image: b.Image, Attempt: b.Attempt, DiskIntact: b.DiskIntact, Reason: b.Reason}
	o.Kind, _ = enum.Value[OrderKind](orderNames[:], b.Kind)
	if o.Kind == OrderNone {
		return Order{}, errorf(b.Machine, "kind", fmt.Errorf("%w: order kind %q", ErrBadRequest, b.Kind))
	}
	if b.PrimaryDisk != nil {
		o.PrimaryDisk = *b.PrimaryDisk
	}
	if o.Kind == OrderReinstall {
		if err := o.Validate(); err != nil {
			return Order{}, err
		}
	}
	return o, nil
}

// ReportBody is the JSON body of the installer's report of one attempt;
// the machine is the path's.
type ReportBody struct {
	Generation uint64 `json:"generation"`
	Attempt    int    `json:"attempt"`
	// Outcome is "succeeded" or "failed".
	Outcome string `json:"outcome"`
	Wiped   bool   `json:"wiped"`
	Reason  string `json:"reason,omitempty"`
}

// ReportBodyOf returns a report's body.
func ReportBodyOf(r Report) ReportBody {
	return ReportBody{Generation: r.Generation, Attempt: r.Attempt, Outcome: r.Outcome.String(), Wiped: r.Wiped, Reason: r.Reason}
}

// DecodeReportBody reads a report's body strictly (internal/strictjson: one
// object, known members only, spelt as declared and each once, at most
// MaxRequestBytes) for the machine.
func DecodeReportBody(machine string, body []byte) (Report, error) {
	if len(body) > MaxRequestBytes {
		return Report{}, errorf(machine, "body", fmt.Errorf("%w: more than %d bytes", ErrBadRequest, MaxRequestBytes))
	}
	var b ReportBody
	if err := strictjson.Decode(body, 1, &b); err != nil {
		return Report{}, errorf(machine, "body", fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	r := Report{Machine: machine, Generation: b.Generation, Attempt: b.Attempt, Wiped: b.Wiped, Reason: b.Reason}
	switch b.Outcome {
	case "succeeded":
		r.Outcome = OutcomeSucceeded
	case "failed":
		r.Outcome = OutcomeFailed
	default:
		return Report{}, errorf(machine, "outcome", fmt.Errorf("%w: outcome %q (want succeeded or failed)", ErrBadRequest, b.Outcome))
	}
	return r, nil
}
