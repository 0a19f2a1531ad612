package redfish_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// Two machines on two live Redfish responders; node-1's method names the
// other (a swapped address). The off is refused before anything is
// switched, not done, naming both identities (ComputerSystem.UUID against
// the node's system UUID), and the healthy machine stays on; the method
// with the right address fences node-1. A system that reports no UUID
// proceeds.
func TestIdentitySwappedAddress(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	const otherUUID = "6d1c7f0e-5a3b-4c2e-9f11-00000000beef"
	right := start(t, redfishsim.Options{Systems: []redfishsim.System{{UUID: "4C4C4544-0032-3310-8051-B7C04F333532"}}})
	wrong := start(t, redfishsim.Options{Systems: []redfishsim.System{{UUID: otherUUID}}})
	method := func(s *redfishsim.Server) *fence.Method {
		return &fence.Method{Name: "bmc", Node: "node-1", Driver: "redfish", Device: open(t, s), SystemUUID: nodeUUID,
			Options: fence.Options{PollInterval: 10 * time.Millisecond, PowerTimeout: 5 * time.Second}}
	}

	_, err := fence.Do(ctxT(t), method(wrong), fence.ActionReboot)
	require.Error(t, err)
	assert.True(t, errors.Is(err, fence.ErrWrongMachine), "%v", err)
	assert.True(t, fence.IsNotDone(err), "%v", err)
	assert.Contains(t, err.Error(), nodeUUID)
	assert.Contains(t, err.Error(), otherUUID)
	assert.NotContains(t, err.Error(), secret)
	assert.Equal(t, fence.StateOn, wrong.Truth("1"), "the healthy machine behind the swapped address was switched")
	assert.Empty(t, wrong.Resets(), "a reset reached the wrong machine")

	res, err := fence.Do(ctxT(t), method(right), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, fence.StateOff, right.Truth("1"))

	none := start(t, redfishsim.Options{})
	res, err = fence.Do(ctxT(t), method(none), fence.ActionOff)
	require.NoError(t, err, "a system without a UUID proceeds")
	assert.True(t, res.Fenced())
}
