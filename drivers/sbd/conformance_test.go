package sbd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/sbd"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
)

// The conformance suite on a loop device the real sbd created (msgwait
// 1 s): the plugs are nodes' slots; the truth is what sbd list reads in
// their mailboxes (a fencing message: off), while the driver reports a node
// off only msgwait later (Settle).
func TestConformance(t *testing.T) {
	dev := loopDevice(t, 4<<20)
	sbdRun(t, "-d", dev, "-1", "1", "-4", "1", "create")
	for _, n := range []string{"n1", "n2", "n3"} {
		sbdRun(t, "-d", dev, "allocate", n)
	}
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		d, err := sbd.New(t.Context(), sbd.Options{Devices: []string{dev}, From: "fencer"})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return &fencetest.Fixture{
			Device: d, Plugs: []string{"n1", "n2", "n3"}, MissingPlug: "n99",
			Truth: func(ctx context.Context, plug string) (fence.State, error) {
				m, err := sbd.ParseMessage(list(t, dev)[plug][0])
				if err != nil {
					return fence.StateUnknown, err
				}
				if m.Kills() {
					return fence.StateOff, nil
				}
				return fence.StateOn, nil
			},
			Settle: 1200 * time.Millisecond,
		}
	})
}
