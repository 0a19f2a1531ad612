package fence_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

func m(name string, d fence.Device, a fence.Action) *fence.Method {
	return &fence.Method{Name: name, Node: "node-2", Driver: "fake", Device: d, Plug: "1", Action: a,
		Options: fence.Options{PowerTimeout: 2 * time.Second}}
}

func TestLevelsFirstLevelFences(t *testing.T) {
	ipmi := fake.New(fake.Options{})
	pdu := fake.New(fake.Options{})
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
		{Methods: []*fence.Method{m("ipmi", ipmi, 0)}},
		{Methods: []*fence.Method{m("pdu", pdu, 0)}},
	}, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced)
	assert.Equal(t, 0, res.Level)
	assert.Len(t, res.Levels, 1)
	assert.Equal(t, 0, pdu.Calls(fake.OpAny), "later levels are not touched")
}

func TestLevelsFallThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ipmi := fake.New(fake.Options{})
		ipmi.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
		pduA := fake.New(fake.Options{})
		pduB := fake.New(fake.Options{})
		res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
			{Methods: []*fence.Method{m("ipmi", ipmi, 0)}},
			{Methods: []*fence.Method{m("pdu-a", pduA, 0), m("pdu-b", pduB, 0)}},
		}, fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced)
		assert.Equal(t, 1, res.Level)
		require.Len(t, res.Levels, 2)
		assert.ErrorIs(t, res.Levels[0].Err, fence.ErrUnreachable)
		assert.Len(t, res.Levels[1].Results, 2)
		assert.Equal(t, fence.StateOff, pduA.Truth("1"))
		assert.Equal(t, fence.StateOff, pduB.Truth("1"))
	})
}

func TestLevelStopsAtFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// power_management=eaton-off eaton-on: a failed off must not be
		// followed by the on.
		pdu := fake.New(fake.Options{})
		pdu.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
		res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
			{Methods: []*fence.Method{m("eaton-off", pdu, fence.ActionOff), m("eaton-on", pdu, fence.ActionOn)}},
		}, fence.ActionReboot)
		require.Error(t, err)
		assert.False(t, res.Fenced)
		assert.Equal(t, -1, res.Level)
		assert.Len(t, res.Levels[0].Results, 1)
		assert.ErrorIs(t, err, fence.ErrNotFenced)
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown, "the off may have acted")
		var le *fence.LevelsError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), "level 1")
	})
}

func TestLevelOffThenOnFences(t *testing.T) {
	pdu := fake.New(fake.Options{})
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
		{Methods: []*fence.Method{m("eaton-off", pdu, fence.ActionOff), m("eaton-on", pdu, fence.ActionOn)}},
	}, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced)
	assert.Equal(t, fence.StateOn, pdu.Truth("1"))
}

func TestLevelNeedsAnOffConfirmed(t *testing.T) {
	bmc := fake.New(fake.Options{})
	cyc := m("ipmi-cycle", bmc, 0)
	cyc.Options.RebootMethod = fence.RebootCycle
	pdu := fake.New(fake.Options{})
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
		{Methods: []*fence.Method{cyc}},
		{Methods: []*fence.Method{m("pdu", pdu, 0)}},
	}, fence.ActionReboot)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Level, "a cycle shows no off: the next level fences")
	assert.True(t, res.Fenced)
	assert.Contains(t, res.Levels[0].Err.Error(), "confirmed the node off")
}

func TestBestEffortMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := fake.New(fake.Options{})
		down.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
		ok := fake.New(fake.Options{})
		be := m("kdump-notify", down, 0)
		be.BestEffort = true
		res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
			{Methods: []*fence.Method{be, m("pdu", ok, 0)}},
		}, fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced)
		assert.Len(t, res.Levels[0].Results, 2)

		// All best effort and all failed: not fenced.
		be2 := m("other", down, 0)
		be2.BestEffort = true
		_, err = fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{be, be2}}}, fence.ActionOff)
		require.Error(t, err)
		assert.ErrorIs(t, err, fence.ErrNotFenced)
		assert.ErrorIs(t, err, fence.ErrNotDone)
	})
}

func TestLevelsRecoveryOn(t *testing.T) {
	fc := fake.New(fake.Options{Initial: fence.StateOff})
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{m("fc-on", fc, fence.ActionOn)}}}, fence.ActionOn)
	require.NoError(t, err)
	assert.False(t, res.Fenced)
	assert.Equal(t, 0, res.Level)
	assert.Equal(t, fence.StateOn, fc.Truth("1"))
}

func TestNoLevels(t *testing.T) {
	_, err := fence.DoLevels(t.Context(), "node-2", nil, fence.ActionOff)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrNotFenced)
	assert.ErrorIs(t, err, fence.ErrConfig)
	_, err = fence.DoLevels(t.Context(), "node-2", []fence.Level{{}}, fence.ActionOff)
	assert.ErrorIs(t, err, fence.ErrConfig)
}
