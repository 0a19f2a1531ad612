package reboot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

func bmc(initial fence.State) (*fake.Device, *fence.Method) {
	dev := fake.New(fake.Options{Plugs: []string{""}, Initial: initial})
	return dev, &fence.Method{
		Name: "bmc", Node: "host-0", Driver: "fake", Device: dev,
		Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: time.Second},
	}
}

var (
	offSoft = Decision{PowerOff: true, Mode: Soft}
	offHard = Decision{PowerOff: true, Mode: Hard}
	powerOn = Decision{PowerOn: true, SetLastPoweredOn: true}
)

// "the soft mode uses the graceful-off capability and falls back to hard
// after a timeout"
func TestPowerSoftFallsBackToHardAfterTimeout(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore}) // the OS does not shut down
	start := time.Now()
	res, err := Power(context.Background(), m, offSoft, 30*time.Millisecond)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "the soft off was given its time")
	assert.True(t, res.Fenced())
	assert.Equal(t, 1, dev.Calls(fake.OpSoftOff))
	assert.Equal(t, 1, dev.Calls(fake.OpSet))
	assert.Equal(t, fence.StateOff, dev.Truth(""))
}

func TestPowerSoftRefusedFallsBackToHard(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail})
	res, err := Power(context.Background(), m, offSoft, time.Second)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, [2]int{1, 1}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
}

func TestPowerSoftThatWorksIsEnough(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	_, err := Power(context.Background(), m, offSoft, time.Second)
	require.NoError(t, err)
	assert.Equal(t, [2]int{1, 0}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
}

func TestPowerHardSkipsTheGracefulOff(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	m.Options.Soft = true // the method's own setting does not matter
	_, err := Power(context.Background(), m, offHard, time.Second)
	require.NoError(t, err)
	assert.Equal(t, [2]int{0, 1}, [2]int{dev.Calls(fake.OpSoftOff), dev.Calls(fake.OpSet)})
	assert.True(t, m.Options.Soft, "the caller's method is not changed")
}

func TestPowerOn(t *testing.T) {
	dev, m := bmc(fence.StateOff)
	res, err := Power(context.Background(), m, powerOn, time.Second)
	require.NoError(t, err)
	assert.Equal(t, fence.ActionOn, res.Action)
	assert.Equal(t, fence.StateOn, dev.Truth(""))
	assert.Zero(t, dev.Calls(fake.OpSoftOff))
}

func TestPowerNothingToDo(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	res, err := Power(context.Background(), m, Decision{SetPendingRebootSince: true, RemoveAnnotations: []string{Annotation}}, time.Second)
	assert.NoError(t, err)
	assert.Nil(t, res)
	assert.Zero(t, dev.Calls(fake.OpAny))
}

func TestPowerFailureIsReported(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	dev.Inject(fake.Fault{Kind: fake.Down})
	_, err := Power(context.Background(), m, offSoft, time.Second)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	// The caller marks the failure, and the next decision is hard.
	d := Decide(with(base(), func(in *Input) { in.PendingRebootSince, in.LastPowerFailed = at(50), true }))
	assert.Equal(t, Hard, d.Mode)
}

func TestPowerRefusesContradictions(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	_, err := Power(context.Background(), m, Decision{PowerOff: true, PowerOn: true}, 0)
	assert.Error(t, err)
	_, err = Power(context.Background(), nil, offSoft, 0)
	assert.Error(t, err)
	// A method bound to one action is never used for the other.
	m.Action = fence.ActionOff
	_, err = Power(context.Background(), m, powerOn, 0)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	var fe *fence.Error
	assert.True(t, errors.As(err, &fe))
	assert.Zero(t, dev.Calls(fake.OpAny))
	_, err = Power(context.Background(), m, offHard, 0)
	assert.NoError(t, err)
}

func TestPowerKeepsTheMethodsSoftTimeout(t *testing.T) {
	dev, m := bmc(fence.StateOn)
	dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore})
	m.Options.SoftTimeout = 20 * time.Millisecond
	start := time.Now()
	_, err := Power(context.Background(), m, offSoft, 0)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 900*time.Millisecond, "SoftTimeout, not PowerTimeout")
	assert.Equal(t, 1, dev.Calls(fake.OpSet))
}
