package reinstall

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Detection is what primary disk detection found.
type Detection struct {
	// Disk is the primary disk: the only disk a reinstall may wipe.
	Disk DiskRef
	// Partition is the partition holding /etc/metal in a root filesystem
	// (the first by name when there are several, as with A/B root
	// partitions).
	Partition string
}

// DetectPrimaryDisk finds the primary (OS, root) disk in an inventory. It
// is deterministic: the result and the error message do not depend on the
// order of the disks or partitions. The algorithm:
//
//  1. The inventory must be valid (Inventory.Validate); otherwise
//     ErrInvalidInventory.
//  2. The holders are the disks on which any filesystem, on a partition or
//     on the whole disk, holds /etc/metal, whatever its type and whether
//     the disk is removable. None: ErrNoPrimaryDisk. More than one:
//     ErrAmbiguousPrimaryDisk, naming them. (A data disk that once was an
//     OS disk, or a clone of one, is never guessed away.)
//  3. The one holder must not be removable, and must hold /etc/metal on a
//     partition whose filesystem can be a root filesystem (ext3, ext4, xfs,
//     btrfs; see Filesystem.IsRoot); otherwise ErrNoPrimaryDisk.
//  4. When the inventory reports mount points (it comes from a running OS),
//     the filesystem mounted at "/" must be one of the holder's partitions
//     that hold /etc/metal in a root filesystem; otherwise
//     ErrAmbiguousPrimaryDisk. An inventory with mount points but none at
//     "/" has its root somewhere it does not show (software RAID, LVM, the
//     network), so /etc/metal found on a disk may be stale.
//  5. The holder must not be part of another device: no partition that is
//     a member of a RAID array, an LVM volume group, a ZFS pool, a LUKS
//     volume, a Ceph OSD or a bcache device; otherwise
//     ErrPrimaryDiskHoldsData. A reinstall wipes the whole disk, and such
//     a member's data lives beyond it.
//  6. The holder is the primary disk.
//
// So the disk found always holds /etc/metal (the rule that the API side
// refuses a reinstall when the detected disk lacks it holds by
// construction), and every doubt is a refusal: a wrong guess would wipe a
// data disk.
//
// The algorithm assumes what an inventory says about /etc/metal is true
// and complete: every filesystem that holds it says so. A data disk that
// carries a stale /etc/metal (a former OS disk) is then caught by rule 2,
// unless the real root is not seen as holding /etc/metal at all (its
// probe failed, or it lives on a device the inventory omits) and the
// inventory has no mount points to cross-check: that case cannot be told
// from a machine whose OS disk is that disk.
func DetectPrimaryDisk(inv Inventory) (Detection, error) {
	if err := inv.Validate(); err != nil {
		return Detection{}, err
	}
	disks := make([]*Disk, len(inv.Disks))
	for i := range inv.Disks {
		disks[i] = &inv.Disks[i]
	}
	slices.SortFunc(disks, func(a, b *Disk) int { return cmp.Compare(a.Name, b.Name) })
	var holders []*Disk
	for _, d := range disks {
		if d.HoldsEtcMetal() {
			holders = append(holders, d)
		}
	}
	switch len(holders) {
	case 0:
		return Detection{}, pdErr(ErrNoPrimaryDisk, "no disk holds /etc/metal (%d disks)", len(disks))
	case 1:
	default:
		names := make([]string, len(holders))
		for i, d := range holders {
			names[i] = d.Name
		}
		return Detection{}, pdErr(ErrAmbiguousPrimaryDisk, "disks %s all hold /etc/metal", strings.Join(names, ", "))
	}
	d := holders[0]
	if d.Removable {
		return Detection{}, pdErr(ErrNoPrimaryDisk, "the only disk holding /etc/metal, %s, is removable", d.Name)
	}
	var root []string
	for _, p := range d.Partitions {
		if p.EtcMetal && p.Filesystem.IsRoot() {
			root = append(root, p.Name)
		}
	}
	if len(root) == 0 {
		return Detection{}, pdErr(ErrNoPrimaryDisk, "disk %s holds /etc/metal only outside a root filesystem partition", d.Name)
	}
	slices.Sort(root)
	partition := root[0]
	// What a running OS reports mounted must agree.
	var rootMount string // the name of what is mounted at /, if anything
	mounts := false
	for _, e := range disks {
		if e.MountPoint != "" {
			mounts = true
			if e.MountPoint == "/" {
				rootMount = e.Name
			}
		}
		for _, p := range e.Partitions {
			if p.MountPoint != "" {
				mounts = true
				if p.MountPoint == "/" {
					rootMount = p.Name
				}
			}
		}
	}
	switch {
	case !mounts:
	case rootMount == "":
		return Detection{}, pdErr(ErrAmbiguousPrimaryDisk, "the inventory reports mount points but no root filesystem on its disks, while /etc/metal is on %s", d.Name)
	case !slices.Contains(root, rootMount):
		return Detection{}, pdErr(ErrAmbiguousPrimaryDisk, "the root filesystem is mounted from %s, but /etc/metal is in %s", rootMount, strings.Join(root, ", "))
	default:
		partition = rootMount
	}
	if why := holdsData(d); why != "" {
		return Detection{}, pdErr(ErrPrimaryDiskHoldsData, "disk %s, which holds /etc/metal, also holds data: %s; a reinstall wipes the whole disk", d.Name, why)
	}
	return Detection{Disk: d.Ref(), Partition: partition}, nil
}

// memberFilesystems mark a partition that is part of another device: a
// RAID array, an LVM volume group, a ZFS pool, an encrypted volume, a Ceph
// OSD, a bcache backing device. Its data lives beyond what the inventory
// shows.
var memberFilesystems = []Filesystem{"linux_raid_member", "LVM2_member", "zfs_member", "crypto_LUKS", "ceph_bluestore", "bcache"}

// holdsData says why a disk holds data beyond its own partitions, "" when
// it does not: a partition that is a member of another device. (The OS's
// own partitions, /var/lib included, are the OS disk's to wipe: data
// belongs on the other disks, which a reinstall never touches.)
func holdsData(d *Disk) string {
	var why []string
	for _, p := range d.Partitions {
		if slices.Contains(memberFilesystems, p.Filesystem) {
			why = append(why, fmt.Sprintf("%s is a %s", p.Name, p.Filesystem))
		}
	}
	if slices.Contains(memberFilesystems, d.Filesystem) {
		why = append(why, fmt.Sprintf("%s is a %s", d.Name, d.Filesystem))
	}
	slices.Sort(why)
	return strings.Join(why, ", ")
}

func pdErr(sentinel error, format string, args ...any) error {
	return errorf("", "primaryDisk", fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...)))
}

// WipePlan lists the disks the installer will wipe.
type WipePlan struct {
	// Disks are named as in the live inventory the plan was made from.
	// A reinstall's plan holds exactly one disk: the primary disk.
	Disks []DiskRef
}

// PlanWipe decides, from the inventory the installer reads at boot (live)
// and the API side's order, which disks to wipe. Only an OrderReinstall
// wipes anything, and then exactly the disk the order pinned, found again
// in the live inventory (kernel names can change between boots):
//
//   - Primary disk detection (DetectPrimaryDisk) runs on the live
//     inventory. When it finds a disk, that disk must match the pinned one
//     (DiskRef.Matches: size, type, and serial, or name when the pin has
//     no serial); otherwise ErrPrimaryDiskMismatch. A pin without a serial
//     (or WWN) is trusted by name only while the disk is intact: once an
//     attempt may have wiped it, a data disk with an old /etc/metal could
//     carry the pinned name after a reboot, and nothing is wiped.
//   - When it finds none because no disk holds /etc/metal any more, and
//     the order says an earlier attempt may have wiped the primary disk
//     (DiskIntact false), the pinned disk is found by serial alone: the pin
//     must have a serial, exactly one live disk must have it, with the same
//     size and type, not removable. Without a serial nothing is wiped:
//     nothing else proves which disk it is.
//   - Any other detection error refuses (it wraps the error).
//
// The plan names the disk as the live inventory does.
func PlanWipe(live Inventory, o Order) (WipePlan, error) {
	if o.Kind != OrderReinstall {
		return WipePlan{}, nil
	}
	if err := o.Validate(); err != nil {
		return WipePlan{}, err
	}
	pin := o.PrimaryDisk
	det, err := DetectPrimaryDisk(live)
	if err == nil {
		if pin.Serial == "" && !o.DiskIntact {
			// Without a serial or WWN the pin is a kernel name, which can
			// move between boots; and an earlier attempt may have wiped
			// the primary disk, so the disk that holds /etc/metal now may
			// be a data disk carrying an old one under the pinned name.
			return WipePlan{}, errorf(o.Machine, "primaryDisk", fmt.Errorf("%w: disk %v has no serial or WWN, and an earlier attempt may have wiped it: the disk that holds /etc/metal now cannot be told from another under the same name; nothing is wiped", ErrPrimaryDiskMismatch, pin))
		}
		if !pin.Matches(det.Disk) {
			return WipePlan{}, errorf(o.Machine, "primaryDisk", fmt.Errorf("%w: detection found %v, the reinstall was requested for %v", ErrPrimaryDiskMismatch, det.Disk, pin))
		}
		return WipePlan{Disks: []DiskRef{det.Disk}}, nil
	}
	if o.DiskIntact || !errors.Is(err, ErrNoPrimaryDisk) || !noHolder(live) {
		return WipePlan{}, withMachine(err, o.Machine)
	}
	if pin.Serial == "" {
		return WipePlan{}, errorf(o.Machine, "primaryDisk", fmt.Errorf("%w: no disk holds /etc/metal any more and disk %v has no serial to find it by", ErrPrimaryDiskMismatch, pin))
	}
	var found []*Disk
	for i := range live.Disks {
		if live.Disks[i].Serial == pin.Serial {
			found = append(found, &live.Disks[i])
		}
	}
	if len(found) != 1 {
		return WipePlan{}, errorf(o.Machine, "primaryDisk", fmt.Errorf("%w: %d disks have serial %s", ErrPrimaryDiskMismatch, len(found), pin.Serial))
	}
	d := found[0]
	if d.Removable || !pin.Matches(d.Ref()) {
		return WipePlan{}, errorf(o.Machine, "primaryDisk", fmt.Errorf("%w: disk %v does not match %v (size, type or removable)", ErrPrimaryDiskMismatch, d.Ref(), pin))
	}
	return WipePlan{Disks: []DiskRef{d.Ref()}}, nil
}

// noHolder reports whether no disk of the (valid) inventory holds
// /etc/metal.
func noHolder(inv Inventory) bool {
	for i := range inv.Disks {
		if inv.Disks[i].HoldsEtcMetal() {
			return false
		}
	}
	return true
}
