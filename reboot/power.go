package reboot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Power carries out the power part of a decision through the fence core, so
// that any driver can reboot a host: a verified off for PowerOff (with
// fence.Options.Soft for Mode Soft: the device's graceful off first, then a
// hard off if the graceful one is refused or the host is not off within
// softTimeout), a verified on for PowerOn. m is not changed: its Options
// are used for everything else. softTimeout <= 0 keeps m's SoftTimeout (by
// default its PowerTimeout). A device without a graceful off is switched
// off hard.
//
// A decision with no power operation returns (nil, nil). An error is the
// fence core's (see fence.Do): the caller marks the host's last power
// operation as failed, so that the next power off is hard.
func Power(ctx context.Context, m *fence.Method, d Decision, softTimeout time.Duration) (*fence.Result, error) {
	var a fence.Action
	switch {
	case d.PowerOff && d.PowerOn:
		return nil, errors.New("reboot: a decision cannot power off and on at once")
	case d.PowerOff:
		a = fence.ActionOff
	case d.PowerOn:
		a = fence.ActionOn
	default:
		return nil, nil
	}
	if m == nil {
		return nil, errors.New("reboot: no fence method")
	}
	if m.Action != fence.ActionNone && m.Action != a {
		return nil, &fence.Error{
			Node: m.Node, Method: m.Name, Driver: m.Driver, Plug: m.Plug, Action: a, Op: "open",
			Err: fence.NotDone(fmt.Errorf("the method always does %v", m.Action)),
		}
	}
	mm := *m
	mm.Options.Soft = a == fence.ActionOff && d.Mode == Soft
	if mm.Options.Soft && softTimeout > 0 {
		mm.Options.SoftTimeout = softTimeout
	}
	return fence.Do(ctx, &mm, a)
}
