package reinstall_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/installer"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// The property: over random disk inventories, random renames of the disks
// between boots, and random failures at every point (API side, lookups,
// inventory, wipe, write, /install.sh, reports, boot order, network, kexec,
// power lost mid-run, reports that never come, re-armed requests):
//
//  1. no disk but the primary disk detected when the request was accepted
//     is ever wiped, and every other disk keeps its contents;
//  2. a refused request wipes nothing;
//  3. one request wipes at most MaxAttempts times;
//  4. the installer boots the new OS only after its success report was
//     accepted, which reset the flag;
//  5. in the end the flag is reset or the machine is reported failed, and
//     one more PXE boot wipes nothing.

var errPowerLoss = errors.New("power lost")

// gate cuts the machine's power after a number of port calls: from then
// on every call fails and does nothing.
type gate struct {
	mu   sync.Mutex
	left int // calls still allowed; < 0: no limit
	cut  bool
}

func (g *gate) pass() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut || g.left == 0 {
		g.cut = true
		return errPowerLoss
	}
	if g.left > 0 {
		g.left--
	}
	return nil
}

type gatedAPI struct {
	g    *gate
	next *reinstalltest.FlakyAPI
}

func (a gatedAPI) Lookup(ctx context.Context, id string) (reinstall.Order, error) {
	if err := a.g.pass(); err != nil {
		return reinstall.Order{}, err
	}
	return a.next.Lookup(ctx, id)
}

func (a gatedAPI) Report(ctx context.Context, r reinstall.Report) error {
	if err := a.g.pass(); err != nil {
		return err
	}
	return a.next.Report(ctx, r)
}

type gatedDisks struct {
	g    *gate
	next *reinstalltest.Disks
}

func (d gatedDisks) Inventory(ctx context.Context) (reinstall.Inventory, error) {
	if err := d.g.pass(); err != nil {
		return reinstall.Inventory{}, err
	}
	return d.next.Inventory(ctx)
}

func (d gatedDisks) Wipe(ctx context.Context, ref reinstall.DiskRef) error {
	if err := d.g.pass(); err != nil {
		return err
	}
	return d.next.Wipe(ctx, ref)
}

func (d gatedDisks) WriteImage(ctx context.Context, ref reinstall.DiskRef, image string) error {
	if err := d.g.pass(); err != nil {
		return err
	}
	return d.next.WriteImage(ctx, ref, image)
}

func (d gatedDisks) RunInstall(ctx context.Context, ref reinstall.DiskRef) error {
	if err := d.g.pass(); err != nil {
		return err
	}
	return d.next.RunInstall(ctx, ref)
}

type gatedMachine struct {
	g     *gate
	boot  *reinstalltest.BootOrder
	ports *reinstalltest.SwitchPorts
	kexec *reinstalltest.Kexec
}

func (m gatedMachine) SetBootOrder(ctx context.Context, id string, d reinstall.BootDevice) error {
	if err := m.g.pass(); err != nil {
		return err
	}
	return m.boot.SetBootOrder(ctx, id, d)
}

func (m gatedMachine) SetNetwork(ctx context.Context, id string, n reinstall.Network) error {
	if err := m.g.pass(); err != nil {
		return err
	}
	return m.ports.SetNetwork(ctx, id, n)
}

func (m gatedMachine) Kexec(ctx context.Context, t reinstall.BootTarget, d reinstall.DiskRef) error {
	if err := m.g.pass(); err != nil {
		return err
	}
	return m.kexec.Kexec(ctx, t, d)
}

func reinstallCode(err error) string {
	c, _ := reinstall.Code(err)
	return c
}

type propertyStats struct {
	refusals map[string]int

	runs, refused, accepted, planFailed, boots, powerCuts, renames, rearms, expired int
	succeeded, failedFlagSet, failedFlagReset, halted, bootedOld, wipes             int
}

// sim is one machine, the API side and the installer.
type sim struct {
	t     *testing.T
	r     *rand.Rand
	st    *propertyStats
	clock *fencetest.Clock
	store *reinstall.MemStore
	svc   *reinstall.Service
	api   *reinstalltest.FlakyAPI
	disks *reinstalltest.Disks
	boot  *reinstalltest.BootOrder
	ports *reinstalltest.SwitchPorts
	power *reinstalltest.Power
	kexec *reinstalltest.Kexec
	max   int

	orig     reinstall.Inventory
	osDisks  map[string]bool   // physical IDs of the disks built as OS disks
	storeMap map[string]string // stored inventory name -> physical ID
	allowed  map[string]bool   // physical IDs of pinned primary disks
	wipesGen map[uint64]int    // wipes per request generation
	log      []string
}

func newSim(t *testing.T, r *rand.Rand, st *propertyStats) *sim {
	inv, osDisks := randomInventory(r)
	s := &sim{osDisks: osDisks, t: t, r: r, st: st, clock: fencetest.NewClock(t0), orig: inv.Clone(), disks: reinstalltest.NewDisks(inv),
		boot: &reinstalltest.BootOrder{}, ports: &reinstalltest.SwitchPorts{}, power: &reinstalltest.Power{}, kexec: &reinstalltest.Kexec{},
		max: 1 + r.IntN(3), storeMap: map[string]string{}, allowed: map[string]bool{}, wipesGen: map[uint64]int{}}
	m := reinstalltest.Machine("m1", "ubuntu-22.04")
	m.Inventory = inv
	s.store = reinstall.NewMemStore(m)
	for _, d := range inv.Disks {
		s.storeMap[d.Name] = d.Name
	}
	svc, err := reinstall.NewService(reinstall.Ports{Store: s.store, Images: reinstalltest.Images(), BootOrder: s.boot, SwitchPorts: s.ports, Power: s.power},
		&reinstall.Options{MaxAttempts: s.max, Deadline: time.Hour, Now: s.clock.Now})
	require.NoError(t, err)
	s.svc = svc
	s.api = &reinstalltest.FlakyAPI{Next: svc}
	return s
}

func (s *sim) logf(format string, args ...any) { s.log = append(s.log, fmt.Sprintf(format, args...)) }

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nlog:\n  %s", fmt.Sprintf(format, args...), joinLines(s.log))
}

func joinLines(l []string) string {
	out := ""
	for i, x := range l {
		if i > 0 {
			out += "\n  "
		}
		out += x
	}
	return out
}

func (s *sim) machine() reinstall.Machine {
	m, err := s.store.Get(context.Background(), "m1")
	require.NoError(s.t, err)
	return m
}

// refreshInventory stores the live inventory in the record, as a host
// that re-reads the machine's disks does.
func (s *sim) refreshInventory() {
	inv, err := s.disks.Inventory(context.Background())
	require.NoError(s.t, err)
	m := s.machine()
	m.Inventory = inv
	s.store.Put(m)
	s.storeMap = map[string]string{}
	for _, d := range inv.Disks {
		s.storeMap[d.Name] = s.disks.Physical(d.Name)
	}
	s.logf("inventory refreshed")
}

// request asks for a reinstall with random API-side failures.
func (s *sim) request() {
	image := []string{"ubuntu-24.04", "debian-12", "ubuntu-22.04"}[s.r.IntN(3)]
	if s.r.IntN(20) == 0 {
		s.boot.FailNext(1, nil)
	}
	if s.r.IntN(20) == 0 {
		s.ports.FailNext(1, nil)
	}
	if s.r.IntN(15) == 0 {
		s.power.FailNext(1, nil)
	}
	before := s.machine()
	wiped := len(s.disks.Wiped())
	res, err := s.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: image})
	s.boot.FailNext(0, nil)
	s.ports.FailNext(0, nil)
	s.power.FailNext(0, nil)
	s.logf("request %s: err=%v", image, err)
	if len(s.disks.Wiped()) != wiped {
		s.fatalf("a request wiped a disk")
	}
	switch {
	case err == nil:
		s.st.accepted++
		if res.AlreadyPending {
			return
		}
		if before.Reinstalling() {
			// A re-arm keeps the disk pinned by the first request.
			s.st.rearms++
			if res.Status.PrimaryDisk != before.Reinstall.PrimaryDisk {
				s.fatalf("a re-arm pinned %v, not %v", res.Status.PrimaryDisk, before.Reinstall.PrimaryDisk)
			}
			return
		}
		phys := s.storeMap[res.Status.PrimaryDisk.Name]
		if phys == "" {
			s.fatalf("pinned disk %v is not in the stored inventory", res.Status.PrimaryDisk)
		}
		if _, derr := reinstall.DetectPrimaryDisk(before.Inventory); derr != nil {
			s.fatalf("accepted although detection fails: %v", derr)
		}
		if !s.osDisks[phys] {
			s.fatalf("detection pinned %s, a data disk", phys)
		}
		s.allowed[phys] = true
		if len(s.allowed) > 1 {
			s.fatalf("requests pinned different disks: %v", s.allowed)
		}
	case errors.Is(err, reinstall.ErrPlanFailed):
		s.st.planFailed++
		m := s.machine()
		if m.Reinstall.Phase != reinstall.PhaseFailed || m.Allocation.Reinstall != before.Allocation.Reinstall {
			s.fatalf("a failed start was not rolled back: %+v", m.Reinstall)
		}
	case errors.Is(err, reinstall.ErrNoPrimaryDisk), errors.Is(err, reinstall.ErrAmbiguousPrimaryDisk), errors.Is(err, reinstall.ErrInvalidInventory),
		errors.Is(err, reinstall.ErrReinstallPending):
		s.st.refused++
		s.st.refusals[reinstallCode(err)]++
		after := s.machine()
		if !assert.Equal(s.t, before, after) {
			s.fatalf("a refused request changed the record")
		}
	default:
		s.fatalf("unexpected error: %v", err)
	}
}

// pxeBoot runs the installer once, with random failures and maybe a power
// cut.
func (s *sim) pxeBoot() {
	s.st.boots++
	g := &gate{left: -1}
	if s.r.IntN(6) == 0 {
		g.left = s.r.IntN(12)
	}
	s.api.FailLookups([]int{0, 0, 0, 0, 0, 1, 2, 3}[s.r.IntN(8)])
	s.api.FailReports([]int{0, 0, 0, 0, 0, 1, 4, 5, 9}[s.r.IntN(9)], s.r.IntN(2) == 0)
	s.disks.ClearFaults()
	for _, op := range []reinstalltest.DiskOp{reinstalltest.OpInventory, reinstalltest.OpWipe, reinstalltest.OpWrite, reinstalltest.OpInstall} {
		if s.r.IntN(15) == 0 {
			s.disks.Inject(reinstalltest.Fault{Op: op, Partial: s.r.IntN(2) == 0})
		}
	}
	s.boot.FailNext(s.r.IntN(2)*s.r.IntN(4), nil)
	s.ports.FailNext(s.r.IntN(2)*s.r.IntN(4), nil)
	s.kexec.FailNext(s.r.IntN(2)*s.r.IntN(3), nil)

	m := s.machine()
	var gen uint64
	if m.Reinstall != nil {
		gen = m.Reinstall.Generation
	}
	wiped := len(s.disks.Wiped())
	p := installer.Ports{Allocations: gatedAPI{g, s.api}, Reporter: gatedAPI{g, s.api}, Disks: gatedDisks{g, s.disks},
		BootOrder: gatedMachine{g: g, boot: s.boot}, SwitchPorts: gatedMachine{g: g, ports: s.ports}, Kexec: gatedMachine{g: g, kexec: s.kexec}}
	st, err := installer.Run(context.Background(), "m1", p, &installer.Options{Limits: installer.Limits{Backoff: -1}})
	require.NoError(s.t, err)
	s.boot.FailNext(0, nil)
	s.ports.FailNext(0, nil)
	s.kexec.FailNext(0, nil)
	s.disks.ClearFaults()
	s.api.FailLookups(0)
	s.api.FailReports(0, false)
	if g.cut {
		s.st.powerCuts++
	}
	newWipes := s.disks.Wiped()[wiped:]
	s.logf("pxe boot (gen %d, cut=%v): %s; wiped %v", gen, g.cut, st.Summary(), newWipes)
	for _, w := range newWipes {
		if !s.allowed[w] {
			s.fatalf("disk %s was wiped, but only %v may be", w, s.allowed)
		}
	}
	s.st.wipes += len(newWipes)
	s.wipesGen[gen] += len(newWipes)
	if s.wipesGen[gen] > s.max {
		s.fatalf("request %d wiped %d times, more than %d attempts", gen, s.wipesGen[gen], s.max)
	}
	after := s.machine()
	if st.Phase == installer.PhaseBooted && st.Target == reinstall.TargetNewOS {
		if after.Allocation.Reinstall || after.Reinstall.Phase != reinstall.PhaseSucceeded {
			s.fatalf("booted the new OS but the API side has %+v", after.Reinstall)
		}
	}
	switch {
	case st.Phase == installer.PhaseHalted:
		s.st.halted++
	case st.Phase == installer.PhaseBooted && st.Target == reinstall.TargetLocalOS && st.Failure != "":
		s.st.bootedOld++
	}
}

func (s *sim) run() {
	s.st.runs++
	s.request()
	for range 1 + s.r.IntN(6) {
		if s.r.IntN(3) == 0 {
			names := make([]string, 0)
			for _, d := range s.orig.Disks {
				names = append(names, d.Name)
			}
			perm := slices.Clone(names)
			s.r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			rename := map[string]string{}
			for i, id := range names {
				rename[id] = perm[i]
			}
			s.disks.Rename(rename)
			s.st.renames++
			s.logf("renamed %v", rename)
		}
		// The machine boots from the network when its boot order says so,
		// or when someone forces it.
		if s.boot.Get("m1") == reinstall.BootPXE || s.r.IntN(5) == 0 {
			s.pxeBoot()
		}
		if s.r.IntN(4) == 0 {
			s.clock.Add(90 * time.Minute)
			ids, err := s.svc.Expire(context.Background())
			require.NoError(s.t, err)
			s.st.expired += len(ids)
			s.logf("expire: %v", ids)
		}
		m := s.machine()
		if s.r.IntN(4) == 0 {
			s.refreshInventory()
		}
		if s.r.IntN(3) == 0 && (m.Reinstall == nil || !m.Reinstall.Phase.Pending()) {
			s.request()
		}
	}

	// The end: every reinstall ends with the flag reset or the machine
	// reported failed.
	s.clock.Add(3 * time.Hour)
	_, err := s.svc.Expire(context.Background())
	require.NoError(s.t, err)
	m := s.machine()
	if m.Reinstalling() && m.Reinstall.Phase != reinstall.PhaseFailed {
		s.fatalf("the flag is set and the reinstall is %v", m.Reinstall.Phase)
	}
	switch {
	case m.Reinstall == nil:
	case m.Reinstall.Phase == reinstall.PhaseSucceeded:
		s.st.succeeded++
	case m.Allocation.Reinstall:
		s.st.failedFlagSet++
	default:
		s.st.failedFlagReset++
	}
	// One more boot, with nothing failing, wipes nothing.
	wiped := len(s.disks.Wiped())
	s.api.FailLookups(0)
	s.api.FailReports(0, false)
	s.disks.ClearFaults()
	st, err := installer.Run(context.Background(), "m1", installer.Ports{Allocations: s.api, Reporter: s.api, Disks: s.disks,
		BootOrder: s.boot, SwitchPorts: s.ports, Kexec: s.kexec}, &installer.Options{Limits: installer.Limits{Backoff: -1}})
	require.NoError(s.t, err)
	if len(s.disks.Wiped()) != wiped {
		s.fatalf("a boot after the end wiped %v", s.disks.Wiped()[wiped:])
	}
	if m.Reinstalling() && st.Phase != installer.PhaseHalted {
		s.fatalf("a machine kept in reinstall did not halt: %s", st.Summary())
	}

	// Every disk but the primary keeps its contents.
	for _, d := range s.orig.Disks {
		if s.allowed[d.Name] {
			continue
		}
		live, ok := s.disks.Disk(d.Name)
		require.True(s.t, ok)
		if !sameContents(d, live) {
			s.fatalf("disk %s changed: %+v -> %+v", d.Name, d, live)
		}
	}
}

// sameContents compares disks ignoring their kernel names.
func sameContents(a, b reinstall.Disk) bool {
	if len(a.Partitions) != len(b.Partitions) {
		return false
	}
	a, b = a.Clone(), b.Clone()
	a.Name, b.Name = "", ""
	for i := range a.Partitions {
		a.Partitions[i].Name, b.Partitions[i].Name = "", ""
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// randomInventory makes a machine's disks: often a valid OS disk, data
// disks of all kinds, and now and then what detection must refuse (a
// second /etc/metal, a removable OS disk, /etc/metal on the wrong
// filesystem, a root mounted elsewhere, a serial twice).
// The second result names the disks built as OS disks: the truth a
// detection is checked against (a data disk is never one).
func randomInventory(r *rand.Rand) (reinstall.Inventory, map[string]bool) {
	pool := []string{"sda", "sdb", "sdc", "sdd", "vda", "nvme0n1", "nvme1n1"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	n := 1 + r.IntN(5)
	fss := []reinstall.Filesystem{"", "xfs", "ext4", "LVM2_member", "swap", "btrfs", "zfs_member", "vfat"}
	var inv reinstall.Inventory
	osDisks := map[string]bool{}
	rootMounted := false
	for i := range n {
		d := reinstall.Disk{Name: pool[i], Size: uint64(8+r.IntN(4000)) * reinstalltest.GiB,
			Type: []reinstall.DiskType{reinstall.DiskHDD, reinstall.DiskSSD, reinstall.DiskNVMe}[r.IntN(3)], Removable: r.IntN(12) == 0}
		if r.IntN(5) != 0 {
			d.Serial = fmt.Sprintf("SN-%d", i)
			if i > 0 && r.IntN(50) == 0 {
				d.Serial = "SN-0"
			}
		}
		pn := func(k int) string {
			if c := d.Name[len(d.Name)-1]; c >= '0' && c <= '9' {
				return fmt.Sprintf("%sp%d", d.Name, k)
			}
			return fmt.Sprintf("%s%d", d.Name, k)
		}
		switch {
		case (i == 0 && r.IntN(5) != 0) || r.IntN(15) == 0:
			// An OS disk.
			osDisks[d.Name] = true
			rootFS := []reinstall.Filesystem{"ext4", "ext4", "ext4", "xfs", "btrfs", "ext4", "ext4", "xfs", "btrfs", "vfat"}[r.IntN(10)]
			d.Partitions = []reinstall.Partition{
				{Name: pn(1), Size: d.Size / 16, Filesystem: "vfat", Label: "efi"},
				{Name: pn(2), Size: d.Size / 4, Filesystem: rootFS, Label: "root", EtcMetal: r.IntN(12) != 0},
				{Name: pn(3), Size: d.Size / 2, Filesystem: "ext4", Label: "varlib"},
			}
		case r.IntN(2) == 0:
			// A whole-disk filesystem.
			d.Filesystem = fss[r.IntN(len(fss))]
			d.EtcMetal = d.Filesystem != "" && r.IntN(20) == 0
		default:
			for k := range r.IntN(4) {
				p := reinstall.Partition{Name: pn(k + 1), Size: d.Size / 8, Filesystem: fss[r.IntN(len(fss))]}
				p.EtcMetal = p.Filesystem != "" && r.IntN(20) == 0
				d.Partitions = append(d.Partitions, p)
			}
		}
		if osDisks[d.Name] && !rootMounted && r.IntN(4) == 0 {
			// The inventory of the running OS.
			d.Partitions[0].MountPoint = "/boot/efi"
			if d.Partitions[1].Filesystem != "vfat" {
				d.Partitions[1].MountPoint = "/"
				rootMounted = true
			}
			d.Partitions[2].MountPoint = "/var/lib"
		}
		if d.Filesystem != "" && r.IntN(10) == 0 {
			d.MountPoint = "/var/lib/data"
		}
		if !rootMounted && r.IntN(20) == 0 {
			for k := range d.Partitions {
				if d.Partitions[k].Filesystem != "" {
					d.Partitions[k].MountPoint = "/"
					rootMounted = true
					break
				}
			}
		}
		inv.Disks = append(inv.Disks, d)
	}
	// A stale /etc/metal on a data disk while the real root is not seen
	// holding it cannot be told from an OS disk (see DetectPrimaryDisk):
	// data disks hold it only beside a real root.
	realRoot := false
	for _, d := range inv.Disks {
		if osDisks[d.Name] && !d.Removable && len(d.Partitions) > 1 && d.Partitions[1].EtcMetal && d.Partitions[1].Filesystem.IsRoot() {
			realRoot = true
		}
	}
	for i := range inv.Disks {
		d := &inv.Disks[i]
		if osDisks[d.Name] || realRoot {
			continue
		}
		d.EtcMetal = false
		for k := range d.Partitions {
			d.Partitions[k].EtcMetal = false
		}
	}
	return inv, osDisks
}

func TestPropertyReinstall(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	st := &propertyStats{refusals: map[string]int{}}
	for seed := range runs {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		s := newSim(t, r, st)
		s.run()
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("%+v", *st)
	// The simulation reaches every outcome.
	assert.Greater(t, st.accepted, runs/3)
	assert.Greater(t, st.refused, runs/20)
	assert.Greater(t, st.planFailed, runs/50)
	assert.Greater(t, st.succeeded, runs/20)
	assert.Greater(t, st.failedFlagSet, runs/50)
	assert.Greater(t, st.failedFlagReset, runs/50)
	assert.Greater(t, st.rearms, runs/100)
	assert.Greater(t, st.powerCuts, runs/20)
	assert.Greater(t, st.expired, runs/50)
	assert.Greater(t, st.bootedOld, runs/50)
	assert.Greater(t, st.halted, runs/20)
	assert.Greater(t, st.wipes, runs/3)
}
