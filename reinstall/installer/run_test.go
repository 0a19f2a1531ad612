package installer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/installer"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// world is the API side and one machine.
type world struct {
	store *reinstall.MemStore
	svc   *reinstall.Service
	api   *reinstalltest.FlakyAPI
	disks *reinstalltest.Disks
	boot  *reinstalltest.BootOrder
	ports *reinstalltest.SwitchPorts
	kexec *reinstalltest.Kexec
}

func newWorld(t *testing.T) *world {
	w := &world{
		store: reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04")),
		disks: reinstalltest.NewDisks(reinstalltest.Inventory()),
		boot:  &reinstalltest.BootOrder{}, ports: &reinstalltest.SwitchPorts{}, kexec: &reinstalltest.Kexec{},
	}
	svc, err := reinstall.NewService(reinstall.Ports{Store: w.store, Images: reinstalltest.Images(), BootOrder: w.boot,
		SwitchPorts: w.ports, Power: &reinstalltest.Power{}}, &reinstall.Options{Deadline: time.Hour})
	require.NoError(t, err)
	w.svc = svc
	w.api = &reinstalltest.FlakyAPI{Next: svc}
	return w
}

func (w *world) ports_() installer.Ports {
	return installer.Ports{Allocations: w.api, Reporter: w.api, Disks: w.disks, BootOrder: w.boot, SwitchPorts: w.ports, Kexec: w.kexec}
}

func (w *world) machine(t *testing.T) reinstall.Machine {
	m, err := w.store.Get(context.Background(), "m1")
	require.NoError(t, err)
	return m
}

func (w *world) request(t *testing.T, image string) {
	_, err := w.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: image})
	require.NoError(t, err)
}

func TestRunReinstall(t *testing.T) {
	w := newWorld(t)
	w.request(t, "ubuntu-24.04")
	var steps []installer.Transition
	s, err := installer.Run(context.Background(), "m1", w.ports_(), &installer.Options{Observer: func(tr installer.Transition) { steps = append(steps, tr) }})
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, reinstall.TargetNewOS, s.Target)
	assert.Equal(t, []string{"sda"}, w.disks.Wiped(), "only the OS disk")
	assert.Equal(t, []string{"sda"}, w.disks.Written())
	assert.Equal(t, []reinstall.BootTarget{reinstall.TargetNewOS}, w.kexec.Booted())
	assert.Equal(t, reinstall.BootDisk, w.boot.Get("m1"))
	assert.Equal(t, reinstall.NetworkTenant, w.ports.Get("m1"))
	m := w.machine(t)
	assert.False(t, m.Allocation.Reinstall, "reset after the success report")
	assert.Equal(t, reinstall.PhaseSucceeded, m.Reinstall.Phase)
	assert.Equal(t, "ubuntu-24.04", m.Allocation.Image)
	require.NotEmpty(t, steps)
	assert.Equal(t, installer.PhaseBoot, steps[0].From.Phase)
	assert.Equal(t, installer.PhaseBooted, steps[len(steps)-1].To.Phase)

	// The data disks are as they were.
	for _, id := range []string{"sdb", "nvme0n1"} {
		d, ok := w.disks.Disk(id)
		require.True(t, ok)
		for _, orig := range reinstalltest.Inventory().Disks {
			if orig.Name == id {
				assert.Equal(t, orig, d)
			}
		}
	}

	// The next PXE boot (say the boot order was lost) boots the new OS and
	// wipes nothing: no endless reinstall.
	s, err = installer.Run(context.Background(), "m1", w.ports_(), nil)
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, reinstall.TargetLocalOS, s.Target)
	assert.Equal(t, []string{"sda"}, w.disks.Wiped())
}

// The success report reaches the API side, but its answers are lost: the
// installer retries, the API side accepts the repeat.
func TestRunReportAnswerLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.request(t, "ubuntu-24.04")
		w.api.FailReports(2, true)
		start := time.Now()
		s, err := installer.Run(t.Context(), "m1", w.ports_(), nil)
		require.NoError(t, err)
		assert.Equal(t, installer.PhaseBooted, s.Phase)
		assert.Equal(t, 3, w.api.Reports())
		assert.Equal(t, 3*time.Second, time.Since(start), "backoff 1 s, then 2 s")
		assert.False(t, w.machine(t).Allocation.Reinstall)
	})
}

// The success report is lost for good: the installer halts, the API side
// expires the reinstall, and later boots wipe nothing.
func TestRunReportLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.request(t, "ubuntu-24.04")
		w.api.FailReports(100, false)
		s, err := installer.Run(t.Context(), "m1", w.ports_(), nil)
		require.NoError(t, err)
		assert.Equal(t, installer.PhaseHalted, s.Phase)
		assert.Contains(t, s.Halt, "success report was lost")
		assert.Equal(t, []string{"sda"}, w.disks.Wiped())
		assert.Empty(t, w.kexec.Booted())

		// Expire is driven by the service's clock (time.Now, fake here).
		time.Sleep(2 * time.Hour)
		ids, err := w.svc.Expire(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []string{"m1"}, ids)
		m := w.machine(t)
		assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
		assert.True(t, m.Allocation.Reinstall, "stay in reinstall: never a fresh install")

		for range 3 {
			s, err = installer.Run(t.Context(), "m1", w.ports_(), nil)
			require.NoError(t, err)
			assert.Equal(t, installer.PhaseHalted, s.Phase)
		}
		assert.Equal(t, []string{"sda"}, w.disks.Wiped(), "nothing wiped again")

		// An operator re-arms the reinstall: only the OS disk is wiped again.
		w.api.FailReports(0, false)
		w.request(t, "ubuntu-24.04")
		s, err = installer.Run(t.Context(), "m1", w.ports_(), nil)
		require.NoError(t, err)
		assert.Equal(t, installer.PhaseBooted, s.Phase)
		assert.Equal(t, []string{"sda", "sda"}, w.disks.Wiped())
		assert.False(t, w.machine(t).Allocation.Reinstall)
	})
}

// The write fails: the failure is reported, the machine stays in
// reinstall; a re-armed request with another image finds the wiped disk by
// its serial even though the kernel now calls it sdc.
func TestRunWriteFailsThenRearm(t *testing.T) {
	w := newWorld(t)
	w.request(t, "ubuntu-24.04")
	w.disks.Inject(reinstalltest.Fault{Op: reinstalltest.OpWrite})
	s, err := installer.Run(context.Background(), "m1", w.ports_(), &installer.Options{Limits: installer.Limits{Backoff: -1}})
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseHalted, s.Phase)
	m := w.machine(t)
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.True(t, m.Allocation.Reinstall)
	assert.Contains(t, m.Reinstall.Reason, "writing image")

	w.disks.Rename(map[string]string{"sda": "sdc"})
	_, err = w.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "debian-12"})
	require.NoError(t, err)
	s, err = installer.Run(context.Background(), "m1", w.ports_(), nil)
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, "sdc", s.Primary.Name)
	assert.Equal(t, []string{"sda", "sda"}, w.disks.Wiped(), "the same physical disk")
	m = w.machine(t)
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, "debian-12", m.Allocation.Image)
}

// The inventory cannot be read: the failure is reported, the old OS boots
// again, and the allocation is as before the request.
func TestRunAbortBeforeWipe(t *testing.T) {
	w := newWorld(t)
	w.request(t, "ubuntu-24.04")
	w.disks.Inject(reinstalltest.Fault{Op: reinstalltest.OpInventory})
	s, err := installer.Run(context.Background(), "m1", w.ports_(), nil)
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, reinstall.TargetLocalOS, s.Target)
	assert.Empty(t, w.disks.Wiped())
	m := w.machine(t)
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, "ubuntu-22.04", m.Allocation.Image)
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.Equal(t, reinstall.NetworkTenant, w.ports.Get("m1"))
}

func TestRunCancelled(t *testing.T) {
	w := newWorld(t)
	w.request(t, "ubuntu-24.04")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := installer.Run(ctx, "m1", w.ports_(), nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, installer.PhaseHalted, s.Phase)
	assert.Empty(t, w.disks.Wiped())
}

func TestRunNeedsEveryPort(t *testing.T) {
	w := newWorld(t)
	p := w.ports_()
	p.Kexec = nil
	_, err := installer.Run(context.Background(), "m1", p, nil)
	assert.Error(t, err)
}
