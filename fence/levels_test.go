package fence_test

import (
	"context"
	"errors"
	"slices"
	"sync"
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

// A method whose reboot method is the device's native cycle is still split
// in a level: a cycle cannot prove the plug was off, an off then an on can.
func TestLevelSplitsACycle(t *testing.T) {
	bmc := fake.New(fake.Options{})
	cyc := m("ipmi-cycle", bmc, 0)
	cyc.Options.RebootMethod = fence.RebootCycle
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{cyc}}}, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced)
	assert.Equal(t, 0, bmc.Calls(fake.OpCycle), "no native cycle in a level")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, bmc.History("1"))
}

func TestLevelNeedsAnOffConfirmed(t *testing.T) {
	fc := fake.New(fake.Options{Initial: fence.StateOff})
	pdu := fake.New(fake.Options{})
	res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
		{Methods: []*fence.Method{m("fc-on", fc, fence.ActionOn)}},
		{Methods: []*fence.Method{m("pdu", pdu, 0)}},
	}, fence.ActionReboot)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Level, "a level of on methods fences nothing: the next level fences")
	assert.True(t, res.Fenced)
	assert.Contains(t, res.Levels[0].Err.Error(), "confirmed the node off")
	assert.Equal(t, fence.StateOff, fc.Truth("1"), "nothing switched on before the offs were judged")
}

// switches records every confirmed switch of a topology, in order, as
// "method phase".
type switches struct {
	mu  sync.Mutex
	log []string
}

func (s *switches) Observe(e fence.Event) {
	if e.Outcome != fence.OutcomeConfirmed && e.Outcome != fence.OutcomeAlready {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e.Method+" "+e.Phase.String())
}

func (s *switches) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func observed(meth *fence.Method, o fence.Observer) *fence.Method {
	meth.Options.Observer = o
	return meth
}

// A node fed by two PDUs: a reboot turns both off (each verified), and only
// then both on (Pacemaker's rule for a topology level).
func TestLevelTwoPDUsRebootAllOffThenAllOn(t *testing.T) {
	for _, shape := range []struct {
		name    string
		actions [2]fence.Action
	}{
		{"no action= (the step's reboot)", [2]fence.Action{0, 0}},
		{"action=reboot", [2]fence.Action{fence.ActionReboot, fence.ActionReboot}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := fake.New(fake.Options{}), fake.New(fake.Options{})
				sw := &switches{}
				pa, pb := observed(m("pdu-a", a, shape.actions[0]), sw), observed(m("pdu-b", b, shape.actions[1]), sw)
				pb.Options.MinOff = 3 * time.Second
				start := time.Now()
				res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{pa, pb}}}, fence.ActionReboot)
				require.NoError(t, err)
				assert.Equal(t, 3*time.Second, time.Since(start), "both off together for the level's longest min_off before any on")
				assert.True(t, res.Fenced)
				assert.NoError(t, res.OnErr)
				assert.Equal(t, []string{"pdu-a off", "pdu-b off", "pdu-a on", "pdu-b on"}, sw.got())
				assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, a.History("1"))
				assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, b.History("1"))
				require.Len(t, res.Levels[0].Results, 2)
				for _, r := range res.Levels[0].Results {
					assert.True(t, r.OffConfirmed)
					assert.Equal(t, fence.ActionReboot, r.Action)
					assert.Equal(t, fence.StateOn, r.State)
				}
			})
		})
	}
}

// The second PDU's off fails: the level is not a fence, the first PDU is
// not switched on again (the node is not proven off), the next level runs.
func TestLevelTwoPDUsOneOffFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, bmc := fake.New(fake.Options{}), fake.New(fake.Options{}), fake.New(fake.Options{})
		b.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
		res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{
			{Methods: []*fence.Method{m("pdu-a", a, 0), m("pdu-b", b, 0)}},
			{Methods: []*fence.Method{m("bmc", bmc, 0)}},
		}, fence.ActionReboot)
		require.NoError(t, err)
		assert.Equal(t, 1, res.Level)
		assert.ErrorIs(t, res.Levels[0].Err, fence.ErrOutcomeUnknown)
		assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff}, a.History("1"), "A stays off")
		assert.Equal(t, fence.StateOn, b.Truth("1"))
		assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, bmc.History("1"))
	})
}

// power_management=eaton-off eaton-on, the on fails after the verified off:
// the node is fenced, the on error reported beside it.
func TestLevelOnFailsAfterVerifiedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pdu := fake.New(fake.Options{})
		res, err := fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{
			m("eaton-off", pdu, fence.ActionOff), m("eaton-on", &onFails{pdu}, fence.ActionOn)}}}, fence.ActionReboot)
		require.NoError(t, err)
		assert.True(t, res.Fenced)
		require.Error(t, res.OnErr)
		assert.Contains(t, res.OnErr.Error(), "eaton-on")
		assert.Equal(t, res.OnErr, res.Levels[0].OnErr)
		require.Len(t, res.Levels[0].Results, 2)
		assert.Error(t, res.Levels[0].Results[1].OnErr)
		assert.Equal(t, fence.StateOff, pdu.Truth("1"), "the node stays off")

		// The same with one reboot method: its on half fails.
		pdu2 := fake.New(fake.Options{})
		res, err = fence.DoLevels(t.Context(), "node-2", []fence.Level{{Methods: []*fence.Method{
			m("pdu", &onFails{pdu2}, 0)}}}, fence.ActionReboot)
		require.NoError(t, err)
		assert.True(t, res.Fenced)
		assert.Error(t, res.OnErr)
		assert.Error(t, res.Levels[0].Results[0].OnErr)
		assert.True(t, res.Levels[0].Results[0].OffConfirmed)
	})
}

// onFails is a device whose power on is refused.
type onFails struct{ *fake.Device }

func (d *onFails) Set(ctx context.Context, plug string, s fence.State) error {
	if s == fence.StateOn {
		return fence.NotDone(errors.New("outlet refused to switch on"))
	}
	return d.Device.Set(ctx, plug, s)
}

// The plan of a level: all offs, then all ons, whatever the order of the
// methods.
func TestPlanLevel(t *testing.T) {
	N, On, Off, R := fence.ActionNone, fence.ActionOn, fence.ActionOff, fence.ActionReboot
	ps := func(steps ...fence.PlanStep) []fence.PlanStep { return steps }
	st := func(i int, a, p fence.Action) fence.PlanStep { return fence.PlanStep{Method: i, Action: a, Phase: p} }
	for _, c := range []struct {
		a    fence.Action
		own  []fence.Action
		want []fence.PlanStep
	}{
		{R, []fence.Action{N}, ps(st(0, R, Off), st(0, R, On))},
		{R, []fence.Action{N, N}, ps(st(0, R, Off), st(1, R, Off), st(0, R, On), st(1, R, On))},
		{R, []fence.Action{Off, On}, ps(st(0, Off, Off), st(1, On, On))},
		{R, []fence.Action{On, Off}, ps(st(1, Off, Off), st(0, On, On))},
		{R, []fence.Action{Off, Off, On, On}, ps(st(0, Off, Off), st(1, Off, Off), st(2, On, On), st(3, On, On))},
		{Off, []fence.Action{N, R}, ps(st(0, Off, Off), st(1, R, Off), st(1, R, On))},
		{On, []fence.Action{N, Off}, ps(st(1, Off, Off), st(0, On, On))},
		{fence.ActionStatus, []fence.Action{Off, N}, ps(st(0, fence.ActionStatus, fence.ActionStatus), st(1, fence.ActionStatus, fence.ActionStatus))},
	} {
		assert.Equal(t, c.want, fence.PlanLevel(c.a, c.own), "%v %v", c.a, c.own)
	}
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
