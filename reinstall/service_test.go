package reinstall_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// env is an API side with fake ports.
type env struct {
	store *reinstall.MemStore
	boot  *reinstalltest.BootOrder
	ports *reinstalltest.SwitchPorts
	power *reinstalltest.Power
	clock *fencetest.Clock
	svc   *reinstall.Service
}

// newEnv has machines m1 (allocated, ubuntu-22.04), free (not allocated)
// and locked (allocated, locked).
func newEnv(t testing.TB, power reinstall.Power) *env {
	e := &env{
		store: reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04")),
		boot:  &reinstalltest.BootOrder{}, ports: &reinstalltest.SwitchPorts{}, power: &reinstalltest.Power{},
		clock: fencetest.NewClock(t0),
	}
	free := reinstalltest.Machine("free", "")
	free.Allocation = nil
	e.store.Put(free)
	locked := reinstalltest.Machine("locked", "ubuntu-22.04")
	locked.Lock = &reinstall.Lock{Reason: "legal hold"}
	e.store.Put(locked)
	if power == nil {
		power = e.power
	}
	svc, err := reinstall.NewService(reinstall.Ports{Store: e.store, Images: reinstalltest.Images(), BootOrder: e.boot, SwitchPorts: e.ports, Power: power},
		&reinstall.Options{Now: e.clock.Now, Deadline: time.Hour})
	require.NoError(t, err)
	e.svc = svc
	return e
}

func (e *env) machine(t testing.TB, id string) reinstall.Machine {
	m, err := e.store.Get(context.Background(), id)
	require.NoError(t, err)
	return m
}

func TestNewServiceNeedsEveryPort(t *testing.T) {
	full := reinstall.Ports{Store: reinstall.NewMemStore(), Images: reinstall.NewMemImages(), BootOrder: &reinstalltest.BootOrder{},
		SwitchPorts: &reinstalltest.SwitchPorts{}, Power: &reinstalltest.Power{}}
	_, err := reinstall.NewService(full, nil)
	require.NoError(t, err)
	for _, drop := range []func(p *reinstall.Ports){
		func(p *reinstall.Ports) { p.Store = nil }, func(p *reinstall.Ports) { p.Images = nil },
		func(p *reinstall.Ports) { p.BootOrder = nil }, func(p *reinstall.Ports) { p.SwitchPorts = nil },
		func(p *reinstall.Ports) { p.Power = nil },
	} {
		p := full
		drop(&p)
		_, err := reinstall.NewService(p, nil)
		assert.Error(t, err)
	}
}

// TestServiceRefusals: every refusal through the service leaves the
// record and the machine untouched.
func TestServiceRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		req reinstall.Request
		err error
	}{
		"machine does not exist": {reinstall.Request{MachineID: "m9", Image: "ubuntu-24.04"}, reinstall.ErrMachineNotFound},
		"machine ID malformed":   {reinstall.Request{MachineID: "m 1", Image: "ubuntu-24.04"}, reinstall.ErrMachineNotFound},
		"not allocated":          {reinstall.Request{MachineID: "free", Image: "ubuntu-24.04"}, reinstall.ErrNotAllocated},
		"locked":                 {reinstall.Request{MachineID: "locked", Image: "ubuntu-24.04"}, reinstall.ErrLocked},
		"image unknown":          {reinstall.Request{MachineID: "m1", Image: "windows-11"}, reinstall.ErrUnknownImage},
		"image revoked":          {reinstall.Request{MachineID: "m1", Image: "revoked-1"}, reinstall.ErrInvalidImage},
		"image malformed":        {reinstall.Request{MachineID: "m1", Image: "../etc"}, reinstall.ErrInvalidImage},
		"image empty":            {reinstall.Request{MachineID: "m1"}, reinstall.ErrInvalidImage},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			before, _ := e.store.List(context.Background())
			_, err := e.svc.Reinstall(context.Background(), tc.req)
			require.ErrorIs(t, err, tc.err)
			var re *reinstall.Error
			require.True(t, errors.As(err, &re))
			assert.Equal(t, tc.req.MachineID, re.Machine)
			after, _ := e.store.List(context.Background())
			assert.Equal(t, before, after)
			assert.Zero(t, e.boot.Calls()+e.ports.Calls())
			assert.Zero(t, e.power.Reboots(tc.req.MachineID))
		})
	}

	t.Run("no primary disk", func(t *testing.T) {
		e := newEnv(t, nil)
		m := e.machine(t, "m1")
		m.Inventory.Disks[0].Partitions[1].EtcMetal = false
		e.store.Put(m)
		_, err := e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
		require.ErrorIs(t, err, reinstall.ErrNoPrimaryDisk)
		assert.False(t, e.machine(t, "m1").Allocation.Reinstall)
		assert.Zero(t, e.power.Reboots("m1"))
	})
}

func TestServiceReinstall(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	res, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	assert.False(t, res.AlreadyPending)
	assert.Equal(t, reinstall.PhasePending, res.Status.Phase)
	assert.Equal(t, "sda", res.Status.PrimaryDisk.Name)
	assert.Equal(t, reinstall.BootPXE, e.boot.Get("m1"))
	assert.Equal(t, reinstall.NetworkPXE, e.ports.Get("m1"))
	assert.Equal(t, 1, e.power.Reboots("m1"))
	m := e.machine(t, "m1")
	assert.True(t, m.Allocation.Reinstall)
	assert.Equal(t, "ubuntu-24.04", m.Allocation.Image)
	assert.Equal(t, res.Status, *m.Reinstall)

	// Idempotent while pending: the same answer, nothing done.
	again, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	assert.True(t, again.AlreadyPending)
	assert.Equal(t, res.Status, again.Status)
	assert.Equal(t, 1, e.power.Reboots("m1"))
	assert.Equal(t, 1, e.boot.Calls())
	assert.Equal(t, m, e.machine(t, "m1"))

	// Another image while pending is refused.
	_, err = e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "debian-12"})
	assert.ErrorIs(t, err, reinstall.ErrReinstallPending)

	// Still idempotent once the installer started.
	o, err := e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	require.Equal(t, reinstall.OrderReinstall, o.Kind)
	again, err = e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	assert.True(t, again.AlreadyPending)
	assert.Equal(t, reinstall.PhaseInstalling, again.Status.Phase)

	// The success report resets the flag; a new request is possible.
	require.NoError(t, e.svc.Report(ctx, reinstall.Report{Machine: "m1", Generation: o.Generation, Attempt: o.Attempt, Outcome: reinstall.OutcomeSucceeded, Wiped: true}))
	m = e.machine(t, "m1")
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, reinstall.PhaseSucceeded, m.Reinstall.Phase)
	o, err = e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderBootLocal, o.Kind, "no endless reinstall loop")
	res, err = e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "debian-12"})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Status.Generation)
	assert.Equal(t, "ubuntu-24.04", res.Status.PreviousImage)
}

// TestServiceRollback: a failed start leaves no reinstall behind.
func TestServiceRollback(t *testing.T) {
	for name, tc := range map[string]struct {
		fail  func(e *env)
		field string
	}{
		"boot order": {fail: func(e *env) { e.boot.FailNext(1, nil) }, field: "bootOrder"},
		"switch":     {fail: func(e *env) { e.ports.FailNext(1, nil) }, field: "switchPorts"},
		"reboot":     {fail: func(e *env) { e.power.FailNext(1, nil) }, field: "power"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			tc.fail(e)
			res, err := e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
			require.ErrorIs(t, err, reinstall.ErrPlanFailed)
			assert.ErrorIs(t, err, reinstalltest.ErrInjected)
			var re *reinstall.Error
			require.True(t, errors.As(err, &re))
			assert.Equal(t, tc.field, re.Field)
			assert.Equal(t, "m1", re.Machine)
			code, status := reinstall.Code(err)
			assert.Equal(t, "plan_failed", code)
			assert.Equal(t, 502, status)

			m := e.machine(t, "m1")
			assert.False(t, m.Allocation.Reinstall)
			assert.Equal(t, "ubuntu-22.04", m.Allocation.Image)
			assert.Equal(t, reinstall.BootDisk, m.BootOrder)
			assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
			assert.Contains(t, m.Reinstall.Reason, "not started")
			assert.Equal(t, *m.Reinstall, res.Status)
			assert.Equal(t, reinstall.BootDisk, e.boot.Get("m1"))
			assert.Equal(t, reinstall.NetworkTenant, e.ports.Get("m1"))

			o, err := e.svc.Lookup(context.Background(), "m1")
			require.NoError(t, err)
			assert.Equal(t, reinstall.OrderBootLocal, o.Kind)

			// A retry is a fresh request.
			res, err = e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
			require.NoError(t, err)
			assert.Equal(t, uint64(2), res.Status.Generation)
		})
	}
}

// powerFunc adapts a function to reinstall.Power.
type powerFunc func(ctx context.Context, id string) error

func (f powerFunc) Reboot(ctx context.Context, id string) error { return f(ctx, id) }

func TestServiceRollbackWhenTheInstallerAlreadyRuns(t *testing.T) {
	var e *env
	e = newEnv(t, powerFunc(func(ctx context.Context, id string) error {
		// The reboot did happen and the installer started, but the
		// verification timed out.
		_, err := e.svc.Lookup(ctx, id)
		require.NoError(t, err)
		return fence.OutcomeUnknown(errors.New("power state did not settle"))
	}))
	res, err := e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	assert.Equal(t, reinstall.PhaseInstalling, res.Status.Phase)
	assert.True(t, e.machine(t, "m1").Allocation.Reinstall)
	assert.Equal(t, reinstall.NetworkPXE, e.ports.Get("m1"), "the installer needs the PXE network")
}

func TestServiceRollbackRunsAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := newEnv(t, powerFunc(func(ctx context.Context, id string) error {
		cancel()
		return ctx.Err()
	}))
	_, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.ErrorIs(t, err, reinstall.ErrPlanFailed)
	assert.ErrorIs(t, err, context.Canceled)
	m := e.machine(t, "m1")
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, reinstall.NetworkTenant, e.ports.Get("m1"))
}

func TestServiceRollbackOfARearm(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	o, err := e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	require.NoError(t, e.svc.Report(ctx, reinstall.Report{Machine: "m1", Generation: o.Generation, Attempt: 1, Outcome: reinstall.OutcomeFailed, Wiped: true, Reason: "write failed"}))
	require.True(t, e.machine(t, "m1").Allocation.Reinstall)

	e.power.FailNext(1, nil)
	_, err = e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "debian-12"})
	require.ErrorIs(t, err, reinstall.ErrPlanFailed)
	m := e.machine(t, "m1")
	assert.True(t, m.Allocation.Reinstall, "the disk may be wiped: the machine stays in reinstall")
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.Equal(t, "ubuntu-24.04", m.Allocation.Image)
	o, err = e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderHalt, o.Kind)
}

// conflictStore makes the first n updates fail with ErrConflict after
// changing the record, as a concurrent writer would.
type conflictStore struct {
	*reinstall.MemStore
	mu sync.Mutex
	n  int
}

func (s *conflictStore) Update(ctx context.Context, m reinstall.Machine) (reinstall.Machine, error) {
	s.mu.Lock()
	hit := s.n > 0
	if hit {
		s.n--
	}
	s.mu.Unlock()
	if hit {
		cur, err := s.MemStore.Get(ctx, m.ID)
		if err != nil {
			return reinstall.Machine{}, err
		}
		cur.Allocation.Hostname += "x" // someone else's change
		s.MemStore.Put(cur)
	}
	return s.MemStore.Update(ctx, m)
}

func TestServiceOptimisticConcurrency(t *testing.T) {
	for _, n := range []int{1, 7, 100} {
		store := &conflictStore{MemStore: reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04")), n: n}
		power := &reinstalltest.Power{}
		svc, err := reinstall.NewService(reinstall.Ports{Store: store, Images: reinstalltest.Images(), BootOrder: &reinstalltest.BootOrder{},
			SwitchPorts: &reinstalltest.SwitchPorts{}, Power: power}, nil)
		require.NoError(t, err)
		_, err = svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
		m, _ := store.Get(context.Background(), "m1")
		if n < 8 {
			require.NoError(t, err, n)
			assert.True(t, m.Allocation.Reinstall)
			assert.Equal(t, "m1"+repeat("x", n), m.Allocation.Hostname, "the concurrent change is kept")
			assert.Equal(t, 1, power.Reboots("m1"))
		} else {
			require.ErrorIs(t, err, reinstall.ErrConflict)
			code, status := reinstall.Code(err)
			assert.Equal(t, "conflict", code)
			assert.Equal(t, 409, status)
			assert.False(t, m.Allocation.Reinstall)
			assert.Zero(t, power.Reboots("m1"))
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// TestServiceConcurrentRequests: of many concurrent requests for one
// machine, one starts the reinstall; the others see it pending.
func TestServiceConcurrentRequests(t *testing.T) {
	e := newEnv(t, nil)
	images := []string{"ubuntu-24.04", "debian-12"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	started, pending, refused := 0, 0, 0
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: images[i%2]})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, reinstall.ErrReinstallPending):
				refused++
			case err != nil:
				t.Errorf("request %d: %v", i, err)
			case res.AlreadyPending:
				pending++
			default:
				started++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, started)
	assert.Equal(t, 32, started+pending+refused)
	assert.Equal(t, 1, e.power.Reboots("m1"))
}

func TestServiceReportValidation(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	assert.ErrorIs(t, e.svc.Report(ctx, reinstall.Report{Machine: "", Outcome: reinstall.OutcomeSucceeded}), reinstall.ErrBadRequest)
	assert.ErrorIs(t, e.svc.Report(ctx, reinstall.Report{Machine: "m1"}), reinstall.ErrBadRequest)
	assert.ErrorIs(t, e.svc.Report(ctx, reinstall.Report{Machine: "m9", Outcome: reinstall.OutcomeFailed}), reinstall.ErrMachineNotFound)
	assert.ErrorIs(t, e.svc.Report(ctx, reinstall.Report{Machine: "m1", Generation: 1, Attempt: 1, Outcome: reinstall.OutcomeSucceeded}), reinstall.ErrStaleReport)
	_, err := e.svc.Lookup(ctx, "m9")
	assert.ErrorIs(t, err, reinstall.ErrMachineNotFound)
	o, err := e.svc.Lookup(ctx, "free")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderNotAllocated, o.Kind)
}

func TestServiceExpire(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	ids, err := e.svc.Expire(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)

	o, err := e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	e.clock.Add(time.Hour)
	ids, err = e.svc.Expire(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, ids)
	m := e.machine(t, "m1")
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.True(t, m.Reinstall.Expired)
	assert.True(t, m.Allocation.Reinstall, "an attempt started: stay in reinstall")

	// The next boot halts; nothing is wiped.
	next, err := e.svc.Lookup(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderHalt, next.Kind)

	// A late success report still counts.
	require.NoError(t, e.svc.Report(ctx, reinstall.Report{Machine: "m1", Generation: o.Generation, Attempt: o.Attempt, Outcome: reinstall.OutcomeSucceeded, Wiped: true}))
	m = e.machine(t, "m1")
	assert.Equal(t, reinstall.PhaseSucceeded, m.Reinstall.Phase)
	assert.False(t, m.Allocation.Reinstall)
}

func TestServiceExpireNeverStarted(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	require.Equal(t, reinstall.NetworkPXE, e.ports.Get("m1"))
	e.clock.Add(time.Hour)
	ids, err := e.svc.Expire(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, ids)
	m := e.machine(t, "m1")
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, "ubuntu-22.04", m.Allocation.Image)
	assert.Equal(t, reinstall.BootDisk, e.boot.Get("m1"))
	assert.Equal(t, reinstall.NetworkTenant, e.ports.Get("m1"))

	// A failing port is reported, the record is still expired.
	_, err = e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	e.clock.Add(time.Hour)
	e.ports.FailNext(1, nil)
	ids, err = e.svc.Expire(ctx)
	assert.ErrorIs(t, err, reinstalltest.ErrInjected)
	assert.Equal(t, []string{"m1"}, ids)
	assert.False(t, e.machine(t, "m1").Allocation.Reinstall)
}

func TestServiceAttemptsAreBounded(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, err := e.svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	for i := 1; i <= reinstall.DefaultMaxAttempts; i++ {
		o, err := e.svc.Lookup(ctx, "m1") // the machine reboots mid-install, again and again
		require.NoError(t, err)
		require.Equal(t, reinstall.OrderReinstall, o.Kind)
		assert.Equal(t, i, o.Attempt)
		assert.Equal(t, i == 1, o.DiskIntact)
	}
	for range 3 {
		o, err := e.svc.Lookup(ctx, "m1")
		require.NoError(t, err)
		assert.Equal(t, reinstall.OrderHalt, o.Kind)
	}
	m := e.machine(t, "m1")
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.Equal(t, reinstall.DefaultMaxAttempts, m.Reinstall.Attempts)
}

func TestFencePower(t *testing.T) {
	ctx := context.Background()
	method := func(d *fake.Device) *fence.Method {
		return &fence.Method{Name: "bmc", Node: "m1", Driver: "fake", Device: d,
			Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 50 * time.Millisecond, RetryOn: fence.NoRetry}}
	}
	t.Run("verified reboot", func(t *testing.T) {
		d := fake.New(fake.Options{Plugs: []string{""}})
		p := reinstall.FencePower{Method: func(string) (*fence.Method, error) { return method(d), nil }}
		require.NoError(t, p.Reboot(ctx, "m1"))
		assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, d.History(""))
	})
	t.Run("device down", func(t *testing.T) {
		d := fake.New(fake.Options{Plugs: []string{""}})
		d.Inject(fake.Fault{Kind: fake.Down})
		p := reinstall.FencePower{Method: func(string) (*fence.Method, error) { return method(d), nil }}
		err := p.Reboot(ctx, "m1")
		assert.ErrorIs(t, err, fence.ErrUnreachable)
	})
	t.Run("off but not on again", func(t *testing.T) {
		d := fake.New(fake.Options{Plugs: []string{""}, Initial: fence.StateOff})
		d.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Fail})
		p := reinstall.FencePower{Method: func(string) (*fence.Method, error) { return method(d), nil }}
		err := p.Reboot(ctx, "m1")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "power on failed")
	})
	t.Run("method that only switches off", func(t *testing.T) {
		d := fake.New(fake.Options{Plugs: []string{""}})
		m := method(d)
		m.Action = fence.ActionOff
		p := reinstall.FencePower{Method: func(string) (*fence.Method, error) { return m, nil }}
		require.Error(t, p.Reboot(ctx, "m1"))
		assert.Equal(t, fence.StateOn, d.Truth(""), "nothing done")
	})
	t.Run("no method", func(t *testing.T) {
		assert.Error(t, reinstall.FencePower{}.Reboot(ctx, "m1"))
		p := reinstall.FencePower{Method: func(string) (*fence.Method, error) { return nil, nil }}
		assert.Error(t, p.Reboot(ctx, "m1"))
	})
}

// The reinstall's boot order and reboot through one fence device: the
// machine boots the installer from the network once, then its disk.
func TestFenceBootOrderAndPower(t *testing.T) {
	d := fake.New(fake.Options{Plugs: []string{""}})
	method := func(string) (*fence.Method, error) {
		return &fence.Method{Name: "bmc", Node: "m1", Driver: "fake", Device: d,
			Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 50 * time.Millisecond}}, nil
	}
	store := reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04"))
	svc, err := reinstall.NewService(reinstall.Ports{Store: store, Images: reinstalltest.Images(),
		BootOrder: reinstall.FenceBootOrder{Method: method}, SwitchPorts: &reinstalltest.SwitchPorts{},
		Power: reinstall.FencePower{Method: method}}, nil)
	require.NoError(t, err)
	_, err = svc.Reinstall(t.Context(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	assert.Equal(t, []fence.BootDevice{fence.BootPXE}, d.Boots(""), "the verified reboot booted from the network")
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, d.History(""))

	// A device that cannot set the boot device: nothing is rebooted.
	pdu := fake.New(fake.Options{Plugs: []string{""}})
	pdu.Inject(fake.Fault{Op: fake.OpBoot, Kind: fake.Fail})
	err = reinstall.FenceBootOrder{Method: func(string) (*fence.Method, error) {
		return &fence.Method{Name: "pdu", Node: "m1", Device: pdu}, nil
	}}.SetBootOrder(t.Context(), "m1", reinstall.BootPXE)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "method pdu")
}
