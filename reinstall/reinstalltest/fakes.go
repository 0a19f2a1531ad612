// Package reinstalltest provides in-memory fakes of the ports of packages
// reinstall and reinstall/installer, with fault injection, for tests,
// demonstrations and dry runs. All are safe for concurrent use.
//
// Disks models physical disks that keep their identity when the kernel
// names them differently at the next boot (Rename), and records every disk
// it wiped by that identity: a test asks Wiped which physical disks were
// wiped, whatever they were called at the time.
package reinstalltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fencekit/fencekit/reinstall"
)

// ErrInjected is the error of an injected fault when none is given.
var ErrInjected = errors.New("injected fault")

// faults counts injected failures.
type faults struct {
	n   int
	err error
}

func (f *faults) take() error {
	if f.n <= 0 {
		return nil
	}
	f.n--
	if f.err != nil {
		return f.err
	}
	return ErrInjected
}

// DiskOp names an operation of Disks.
type DiskOp uint8

const (
	// OpInventory is Disks.Inventory.
	OpInventory DiskOp = iota
	// OpWipe is Disks.Wipe.
	OpWipe
	// OpWrite is Disks.WriteImage.
	OpWrite
	// OpInstall is Disks.RunInstall.
	OpInstall
	numDiskOps
)

// Fault is a failure injected into Disks.
type Fault struct {
	// Op is the operation that fails.
	Op DiskOp
	// Times is how many calls fail; 0 means 1.
	Times int
	// Err is the error; nil means ErrInjected.
	Err error
	// Partial makes the operation take effect before it fails (a wipe that
	// wiped, then lost its answer).
	Partial bool
}

type physical struct {
	id   string
	disk reinstall.Disk
}

// Disks is a fake of installer.Disks: physical disks with a live inventory.
type Disks struct {
	mu      sync.Mutex
	disks   []*physical
	faults  [numDiskOps][]Fault
	wiped   []string
	written []string
	log     []string
}

// NewDisks returns disks as inv describes them. Each disk's physical ID is
// its name in inv.
func NewDisks(inv reinstall.Inventory) *Disks {
	d := &Disks{}
	for _, disk := range inv.Clone().Disks {
		d.disks = append(d.disks, &physical{id: disk.Name, disk: disk})
	}
	return d
}

// Inject adds a fault.
func (d *Disks) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	d.mu.Lock()
	d.faults[f.Op] = append(d.faults[f.Op], f)
	d.mu.Unlock()
}

// ClearFaults removes every injected fault.
func (d *Disks) ClearFaults() {
	d.mu.Lock()
	d.faults = [numDiskOps][]Fault{}
	d.mu.Unlock()
}

// fault returns the next injected fault for op, if any. d.mu is held.
func (d *Disks) fault(op DiskOp) (Fault, bool) {
	fs := d.faults[op]
	if len(fs) == 0 {
		return Fault{}, false
	}
	f := fs[0]
	fs[0].Times--
	if fs[0].Times <= 0 {
		d.faults[op] = fs[1:]
	}
	if f.Err == nil {
		f.Err = ErrInjected
	}
	return f, true
}

// Rename gives disks new kernel names, as a reboot may: names maps
// physical IDs to their new names (partitions follow). It panics when the
// names would collide.
func (d *Disks) Rename(names map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range d.disks {
		n := p.disk.Name
		if nn, ok := names[p.id]; ok {
			n = nn
		}
		if seen[n] {
			panic(fmt.Sprintf("reinstalltest: Rename: name %q twice", n))
		}
		seen[n] = true
	}
	for _, p := range d.disks {
		nn, ok := names[p.id]
		if !ok {
			continue
		}
		old := p.disk.Name
		p.disk.Name = nn
		for i := range p.disk.Partitions {
			num := p.disk.Partitions[i].Name[len(old):]
			if len(num) > 0 && num[0] == 'p' {
				num = num[1:]
			}
			p.disk.Partitions[i].Name = partName(nn, num)
		}
	}
}

func partName(disk, num string) string {
	if c := disk[len(disk)-1]; c >= '0' && c <= '9' {
		return disk + "p" + num
	}
	return disk + num
}

// Physical returns the physical ID of the disk now named name, or "".
func (d *Disks) Physical(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.byName(name); p != nil {
		return p.id
	}
	return ""
}

// Disk returns the disk with the physical ID as the live inventory shows
// it.
func (d *Disks) Disk(id string) (reinstall.Disk, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.disks {
		if p.id == id {
			return p.disk.Clone(), true
		}
	}
	return reinstall.Disk{}, false
}

// Wiped returns the physical IDs of the disks wiped, in order, once per
// wipe (a partial wipe counts).
func (d *Disks) Wiped() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.wiped)
}

// Written returns the physical IDs of the disks an image was written to.
func (d *Disks) Written() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.written)
}

// Log returns every call, in order, as "op name(physical-id)".
func (d *Disks) Log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

func (d *Disks) byName(name string) *physical {
	for _, p := range d.disks {
		if p.disk.Name == name {
			return p
		}
	}
	return nil
}

// Inventory implements installer.Disks. It reports no mount points: the
// installer mounts nothing.
func (d *Disks) Inventory(ctx context.Context) (reinstall.Inventory, error) {
	if err := ctx.Err(); err != nil {
		return reinstall.Inventory{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, "inventory")
	if f, ok := d.fault(OpInventory); ok {
		return reinstall.Inventory{}, f.Err
	}
	var inv reinstall.Inventory
	for _, p := range d.disks {
		c := p.disk.Clone()
		// The installer mounts nothing.
		c.MountPoint = ""
		for i := range c.Partitions {
			c.Partitions[i].MountPoint = ""
		}
		inv.Disks = append(inv.Disks, c)
	}
	return inv, nil
}

// target finds the disk ref names; d.mu is held.
func (d *Disks) target(op string, ref reinstall.DiskRef) (*physical, error) {
	p := d.byName(ref.Name)
	if p == nil {
		d.log = append(d.log, op+" "+ref.Name+"(none)")
		return nil, fmt.Errorf("%s: no disk %s", op, ref.Name)
	}
	d.log = append(d.log, fmt.Sprintf("%s %s(%s)", op, ref.Name, p.id))
	return p, nil
}

// Wipe implements installer.Disks: the disk named ref.Name loses its
// partitions and filesystems.
func (d *Disks) Wipe(ctx context.Context, ref reinstall.DiskRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.target("wipe", ref)
	if err != nil {
		return err
	}
	f, failing := d.fault(OpWipe)
	if failing && !f.Partial {
		return f.Err
	}
	d.wiped = append(d.wiped, p.id)
	p.disk.Partitions, p.disk.Filesystem, p.disk.MountPoint, p.disk.EtcMetal = nil, "", "", false
	if failing {
		return f.Err
	}
	return nil
}

// WriteImage implements installer.Disks: the disk gets an EFI partition and
// a root partition (ext4) that holds /etc/metal.
func (d *Disks) WriteImage(ctx context.Context, ref reinstall.DiskRef, image string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.target("write "+image, ref)
	if err != nil {
		return err
	}
	f, failing := d.fault(OpWrite)
	if failing && !f.Partial {
		return f.Err
	}
	d.written = append(d.written, p.id)
	n := p.disk.Name
	p.disk.Partitions = []reinstall.Partition{
		{Name: partName(n, "1"), Size: p.disk.Size / 8, Filesystem: "vfat", Label: "efi"},
		{Name: partName(n, "2"), Size: p.disk.Size / 2, Filesystem: "ext4", Label: "root", EtcMetal: true},
	}
	p.disk.Filesystem, p.disk.MountPoint, p.disk.EtcMetal = "", "", false
	if failing {
		return f.Err
	}
	return nil
}

// RunInstall implements installer.Disks.
func (d *Disks) RunInstall(ctx context.Context, ref reinstall.DiskRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.target("install", ref); err != nil {
		return err
	}
	if f, ok := d.fault(OpInstall); ok {
		return f.Err
	}
	return nil
}

// BootOrder is a fake of reinstall.BootOrder.
type BootOrder struct {
	mu    sync.Mutex
	f     faults
	state map[string]reinstall.BootDevice
	calls int
}

// FailNext makes the next n calls fail with err (nil: ErrInjected).
func (b *BootOrder) FailNext(n int, err error) {
	b.mu.Lock()
	b.f = faults{n: n, err: err}
	b.mu.Unlock()
}

// SetBootOrder implements reinstall.BootOrder.
func (b *BootOrder) SetBootOrder(ctx context.Context, id string, dev reinstall.BootDevice) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if err := b.f.take(); err != nil {
		return err
	}
	if b.state == nil {
		b.state = map[string]reinstall.BootDevice{}
	}
	b.state[id] = dev
	return nil
}

// Get returns the machine's boot order as last set.
func (b *BootOrder) Get(id string) reinstall.BootDevice {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state[id]
}

// Calls counts the calls, failed ones included.
func (b *BootOrder) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// SwitchPorts is a fake of reinstall.SwitchPorts.
type SwitchPorts struct {
	mu    sync.Mutex
	f     faults
	state map[string]reinstall.Network
	calls int
}

// FailNext makes the next n calls fail with err (nil: ErrInjected).
func (s *SwitchPorts) FailNext(n int, err error) {
	s.mu.Lock()
	s.f = faults{n: n, err: err}
	s.mu.Unlock()
}

// SetNetwork implements reinstall.SwitchPorts.
func (s *SwitchPorts) SetNetwork(ctx context.Context, id string, n reinstall.Network) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err := s.f.take(); err != nil {
		return err
	}
	if s.state == nil {
		s.state = map[string]reinstall.Network{}
	}
	s.state[id] = n
	return nil
}

// Get returns the machine's network as last set.
func (s *SwitchPorts) Get(id string) reinstall.Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[id]
}

// Calls counts the calls, failed ones included.
func (s *SwitchPorts) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Power is a fake of reinstall.Power.
type Power struct {
	mu      sync.Mutex
	f       faults
	reboots map[string]int
}

// FailNext makes the next n reboots fail with err (nil: ErrInjected).
func (p *Power) FailNext(n int, err error) {
	p.mu.Lock()
	p.f = faults{n: n, err: err}
	p.mu.Unlock()
}

// Reboot implements reinstall.Power.
func (p *Power) Reboot(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.f.take(); err != nil {
		return err
	}
	if p.reboots == nil {
		p.reboots = map[string]int{}
	}
	p.reboots[id]++
	return nil
}

// Reboots counts the machine's successful reboots.
func (p *Power) Reboots(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reboots[id]
}

// Kexec is a fake of installer.Kexec.
type Kexec struct {
	mu     sync.Mutex
	f      faults
	booted []reinstall.BootTarget
}

// FailNext makes the next n calls fail with err (nil: ErrInjected).
func (k *Kexec) FailNext(n int, err error) {
	k.mu.Lock()
	k.f = faults{n: n, err: err}
	k.mu.Unlock()
}

// Kexec implements installer.Kexec.
func (k *Kexec) Kexec(ctx context.Context, t reinstall.BootTarget, _ reinstall.DiskRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.f.take(); err != nil {
		return err
	}
	k.booted = append(k.booted, t)
	return nil
}

// Booted returns the targets booted, in order.
func (k *Kexec) Booted() []reinstall.BootTarget {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.booted)
}

// API is the part of reinstall.Service the installer calls.
type API interface {
	Lookup(ctx context.Context, machineID string) (reinstall.Order, error)
	Report(ctx context.Context, r reinstall.Report) error
}

// FlakyAPI wraps an API with injected failures of the installer's lookups
// and reports.
type FlakyAPI struct {
	// Next is the API the calls go to when they do not fail.
	Next API

	mu      sync.Mutex
	lookups faults
	reports faults
	// lost: the report reaches the API side, then its answer is lost.
	lost    bool
	nReport int
}

// FailLookups makes the next n lookups fail before reaching Next.
func (f *FlakyAPI) FailLookups(n int) {
	f.mu.Lock()
	f.lookups = faults{n: n}
	f.mu.Unlock()
}

// FailReports makes the next n reports fail; with lost, each reaches Next
// first and only its answer is lost.
func (f *FlakyAPI) FailReports(n int, lost bool) {
	f.mu.Lock()
	f.reports, f.lost = faults{n: n}, lost
	f.mu.Unlock()
}

// Reports counts the reports that reached Next.
func (f *FlakyAPI) Reports() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nReport
}

// Lookup implements installer.Allocations.
func (f *FlakyAPI) Lookup(ctx context.Context, id string) (reinstall.Order, error) {
	f.mu.Lock()
	err := f.lookups.take()
	f.mu.Unlock()
	if err != nil {
		return reinstall.Order{}, err
	}
	return f.Next.Lookup(ctx, id)
}

// Report implements installer.Reporter.
func (f *FlakyAPI) Report(ctx context.Context, r reinstall.Report) error {
	f.mu.Lock()
	err, lost := f.reports.take(), f.lost
	if err == nil || lost {
		f.nReport++
	}
	f.mu.Unlock()
	if err != nil && !lost {
		return err
	}
	if rerr := f.Next.Report(ctx, r); rerr != nil {
		return rerr
	}
	return err
}
