package reinstall

import (
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/strictjson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var s0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func stateMachine(flag bool, st *Status) Machine {
	return Machine{
		ID: "m1",
		Inventory: Inventory{Disks: []Disk{{Name: "sda", Serial: "S1", Size: 100, Type: DiskSSD,
			Partitions: []Partition{{Name: "sda1", Size: 50, Filesystem: "ext4", EtcMetal: true}}}}},
		Allocation: &Allocation{Image: "new-1", Reinstall: flag},
		BootOrder:  BootPXE,
		Reinstall:  st,
	}
}

func status(phase Phase, attempts int, intact bool) *Status {
	return &Status{Phase: phase, Generation: 4, Image: "new-1", PreviousImage: "old-1",
		PrimaryDisk: DiskRef{Name: "sda", Serial: "S1", Size: 100, Type: DiskSSD},
		Attempts:    attempts, DiskIntact: intact, AttemptIntact: intact, Deadline: s0.Add(time.Hour)}
}

func TestClaim(t *testing.T) {
	for name, tc := range map[string]struct {
		m       Machine
		kind    OrderKind
		changed bool
		check   func(t *testing.T, next Machine, o Order)
	}{
		"not allocated":                          {m: Machine{ID: "m1"}, kind: OrderNotAllocated},
		"no reinstall":                           {m: stateMachine(false, nil), kind: OrderBootLocal},
		"after success":                          {m: stateMachine(false, status(PhaseSucceeded, 1, true)), kind: OrderBootLocal},
		"after a failure with the old OS intact": {m: stateMachine(false, status(PhaseFailed, 1, true)), kind: OrderBootLocal},
		"failed, flag kept": {m: stateMachine(true, func() *Status {
			s := status(PhaseFailed, 1, false)
			s.Reason = "write failed"
			return s
		}()), kind: OrderHalt, check: func(t *testing.T, _ Machine, o Order) {
			assert.Equal(t, "the reinstall failed: write failed", o.Reason)
		}},
		"flag without record": {m: stateMachine(true, nil), kind: OrderHalt},
		"first attempt": {m: stateMachine(true, status(PhasePending, 0, true)), kind: OrderReinstall, changed: true,
			check: func(t *testing.T, next Machine, o Order) {
				assert.Equal(t, Order{Kind: OrderReinstall, Machine: "m1", Generation: 4, Image: "new-1", PrimaryDisk: next.Reinstall.PrimaryDisk, Attempt: 1, DiskIntact: true}, o)
				assert.Equal(t, PhaseInstalling, next.Reinstall.Phase)
				assert.False(t, next.Reinstall.DiskIntact, "the attempt may wipe")
				assert.True(t, next.Reinstall.AttemptIntact)
				assert.Equal(t, s0.Add(2*time.Hour), next.Reinstall.Deadline)
			}},
		"second attempt after a reboot mid-install": {m: stateMachine(true, status(PhaseInstalling, 1, false)), kind: OrderReinstall, changed: true,
			check: func(t *testing.T, next Machine, o Order) {
				assert.Equal(t, 2, o.Attempt)
				assert.False(t, o.DiskIntact)
			}},
		"attempts used up": {m: stateMachine(true, status(PhaseInstalling, 3, false)), kind: OrderHalt, changed: true,
			check: func(t *testing.T, next Machine, o Order) {
				assert.Equal(t, PhaseFailed, next.Reinstall.Phase)
				assert.True(t, next.Allocation.Reinstall, "the flag stays: the disk may be wiped")
				assert.Contains(t, o.Reason, "3 installer attempts")
			}},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.m.Clone()
			next, o, changed := claim(tc.m, s0, 3, 2*time.Hour)
			assert.Equal(t, before, tc.m, "claim must not change its input")
			assert.Equal(t, tc.kind, o.Kind)
			assert.Equal(t, "m1", o.Machine)
			assert.Equal(t, tc.changed, changed)
			if !changed {
				assert.Equal(t, tc.m, next)
			}
			if o.Kind == OrderReinstall {
				require.NoError(t, o.Validate())
			}
			if tc.check != nil {
				tc.check(t, next, o)
			}
		})
	}
}

func TestApplyReport(t *testing.T) {
	installing := func(intact bool) Machine { return stateMachine(true, status(PhaseInstalling, 2, intact)) }
	rep := func(o Outcome, wiped bool) Report {
		return Report{Machine: "m1", Generation: 4, Attempt: 2, Outcome: o, Wiped: wiped, Reason: "why"}
	}
	for name, tc := range map[string]struct {
		m        Machine
		r        Report
		err      error
		changed  bool
		phase    Phase
		flag     bool
		image    string
		intact   bool
		bootDisk bool
	}{
		"success resets the flag": {m: installing(false), r: rep(OutcomeSucceeded, true), changed: true,
			phase: PhaseSucceeded, flag: false, image: "new-1", intact: true, bootDisk: true},
		"failure before the wipe, old OS intact": {m: installing(true), r: rep(OutcomeFailed, false), changed: true,
			phase: PhaseFailed, flag: false, image: "old-1", intact: true, bootDisk: true},
		"failure after the wipe": {m: installing(true), r: rep(OutcomeFailed, true), changed: true,
			phase: PhaseFailed, flag: true, image: "new-1"},
		"failure before the wipe of a disk an earlier attempt may have wiped": {m: installing(false), r: rep(OutcomeFailed, false), changed: true,
			phase: PhaseFailed, flag: true, image: "new-1"},
		"repeated success": {m: stateMachine(false, status(PhaseSucceeded, 2, true)), r: rep(OutcomeSucceeded, true),
			phase: PhaseSucceeded, flag: false, image: "new-1", intact: true},
		"repeated failure": {m: stateMachine(true, status(PhaseFailed, 2, false)), r: rep(OutcomeFailed, true),
			phase: PhaseFailed, flag: true, image: "new-1"},
		"failure after success": {m: stateMachine(false, status(PhaseSucceeded, 2, true)), r: rep(OutcomeFailed, true), err: ErrStaleReport},
		"success after failure": {m: stateMachine(true, status(PhaseFailed, 2, false)), r: rep(OutcomeSucceeded, true), err: ErrStaleReport},
		"late success after expiry": {m: stateMachine(true, func() *Status {
			s := status(PhaseFailed, 2, false)
			s.Expired = true
			return s
		}()), r: rep(OutcomeSucceeded, true), changed: true, phase: PhaseSucceeded, flag: false, image: "new-1", intact: true, bootDisk: true},
		"old attempt":    {m: installing(true), r: Report{Machine: "m1", Generation: 4, Attempt: 1, Outcome: OutcomeSucceeded}, err: ErrStaleReport},
		"old generation": {m: installing(true), r: Report{Machine: "m1", Generation: 3, Attempt: 2, Outcome: OutcomeSucceeded}, err: ErrStaleReport},
		"no attempt":     {m: stateMachine(true, status(PhasePending, 0, true)), r: Report{Machine: "m1", Generation: 4, Attempt: 0, Outcome: OutcomeSucceeded}, err: ErrStaleReport},
		"no reinstall":   {m: stateMachine(false, nil), r: rep(OutcomeSucceeded, true), err: ErrStaleReport},
		"bad outcome":    {m: installing(true), r: rep(OutcomeNone, true), err: ErrBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.m.Clone()
			next, changed, err := applyReport(tc.m, tc.r, s0)
			assert.Equal(t, before, tc.m)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, tc.phase, next.Reinstall.Phase)
			assert.Equal(t, tc.flag, next.Allocation.Reinstall)
			assert.Equal(t, tc.image, next.Allocation.Image)
			assert.Equal(t, tc.intact, next.Reinstall.DiskIntact)
			if tc.bootDisk {
				assert.Equal(t, BootDisk, next.BootOrder)
			}
			assert.True(t, !next.Allocation.Reinstall || next.Reinstall.Phase == PhaseFailed || next.Reinstall.Phase.Pending())
		})
	}
}

func TestExpire(t *testing.T) {
	late := s0.Add(2 * time.Hour)
	t.Run("not yet", func(t *testing.T) {
		m := stateMachine(true, status(PhaseInstalling, 1, false))
		_, changed := expire(m, s0)
		assert.False(t, changed)
	})
	t.Run("never started", func(t *testing.T) {
		next, changed := expire(stateMachine(true, status(PhasePending, 0, true)), late)
		require.True(t, changed)
		assert.Equal(t, PhaseFailed, next.Reinstall.Phase)
		assert.True(t, next.Reinstall.Expired)
		assert.False(t, next.Allocation.Reinstall)
		assert.Equal(t, "old-1", next.Allocation.Image)
	})
	t.Run("re-armed, never started", func(t *testing.T) {
		next, changed := expire(stateMachine(true, status(PhasePending, 0, false)), late)
		require.True(t, changed)
		assert.Equal(t, PhaseFailed, next.Reinstall.Phase)
		assert.True(t, next.Allocation.Reinstall)
	})
	t.Run("started, no report", func(t *testing.T) {
		next, changed := expire(stateMachine(true, status(PhaseInstalling, 1, false)), late)
		require.True(t, changed)
		assert.Equal(t, PhaseFailed, next.Reinstall.Phase)
		assert.True(t, next.Allocation.Reinstall, "the disk may be wiped: stay in reinstall")
		assert.Contains(t, next.Reinstall.Reason, "no installer report")
	})
	t.Run("done", func(t *testing.T) {
		_, changed := expire(stateMachine(false, status(PhaseSucceeded, 1, true)), late)
		assert.False(t, changed)
	})
}

func TestScanJSON(t *testing.T) {
	ok := func(string) error { return nil }
	for in, want := range map[string]string{
		`{"a":1,"b":[1,{"c":2}],"d":{}}`: "",
		`{"a":{"a":1}}`:                  "",
		`{"a":1,"a":2}`:                  "appears twice",
		`{"a":{"b":1,"b":2}}`:            "appears twice",
		`{"a":[{"b":1},{"b":2}]}`:        "",
		`{"a":[[[[[[1]]]]]]}`:            "nested deeper",
		` {} `:                           "",
		`{}{}`:                           "data after",
		`"x"`:                            "not a JSON object",
		`{"a":}`:                         "invalid character",
		`{"a":1`:                         "EOF",
	} {
		err := strictjson.Scan([]byte(in), 5, ok)
		if want == "" {
			assert.NoError(t, err, in)
		} else if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}
