package reinstall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/fencekit/fencekit/internal/enum"
	"github.com/fencekit/fencekit/internal/strictjson"
)

// Limits of an inventory: ParseInventory and Inventory.Validate refuse
// anything larger.
const (
	MaxInventoryBytes = 1 << 20 // bytes of JSON
	MaxDisks          = 256     // disks per inventory
	MaxPartitions     = 128     // partitions per disk
)

// DiskType is the kind of a disk's medium.
type DiskType uint8

const (
	// DiskTypeUnknown is the zero DiskType; a valid inventory never holds
	// it.
	DiskTypeUnknown DiskType = iota
	// DiskHDD is a rotating disk.
	DiskHDD
	// DiskSSD is a solid-state disk on SATA or SAS.
	DiskSSD
	// DiskNVMe is an NVMe namespace.
	DiskNVMe
)

var diskTypeNames = [...]string{DiskTypeUnknown: "unknown", DiskHDD: "hdd", DiskSSD: "ssd", DiskNVMe: "nvme"}

// String returns "hdd", "ssd", "nvme" or "unknown".
func (t DiskType) String() string {
	return enum.Name(diskTypeNames[:], t, "DiskType")
}

// ParseDiskType parses "hdd", "ssd" or "nvme" (exactly, in lower case).
func ParseDiskType(s string) (DiskType, error) {
	if t, ok := enum.Value[DiskType](diskTypeNames[:], s); ok && t != DiskTypeUnknown {
		return t, nil
	}
	return DiskTypeUnknown, fmt.Errorf("disk type %q is not hdd, ssd or nvme", s)
}

// MarshalText encodes the type as String does; DiskTypeUnknown is an error.
func (t DiskType) MarshalText() ([]byte, error) {
	if t == DiskTypeUnknown || int(t) >= len(diskTypeNames) {
		return nil, fmt.Errorf("cannot encode disk type %v", t)
	}
	return []byte(t.String()), nil
}

// UnmarshalText decodes what MarshalText encodes.
func (t *DiskType) UnmarshalText(b []byte) error {
	v, err := ParseDiskType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Filesystem is a filesystem type as lsblk's FSTYPE column names it
// ("ext4", "vfat", "xfs", "swap", "LVM2_member", ...); empty for none.
type Filesystem string

// IsRoot reports whether a root filesystem of an installed OS can be of this
// type: ext3, ext4, xfs or btrfs.
func (f Filesystem) IsRoot() bool {
	switch f {
	case "ext3", "ext4", "xfs", "btrfs":
		return true
	}
	return false
}

// Partition is one partition of a disk, as the installer or the OS found
// it.
type Partition struct {
	// Name is the kernel's name: the disk's name, an optional "p" and a
	// number ("sda2", "nvme0n1p2").
	Name string `json:"name"`
	// Size is the partition's size in bytes, more than zero.
	Size uint64 `json:"size"`
	// Filesystem is the filesystem on the partition, empty for none.
	Filesystem Filesystem `json:"fstype,omitempty"`
	// Label is the filesystem or partition label, if any.
	Label string `json:"label,omitempty"`
	// MountPoint is where the running system has it mounted, if it is.
	MountPoint string `json:"mountpoint,omitempty"`
	// EtcMetal reports that the filesystem holds the directory /etc/metal,
	// which every OS installed by a metal installer has. It requires a
	// Filesystem.
	EtcMetal bool `json:"etcMetal,omitempty"`
}

// Disk is one block device of a machine.
type Disk struct {
	// Name is the kernel's name ("sda", "nvme0n1"). Names can change
	// between boots; Serial does not.
	Name string `json:"name"`
	// Serial is the disk's serial number or WWN, empty when unknown. When
	// set it identifies the disk across boots, and no two disks of an
	// inventory may share it.
	Serial string `json:"serial,omitempty"`
	// Size is the disk's size in bytes, more than zero.
	Size uint64 `json:"size"`
	// Type is the disk's medium.
	Type DiskType `json:"type"`
	// Removable is the kernel's removable flag (USB sticks, card readers,
	// some hot-swap bays).
	Removable bool `json:"removable"`
	// Filesystem, MountPoint and EtcMetal describe a filesystem on the
	// whole disk (no partition table). A disk with partitions has none.
	Filesystem Filesystem `json:"fstype,omitempty"`
	MountPoint string     `json:"mountpoint,omitempty"`
	EtcMetal   bool       `json:"etcMetal,omitempty"`
	// Partitions are the disk's partitions, in any order.
	Partitions []Partition `json:"partitions,omitempty"`
}

// HoldsEtcMetal reports whether any filesystem on the disk, on a partition
// or on the whole disk, holds /etc/metal.
func (d *Disk) HoldsEtcMetal() bool {
	if d.EtcMetal {
		return true
	}
	for i := range d.Partitions {
		if d.Partitions[i].EtcMetal {
			return true
		}
	}
	return false
}

// Ref returns the disk's identity.
func (d *Disk) Ref() DiskRef {
	return DiskRef{Name: d.Name, Serial: d.Serial, Size: d.Size, Type: d.Type}
}

// Clone returns a deep copy of the disk.
func (d Disk) Clone() Disk {
	if d.Partitions != nil {
		d.Partitions = append([]Partition(nil), d.Partitions...)
	}
	return d
}

// DiskRef identifies one disk: what a wipe plan names and what the API side
// pins when it accepts a reinstall.
type DiskRef struct {
	// Name is the disk's kernel name when the reference was taken.
	Name string `json:"name"`
	// Serial is the disk's serial or WWN, empty when unknown.
	Serial string `json:"serial,omitempty"`
	// Size is the disk's size in bytes.
	Size uint64 `json:"size"`
	// Type is the disk's medium.
	Type DiskType `json:"type"`
}

// String returns the disk's name, with its serial when known.
func (r DiskRef) String() string {
	if r.Serial != "" {
		return r.Name + " (serial " + r.Serial + ")"
	}
	return r.Name
}

// IsZero reports whether r names no disk.
func (r DiskRef) IsZero() bool { return r == DiskRef{} }

// Matches reports whether the live disk d is the disk r pinned: the same
// size and type and, when r has a serial, the same serial; when r has
// none, the same name.
func (r DiskRef) Matches(d DiskRef) bool {
	if r.IsZero() || r.Size != d.Size || r.Type != d.Type {
		return false
	}
	if r.Serial != "" {
		return d.Serial == r.Serial
	}
	return d.Name == r.Name
}

// Inventory is the list of a machine's disks, as lsblk reports them: the
// input of primary disk detection and of wipe planning.
type Inventory struct {
	// Disks are the machine's disks, in any order.
	Disks []Disk `json:"disks"`
}

// Clone returns a deep copy of the inventory.
func (inv Inventory) Clone() Inventory {
	if inv.Disks == nil {
		return inv
	}
	out := Inventory{Disks: make([]Disk, len(inv.Disks))}
	for i, d := range inv.Disks {
		out.Disks[i] = d.Clone()
	}
	return out
}

var (
	diskNameRE   = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)
	serialRE     = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	filesystemRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
)

// Validate checks the inventory's consistency; the error wraps
// ErrInvalidInventory and names the field at fault:
//
//   - at most MaxDisks disks and MaxPartitions partitions per disk;
//   - disk names are kernel names (lower-case letters and digits, starting
//     with a letter, at most 32); partition names are the disk's name, an
//     optional "p" and a number; no name appears twice;
//   - serials, when set, are printable tokens of at most 64 characters and
//     no two disks share one;
//   - sizes are more than zero and a disk's partitions fit in it;
//   - types are hdd, ssd or nvme; filesystem types are tokens of at most 32
//     letters, digits and '_';
//   - mount points are clean absolute paths, "/" at most once; labels are
//     valid UTF-8 without control characters, at most 64 bytes;
//   - EtcMetal requires a filesystem;
//   - a disk with a whole-disk filesystem has no partitions.
func (inv *Inventory) Validate() error {
	if len(inv.Disks) > MaxDisks {
		return invErr("disks", "%d disks, more than %d", len(inv.Disks), MaxDisks)
	}
	// Field names are only built for an error.
	df := func(i int) string { return fmt.Sprintf("disks[%d]", i) }
	pf := func(i, j int) string { return fmt.Sprintf("disks[%d].partitions[%d]", i, j) }
	type at struct{ disk, part int } // part < 0 for a disk
	where := func(a at) string {
		if a.part < 0 {
			return df(a.disk)
		}
		return pf(a.disk, a.part)
	}
	n := len(inv.Disks)
	for i := range inv.Disks {
		n += len(inv.Disks[i].Partitions)
	}
	names := make(map[string]at, n)
	serials := make(map[string]string, len(inv.Disks))
	roots := 0
	for i := range inv.Disks {
		d := &inv.Disks[i]
		if !diskNameRE.MatchString(d.Name) {
			return invErr(df(i)+".name", "disk name %q is not a kernel disk name", d.Name)
		}
		if prev, dup := names[d.Name]; dup {
			return invErr(df(i)+".name", "name %q already used by %s", d.Name, where(prev))
		}
		names[d.Name] = at{i, -1}
		if d.Serial != "" {
			if !serialRE.MatchString(d.Serial) {
				return invErr(df(i)+".serial", "serial %q is not a printable token of at most 64 characters", d.Serial)
			}
			if prev, dup := serials[d.Serial]; dup {
				return invErr(df(i)+".serial", "serial %q already used by %s (the same disk seen twice?)", d.Serial, prev)
			}
			serials[d.Serial] = d.Name
		}
		if d.Size == 0 {
			return invErr(df(i)+".size", "disk %s has size 0", d.Name)
		}
		if d.Type == DiskTypeUnknown || int(d.Type) >= len(diskTypeNames) {
			return invErr(df(i)+".type", "disk %s has no valid type", d.Name)
		}
		if err := checkFS(func() string { return df(i) }, d.Filesystem, d.MountPoint, d.EtcMetal, &roots); err != nil {
			return err
		}
		if d.Filesystem != "" && len(d.Partitions) > 0 {
			return invErr(df(i)+".fstype", "disk %s has both a whole-disk filesystem and partitions", d.Name)
		}
		if len(d.Partitions) > MaxPartitions {
			return invErr(df(i)+".partitions", "disk %s has %d partitions, more than %d", d.Name, len(d.Partitions), MaxPartitions)
		}
		var sum uint64
		for j := range d.Partitions {
			p := &d.Partitions[j]
			if !isPartitionName(d.Name, p.Name) {
				return invErr(pf(i, j)+".name", "partition name %q is not a partition of disk %s", p.Name, d.Name)
			}
			if prev, dup := names[p.Name]; dup {
				return invErr(pf(i, j)+".name", "name %q already used by %s", p.Name, where(prev))
			}
			names[p.Name] = at{i, j}
			if p.Size == 0 {
				return invErr(pf(i, j)+".size", "partition %s has size 0", p.Name)
			}
			if p.Size > d.Size-sum {
				return invErr(pf(i, j)+".size", "the partitions of disk %s do not fit in its %d bytes", d.Name, d.Size)
			}
			sum += p.Size
			if len(p.Label) > 64 || !printable(p.Label) {
				return invErr(pf(i, j)+".label", "label of %s is not printable UTF-8 of at most 64 bytes", p.Name)
			}
			if err := checkFS(func() string { return pf(i, j) }, p.Filesystem, p.MountPoint, p.EtcMetal, &roots); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFS(field func() string, fs Filesystem, mount string, etcMetal bool, roots *int) error {
	if fs != "" && !filesystemRE.MatchString(string(fs)) {
		return invErr(field()+".fstype", "filesystem type %q is not a token of at most 32 letters, digits and '_'", fs)
	}
	if etcMetal && fs == "" {
		return invErr(field()+".etcMetal", "/etc/metal reported where there is no filesystem")
	}
	if mount != "" {
		if len(mount) > 256 || !printable(mount) || mount[0] != '/' || path.Clean(mount) != mount {
			return invErr(field()+".mountpoint", "mount point %q is not a clean absolute path of at most 256 bytes", mount)
		}
		if fs == "" {
			return invErr(field()+".mountpoint", "mount point %q where there is no filesystem", mount)
		}
		if mount == "/" {
			*roots++
			if *roots > 1 {
				return invErr(field()+".mountpoint", "a second filesystem mounted at /")
			}
		}
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// isPartitionName reports whether p names a partition of disk d: d, an
// optional "p", and a number without leading zeros.
func isPartitionName(d, p string) bool {
	rest, ok := strings.CutPrefix(p, d)
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "p")
	if rest == "" || len(rest) > 4 || rest[0] == '0' {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func invErr(field, format string, args ...any) error {
	return errorf("", "inventory."+field, fmt.Errorf("%w: %s", ErrInvalidInventory, fmt.Sprintf(format, args...)))
}

// Wire forms: pointers tell a missing field from a zero one.
type wireInventory struct {
	Disks []wireDisk `json:"disks"`
}

type wireDisk struct {
	Name       *string         `json:"name"`
	Serial     *string         `json:"serial"`
	Size       *uint64         `json:"size"`
	Type       *string         `json:"type"`
	Removable  *bool           `json:"removable"`
	Filesystem *string         `json:"fstype"`
	MountPoint *string         `json:"mountpoint"`
	EtcMetal   *bool           `json:"etcMetal"`
	Partitions []wirePartition `json:"partitions"`
}

type wirePartition struct {
	Name       *string `json:"name"`
	Size       *uint64 `json:"size"`
	Filesystem *string `json:"fstype"`
	Label      *string `json:"label"`
	MountPoint *string `json:"mountpoint"`
	EtcMetal   *bool   `json:"etcMetal"`
}

// inventoryKeys are the member names an inventory may use, spelled
// exactly: encoding/json would otherwise match them without regard to
// case.
var inventoryKeys = map[string]bool{
	"disks": true, "name": true, "serial": true, "size": true, "type": true, "removable": true,
	"fstype": true, "mountpoint": true, "etcMetal": true, "partitions": true, "label": true,
}

// ParseInventory parses an inventory from JSON, strictly, and validates it
// (see Inventory.Validate). The format is lsblk-like:
//
//	{"disks": [
//	  {"name": "sda", "serial": "S4EVNX0N", "size": 240057409536, "type": "ssd", "removable": false,
//	   "partitions": [
//	     {"name": "sda1", "size": 536870912, "fstype": "vfat", "label": "efi"},
//	     {"name": "sda2", "size": 239519497728, "fstype": "ext4", "label": "root", "etcMetal": true}]},
//	  {"name": "sdb", "size": 4000787030016, "type": "hdd", "removable": false, "fstype": "xfs"}]}
//
// A disk needs name, size, type and removable; a partition needs name and
// size; the other members are optional ("disks" too: none is an empty
// inventory). Strictly means: valid UTF-8, one JSON object and nothing
// after it, member names spelled exactly and never twice in an object, no
// unknown member, null only where a member is optional, sizes as unsigned
// integers, at most MaxInventoryBytes. Errors wrap ErrInvalidInventory.
func ParseInventory(data []byte) (Inventory, error) {
	if len(data) > MaxInventoryBytes {
		return Inventory{}, invErr("", "%d bytes, more than %d", len(data), MaxInventoryBytes)
	}
	if err := strictjson.Scan(data, 6, func(k string) error {
		if !inventoryKeys[k] {
			return fmt.Errorf("unknown member %q", k)
		}
		return nil
	}); err != nil {
		return Inventory{}, invErr("", "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireInventory
	if err := dec.Decode(&w); err != nil {
		return Inventory{}, invErr("", "%v", err)
	}
	var inv Inventory
	if len(w.Disks) > MaxDisks {
		return Inventory{}, invErr("disks", "%d disks, more than %d", len(w.Disks), MaxDisks)
	}
	for i, wd := range w.Disks {
		f := fmt.Sprintf("disks[%d]", i)
		var d Disk
		switch {
		case wd.Name == nil:
			return Inventory{}, invErr(f+".name", "missing")
		case wd.Size == nil:
			return Inventory{}, invErr(f+".size", "missing")
		case wd.Type == nil:
			return Inventory{}, invErr(f+".type", "missing")
		case wd.Removable == nil:
			return Inventory{}, invErr(f+".removable", "missing")
		}
		t, err := ParseDiskType(*wd.Type)
		if err != nil {
			return Inventory{}, invErr(f+".type", "%v", err)
		}
		d.Name, d.Size, d.Type, d.Removable = *wd.Name, *wd.Size, t, *wd.Removable
		d.Serial = deref(wd.Serial)
		d.Filesystem = Filesystem(deref(wd.Filesystem))
		d.MountPoint = deref(wd.MountPoint)
		d.EtcMetal = wd.EtcMetal != nil && *wd.EtcMetal
		if len(wd.Partitions) > MaxPartitions {
			return Inventory{}, invErr(f+".partitions", "%d partitions, more than %d", len(wd.Partitions), MaxPartitions)
		}
		for j, wp := range wd.Partitions {
			pf := fmt.Sprintf("%s.partitions[%d]", f, j)
			switch {
			case wp.Name == nil:
				return Inventory{}, invErr(pf+".name", "missing")
			case wp.Size == nil:
				return Inventory{}, invErr(pf+".size", "missing")
			}
			d.Partitions = append(d.Partitions, Partition{
				Name: *wp.Name, Size: *wp.Size, Filesystem: Filesystem(deref(wp.Filesystem)),
				Label: deref(wp.Label), MountPoint: deref(wp.MountPoint), EtcMetal: wp.EtcMetal != nil && *wp.EtcMetal,
			})
		}
		inv.Disks = append(inv.Disks, d)
	}
	if err := inv.Validate(); err != nil {
		return Inventory{}, err
	}
	return inv, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
