package reinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// LsblkCommand is the command whose output ParseLsblk reads: every column,
// sizes in bytes, as JSON.
var LsblkCommand = []string{"lsblk", "--json", "--bytes", "--output-all"}

// LsblkOptions tune ParseLsblk.
type LsblkOptions struct {
	// EtcMetal reports whether the filesystem on a device (a partition, or
	// a whole disk) holds the directory /etc/metal. The installer probes
	// it (a read-only mount, or debugfs); nil reports none, and then no
	// disk can be detected as primary.
	EtcMetal func(dev LsblkDevice) (bool, error)
	// Loop takes loop devices for disks (images attached with losetup):
	// for tests and image builders, never on a machine.
	Loop bool
}

// LsblkDevice is one block device of lsblk's output: the columns the
// inventory is made from, by their lsblk names.
type LsblkDevice struct {
	Name        string        `json:"name"`
	KName       string        `json:"kname"`
	Path        string        `json:"path"`
	Type        string        `json:"type"` // disk, part, loop, rom, raid1, lvm, crypt, mpath, ...
	Size        lsblkUint     `json:"size"`
	Rota        lsblkBool     `json:"rota"`
	RM          lsblkBool     `json:"rm"`
	Hotplug     lsblkBool     `json:"hotplug"`
	Tran        string        `json:"tran"` // sata, sas, nvme, usb, iscsi, ...
	Serial      string        `json:"serial"`
	WWN         string        `json:"wwn"`
	FSType      string        `json:"fstype"`
	Label       string        `json:"label"`
	PartLabel   string        `json:"partlabel"`
	MountPoint  string        `json:"mountpoint"`
	MountPoints []*string     `json:"mountpoints"`
	Children    []LsblkDevice `json:"children"`
}

// mounts returns the device's mount points: lsblk 2.37 and later list
// them all (mountpoints), earlier ones one (mountpoint).
func (d *LsblkDevice) mounts() []string {
	var out []string
	for _, m := range d.MountPoints {
		if m != nil && *m != "" {
			out = append(out, *m)
		}
	}
	if len(out) == 0 && d.MountPoint != "" {
		out = append(out, d.MountPoint)
	}
	return out
}

// mount returns the mount point the inventory records: "/" when the device
// is mounted there, else the first.
func (d *LsblkDevice) mount() string {
	ms := d.mounts()
	if slices.Contains(ms, "/") {
		return "/"
	}
	if len(ms) > 0 {
		return ms[0]
	}
	return ""
}

// lsblkUint reads a number that lsblk writes as a JSON number (2.33 and
// later with --bytes) or as a string of digits (earlier); null is 0.
type lsblkUint uint64

func (u *lsblkUint) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "null" || s == "" {
		*u = 0
		return nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a size in bytes (run lsblk with --bytes)", clipStr(string(b)))
	}
	*u = lsblkUint(n)
	return nil
}

// lsblkBool reads a flag that lsblk writes as a JSON boolean (2.33 and
// later) or as "0" or "1" (earlier); null is false.
type lsblkBool bool

func (v *lsblkBool) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", `"1"`, "1":
		*v = true
	case "false", `"0"`, "0", "null":
		*v = false
	default:
		return fmt.Errorf("%s is not a flag", clipStr(string(b)))
	}
	return nil
}

// Stacked device types: a device built on others (software RAID, LVM,
// encryption, multipath). The inventory does not model them: a root
// filesystem on one is not on any partition the inventory lists, so
// primary disk detection refuses to guess, as it must.
var stackedTypes = []string{"raid0", "raid1", "raid4", "raid5", "raid6", "raid10", "linear", "lvm", "crypt", "mpath", "dm", "md"}

func stacked(t string) bool {
	return slices.Contains(stackedTypes, t) || strings.HasPrefix(t, "raid")
}

// ParseLsblk reads the output of LsblkCommand into an Inventory and
// validates it (Inventory.Validate). Each device of type disk (and loop,
// with Loop) of non-zero size is a disk: its type nvme when its transport
// or name says so, else hdd when rotational, else ssd; its serial the WWN
// when it has one, else its serial (characters an inventory does not
// allow replaced by '_'); removable when lsblk says rm or hotplug. Its
// children of type part are its partitions. Devices of other types (rom,
// zram of size 0, ...) are left out.
//
// Stacked devices are not modelled, and make ParseLsblk refuse what it
// cannot represent safely:
//
//   - a disk that is a path of a multipath device (a child of type
//     mpath): the same disk seen through several paths, which no wipe may
//     name by one path (ErrInvalidInventory);
//   - a filesystem on a stacked device (RAID, LVM, crypt) is not on any
//     listed partition: a root there leaves "/" unlisted, and detection
//     refuses (its rule for inventories with mount points), or finds no
//     disk holding /etc/metal.
func ParseLsblk(data []byte, o LsblkOptions) (Inventory, error) {
	if len(data) > MaxInventoryBytes*8 {
		return Inventory{}, invErr("lsblk", "more than %d bytes of lsblk output", MaxInventoryBytes*8)
	}
	var doc struct {
		BlockDevices []LsblkDevice `json:"blockdevices"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return Inventory{}, invErr("lsblk", "not lsblk's JSON output (%s): %v", strings.Join(LsblkCommand, " "), err)
	}
	if doc.BlockDevices == nil {
		return Inventory{}, invErr("lsblk", "no blockdevices in lsblk's output")
	}
	var inv Inventory
	for i := range doc.BlockDevices {
		d := &doc.BlockDevices[i]
		if !(d.Type == "disk" || o.Loop && d.Type == "loop") || d.Size == 0 {
			continue
		}
		for _, c := range d.Children {
			if c.Type == "mpath" {
				return Inventory{}, invErr("lsblk."+d.Name, "disk %s is a path of multipath device %s: multipath disks are not supported (a wipe must never name one path of a disk)", d.Name, c.Name)
			}
		}
		disk, err := lsblkDisk(d, o)
		if err != nil {
			return Inventory{}, err
		}
		inv.Disks = append(inv.Disks, disk)
	}
	if err := inv.Validate(); err != nil {
		return Inventory{}, err
	}
	return inv, nil
}

// lsblkDisk converts one disk.
func lsblkDisk(d *LsblkDevice, o LsblkOptions) (Disk, error) {
	disk := Disk{Name: kname(d), Size: uint64(d.Size), Removable: bool(d.RM) || bool(d.Hotplug), Serial: serialOf(d)}
	switch {
	case d.Tran == "nvme" || strings.HasPrefix(disk.Name, "nvme"):
		disk.Type = DiskNVMe
	case bool(d.Rota):
		disk.Type = DiskHDD
	default:
		disk.Type = DiskSSD
	}
	probe := func(dev *LsblkDevice) (bool, error) {
		if o.EtcMetal == nil || dev.FSType == "" {
			return false, nil
		}
		ok, err := o.EtcMetal(*dev)
		if err != nil {
			return false, invErr("lsblk."+kname(dev), "probing %s for /etc/metal: %v", kname(dev), err)
		}
		return ok, nil
	}
	var parts []*LsblkDevice
	for i := range d.Children {
		if d.Children[i].Type == "part" {
			parts = append(parts, &d.Children[i])
		}
	}
	if len(parts) == 0 && d.FSType != "" {
		disk.Filesystem, disk.MountPoint = Filesystem(d.FSType), d.mount()
		em, err := probe(d)
		if err != nil {
			return Disk{}, err
		}
		disk.EtcMetal = em
		return disk, nil
	}
	for _, p := range parts {
		label := p.Label
		if label == "" {
			label = p.PartLabel
		}
		part := Partition{Name: kname(p), Size: uint64(p.Size), Filesystem: Filesystem(p.FSType), Label: label, MountPoint: p.mount()}
		em, err := probe(p)
		if err != nil {
			return Disk{}, err
		}
		part.EtcMetal = em
		disk.Partitions = append(disk.Partitions, part)
	}
	return disk, nil
}

// kname returns the kernel's name of a device (lsblk's kname, else name).
func kname(d *LsblkDevice) string {
	if d.KName != "" {
		return d.KName
	}
	return d.Name
}

// serialOf returns the disk's WWN, else its serial, with the characters an
// inventory does not allow replaced by '_'.
func serialOf(d *LsblkDevice) string {
	s := strings.TrimSpace(d.WWN)
	if s == "" {
		s = strings.TrimSpace(d.Serial)
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == ':' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func clipStr(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// ReadLsblk runs LsblkCommand (bounded by ctx) and parses its output with
// ParseLsblk: the installer's live inventory.
func ReadLsblk(ctx context.Context, o LsblkOptions) (Inventory, error) {
	cmd := exec.CommandContext(ctx, LsblkCommand[0], LsblkCommand[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Inventory{}, fmt.Errorf("%s: %w: %s", strings.Join(LsblkCommand, " "), err, clipStr(strings.TrimSpace(stderr.String())))
	}
	return ParseLsblk(out, o)
}

// EtcMetalDebugfs is an LsblkOptions.EtcMetal probe that reads an ext2, 3
// or 4 filesystem with debugfs (e2fsprogs) without mounting it: true when
// /etc/metal is a directory there. Other filesystems that can hold a root
// (xfs, btrfs) are an error, so that the inventory is refused rather than
// a root it cannot see left out; the rest (vfat, swap, members of other
// devices) hold none.
func EtcMetalDebugfs(ctx context.Context) func(LsblkDevice) (bool, error) {
	return func(d LsblkDevice) (bool, error) {
		fs := Filesystem(d.FSType)
		switch {
		case fs == "ext2" || fs == "ext3" || fs == "ext4":
		case fs.IsRoot():
			return false, fmt.Errorf("cannot look into a %s filesystem without mounting it", fs)
		default:
			return false, nil
		}
		dev := d.Path
		if dev == "" {
			dev = "/dev/" + kname(&d)
		}
		out, err := exec.CommandContext(ctx, "debugfs", "-R", "stat /etc/metal", dev).CombinedOutput()
		if err != nil {
			return false, fmt.Errorf("debugfs %s: %w: %s", dev, err, clipStr(strings.TrimSpace(string(out))))
		}
		switch {
		case strings.Contains(string(out), "Type: directory"):
			return true, nil
		case strings.Contains(string(out), "File not found"):
			return false, nil
		}
		return false, fmt.Errorf("debugfs %s: cannot tell whether /etc/metal is there: %s", dev, clipStr(strings.TrimSpace(string(out))))
	}
}
