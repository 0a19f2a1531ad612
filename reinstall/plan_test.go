package reinstall_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// planInput is a request for m1 to get ubuntu-24.04, which the catalog
// knows.
func planInput() reinstall.PlanInput {
	return reinstall.PlanInput{
		Machine:  reinstalltest.Machine("m1", "ubuntu-22.04"),
		Request:  reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"},
		Image:    reinstall.Image{ID: "ubuntu-24.04"},
		Now:      t0,
		Deadline: time.Hour,
	}
}

func pendingStatus(phase reinstall.Phase) *reinstall.Status {
	return &reinstall.Status{Phase: phase, Generation: 1, Image: "ubuntu-24.04", PreviousImage: "ubuntu-22.04",
		PrimaryDisk: reinstalltest.Inventory().Disks[0].Ref(), DiskIntact: true, RequestedAt: t0.Add(-time.Minute)}
}

// TestPlanReinstallRefusals has one case for every refusal.
func TestPlanReinstallRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(in *reinstall.PlanInput)
		err   error
		field string
		msg   string
	}{
		"machine does not exist": {
			edit: func(in *reinstall.PlanInput) { in.Request.MachineID = "m2" },
			err:  reinstall.ErrMachineNotFound, field: "id",
		},
		"machine ID malformed": {
			edit: func(in *reinstall.PlanInput) { in.Request.MachineID = "../m1"; in.Machine.ID = "../m1" },
			err:  reinstall.ErrMachineNotFound, field: "id",
		},
		"not allocated": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Allocation = nil },
			err:  reinstall.ErrNotAllocated, field: "allocation",
		},
		"locked": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Lock = &reinstall.Lock{Reason: "maintenance"} },
			err:  reinstall.ErrLocked, field: "lock", msg: "machine is locked: maintenance",
		},
		"locked without a reason": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Lock = &reinstall.Lock{} },
			err:  reinstall.ErrLocked, field: "lock", msg: "no reason given",
		},
		"another image pending": {
			edit: func(in *reinstall.PlanInput) {
				in.Machine.Allocation.Reinstall = true
				in.Machine.Reinstall = pendingStatus(reinstall.PhasePending)
				in.Request.Image = "debian-12"
				in.Image.ID = "debian-12"
			},
			err: reinstall.ErrReinstallPending, field: "image", msg: "reinstall of image ubuntu-24.04 is pending",
		},
		"another image installing": {
			edit: func(in *reinstall.PlanInput) {
				in.Machine.Allocation.Reinstall = true
				in.Machine.Reinstall = pendingStatus(reinstall.PhaseInstalling)
				in.Request.Image = "debian-12"
				in.Image.ID = "debian-12"
			},
			err: reinstall.ErrReinstallPending, field: "image", msg: "is installing",
		},
		"flag set without a record": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Allocation.Reinstall = true },
			err:  reinstall.ErrReinstallPending, field: "allocation.reinstall",
		},
		"flag set after a success": {
			edit: func(in *reinstall.PlanInput) {
				in.Machine.Allocation.Reinstall = true
				in.Machine.Reinstall = pendingStatus(reinstall.PhaseSucceeded)
			},
			err: reinstall.ErrReinstallPending, field: "allocation.reinstall",
		},
		"image empty": {
			edit: func(in *reinstall.PlanInput) { in.Request.Image = "" },
			err:  reinstall.ErrInvalidImage, field: "image",
		},
		"image malformed": {
			edit: func(in *reinstall.PlanInput) { in.Request.Image = "Ubuntu 24.04" },
			err:  reinstall.ErrInvalidImage, field: "image", msg: "is not an image ID",
		},
		"image unknown": {
			edit: func(in *reinstall.PlanInput) {
				in.Image, in.ImageErr = reinstall.Image{}, fmt.Errorf("%w: ubuntu-24.04", reinstall.ErrUnknownImage)
			},
			err: reinstall.ErrUnknownImage, field: "image",
		},
		"catalog answers another image": {
			edit: func(in *reinstall.PlanInput) { in.Image.ID = "ubuntu-22.04" },
			err:  reinstall.ErrUnknownImage, field: "image",
		},
		"image revoked": {
			edit: func(in *reinstall.PlanInput) { in.Image.Revoked = true },
			err:  reinstall.ErrInvalidImage, field: "image", msg: "revoked",
		},
		"image expired": {
			edit: func(in *reinstall.PlanInput) { in.Image.ExpiresAt = t0 },
			err:  reinstall.ErrInvalidImage, field: "image", msg: "expired at 2025-03-01T12:00:00Z",
		},
		"no primary disk": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Inventory.Disks[0].Partitions[1].EtcMetal = false },
			err:  reinstall.ErrNoPrimaryDisk, field: "primaryDisk",
		},
		"primary disk ambiguous": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Inventory.Disks[1].EtcMetal = true },
			err:  reinstall.ErrAmbiguousPrimaryDisk, field: "primaryDisk",
		},
		"inventory invalid": {
			edit: func(in *reinstall.PlanInput) { in.Machine.Inventory.Disks[0].Size = 0 },
			err:  reinstall.ErrInvalidInventory, field: "inventory.disks[0].size",
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := planInput()
			tc.edit(&in)
			plan, err := reinstall.PlanReinstall(in)
			require.ErrorIs(t, err, tc.err)
			assert.Zero(t, plan)
			var e *reinstall.Error
			require.True(t, errors.As(err, &e), "%T", err)
			assert.Equal(t, tc.field, e.Field)
			assert.Equal(t, in.Request.MachineID, e.Machine)
			assert.Contains(t, err.Error(), tc.msg)
			code, status := reinstall.Code(err)
			assert.NotEqual(t, "internal", code)
			assert.GreaterOrEqual(t, status, 400)
		})
	}

	t.Run("catalog failure", func(t *testing.T) {
		in := planInput()
		boom := errors.New("catalog unreachable")
		in.ImageErr = boom
		_, err := reinstall.PlanReinstall(in)
		require.ErrorIs(t, err, boom)
		code, status := reinstall.Code(err)
		assert.Equal(t, "internal", code)
		assert.Equal(t, 500, status)
	})
}

func TestPlanReinstallAccepts(t *testing.T) {
	in := planInput()
	plan, err := reinstall.PlanReinstall(in)
	require.NoError(t, err)
	assert.False(t, plan.Noop)
	assert.False(t, plan.Rearm)
	m := plan.Machine
	assert.True(t, m.Allocation.Reinstall)
	assert.Equal(t, "ubuntu-24.04", m.Allocation.Image)
	assert.Equal(t, reinstall.BootPXE, m.BootOrder)
	want := reinstall.Status{Phase: reinstall.PhasePending, Generation: 1, Image: "ubuntu-24.04", PreviousImage: "ubuntu-22.04",
		PrimaryDisk: in.Machine.Inventory.Disks[0].Ref(), DiskIntact: true, RequestedAt: t0, UpdatedAt: t0, Deadline: t0.Add(time.Hour)}
	assert.Equal(t, want, *m.Reinstall)
	assert.Equal(t, reinstall.Result{Machine: "m1", Status: want}, plan.Result)

	// Nothing else changed, and the input was not touched.
	orig := reinstalltest.Machine("m1", "ubuntu-22.04")
	assert.Equal(t, orig, in.Machine)
	m.Allocation.Image, m.Allocation.Reinstall, m.BootOrder, m.Reinstall = orig.Allocation.Image, false, orig.BootOrder, nil
	assert.Equal(t, orig, m)

	// The same image again is allowed: a fresh OS.
	in.Request.Image, in.Image.ID = "ubuntu-22.04", "ubuntu-22.04"
	_, err = reinstall.PlanReinstall(in)
	assert.NoError(t, err)
}

func TestPlanReinstallIdempotentWhilePending(t *testing.T) {
	for _, phase := range []reinstall.Phase{reinstall.PhasePending, reinstall.PhaseInstalling} {
		in := planInput()
		in.Machine.Allocation.Reinstall = true
		in.Machine.Allocation.Image = "ubuntu-24.04"
		in.Machine.Reinstall = pendingStatus(phase)
		plan, err := reinstall.PlanReinstall(in)
		require.NoError(t, err)
		assert.True(t, plan.Noop)
		assert.True(t, plan.Result.AlreadyPending)
		assert.Equal(t, *in.Machine.Reinstall, plan.Result.Status)
		assert.Zero(t, plan.Machine)
	}
}

func TestPlanReinstallRearm(t *testing.T) {
	in := planInput()
	in.Machine.Allocation.Reinstall = true
	in.Machine.Allocation.Image = "ubuntu-24.04"
	st := pendingStatus(reinstall.PhaseFailed)
	st.DiskIntact = false
	st.Attempts = 3
	st.Reason = "writing the image failed"
	in.Machine.Reinstall = st
	// The old OS is gone: detection would find nothing now.
	in.Machine.Inventory.Disks[0].Partitions = nil
	in.Request.Image, in.Image.ID = "debian-12", "debian-12"
	plan, err := reinstall.PlanReinstall(in)
	require.NoError(t, err)
	assert.True(t, plan.Rearm)
	s := plan.Machine.Reinstall
	assert.Equal(t, reinstall.PhasePending, s.Phase)
	assert.Equal(t, uint64(2), s.Generation)
	assert.Equal(t, "debian-12", s.Image)
	assert.Equal(t, "ubuntu-22.04", s.PreviousImage, "the image before the first request")
	assert.Equal(t, st.PrimaryDisk, s.PrimaryDisk, "the pinned disk is kept")
	assert.False(t, s.DiskIntact)
	assert.Zero(t, s.Attempts)
	assert.Empty(t, s.Reason)
	assert.True(t, plan.Machine.Allocation.Reinstall)
}
