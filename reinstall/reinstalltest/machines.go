package reinstalltest

import (
	"github.com/fencekit/fencekit/reinstall"
)

// Sizes used by Inventory.
const (
	GiB = 1 << 30
	TiB = 1 << 40
)

// Inventory returns a typical machine's disks: an OS disk sda (SSD, serial
// OS-1) with an EFI partition, a root partition holding /etc/metal and a
// /var/lib partition; a data disk sdb (HDD, serial DATA-1) with a
// whole-disk XFS; a data disk nvme0n1 (serial DATA-2) with an LVM physical
// volume.
func Inventory() reinstall.Inventory {
	return reinstall.Inventory{Disks: []reinstall.Disk{
		{Name: "sda", Serial: "OS-1", Size: 240 * GiB, Type: reinstall.DiskSSD, Partitions: []reinstall.Partition{
			{Name: "sda1", Size: GiB / 2, Filesystem: "vfat", Label: "efi"},
			{Name: "sda2", Size: 50 * GiB, Filesystem: "ext4", Label: "root", EtcMetal: true},
			{Name: "sda3", Size: 180 * GiB, Filesystem: "ext4", Label: "varlib"},
		}},
		{Name: "sdb", Serial: "DATA-1", Size: 4 * TiB, Type: reinstall.DiskHDD, Filesystem: "xfs"},
		{Name: "nvme0n1", Serial: "DATA-2", Size: 2 * TiB, Type: reinstall.DiskNVMe, Partitions: []reinstall.Partition{
			{Name: "nvme0n1p1", Size: 2 * TiB, Filesystem: "LVM2_member"},
		}},
	}}
}

// Machine returns an allocated machine with Inventory, running image,
// booting from disk.
func Machine(id, image string) reinstall.Machine {
	return reinstall.Machine{
		ID:        id,
		Inventory: Inventory(),
		Allocation: &reinstall.Allocation{
			Image: image, Project: "p1", Name: "worker", Hostname: id,
			Networks: []string{"internet", "tenant-1"}, SSHPublicKeys: []string{"ssh-ed25519 AAAA"},
		},
		BootOrder: reinstall.BootDisk,
	}
}

// Images returns a catalog with "ubuntu-22.04", "ubuntu-24.04" and
// "debian-12", plus "revoked-1" which is revoked.
func Images() *reinstall.MemImages {
	return reinstall.NewMemImages(
		reinstall.Image{ID: "ubuntu-22.04"}, reinstall.Image{ID: "ubuntu-24.04"}, reinstall.Image{ID: "debian-12"},
		reinstall.Image{ID: "revoked-1", Revoked: true},
	)
}
