package reinstall_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

func TestDetectPrimaryDisk(t *testing.T) {
	base := reinstalltest.Inventory
	for name, tc := range map[string]struct {
		edit      func(inv *reinstall.Inventory)
		want      string // the primary disk's name, or ""
		partition string
		err       error
		msg       string
	}{
		"typical machine": {edit: func(*reinstall.Inventory) {}, want: "sda", partition: "sda2"},
		"no disk holds /etc/metal": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[0].Partitions[1].EtcMetal = false },
			err:  reinstall.ErrNoPrimaryDisk, msg: "no disk holds /etc/metal (3 disks)",
		},
		"no disks": {
			edit: func(inv *reinstall.Inventory) { inv.Disks = nil },
			err:  reinstall.ErrNoPrimaryDisk,
		},
		"a data disk holds /etc/metal too": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[1].EtcMetal = true },
			err:  reinstall.ErrAmbiguousPrimaryDisk, msg: "disks sda, sdb all hold /etc/metal",
		},
		"a data disk holds /etc/metal on a non-root filesystem": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[2].Partitions[0].Filesystem = "vfat"
				inv.Disks[2].Partitions[0].EtcMetal = true
			},
			err: reinstall.ErrAmbiguousPrimaryDisk, msg: "nvme0n1, sda",
		},
		"a removable stick holds /etc/metal too": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks = append(inv.Disks, reinstall.Disk{Name: "sdc", Size: 16 * reinstalltest.GiB, Type: reinstall.DiskSSD, Removable: true,
					Partitions: []reinstall.Partition{{Name: "sdc1", Size: reinstalltest.GiB, Filesystem: "ext4", EtcMetal: true}}})
			},
			err: reinstall.ErrAmbiguousPrimaryDisk, msg: "sda, sdc",
		},
		"the only holder is removable": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[0].Removable = true },
			err:  reinstall.ErrNoPrimaryDisk, msg: "the only disk holding /etc/metal, sda, is removable",
		},
		"/etc/metal only on the EFI partition": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[0].Partitions[1].EtcMetal = false
				inv.Disks[0].Partitions[0].EtcMetal = true
			},
			err: reinstall.ErrNoPrimaryDisk, msg: "only outside a root filesystem partition",
		},
		"/etc/metal on a whole-disk filesystem": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[0].Partitions[1].EtcMetal = false
				inv.Disks[1].EtcMetal = true
			},
			err: reinstall.ErrNoPrimaryDisk, msg: "sdb holds /etc/metal only outside",
		},
		"root mounted from another disk": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[1].MountPoint = "/" },
			err:  reinstall.ErrAmbiguousPrimaryDisk, msg: "mounted from sdb, but /etc/metal is in sda2",
		},
		"root mounted from another disk's partition": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[2].Partitions[0].Filesystem = "ext4"
				inv.Disks[2].Partitions[0].MountPoint = "/"
			},
			err: reinstall.ErrAmbiguousPrimaryDisk, msg: "mounted from nvme0n1p1",
		},
		"root mounted from the primary disk": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[0].Partitions[1].MountPoint = "/" },
			want: "sda", partition: "sda2",
		},
		"root mounted from the varlib partition": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[0].Partitions[2].MountPoint = "/" },
			err:  reinstall.ErrAmbiguousPrimaryDisk, msg: "mounted from sda3, but /etc/metal is in sda2",
		},
		"mount points, but no root": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[1].MountPoint = "/var/lib/data" },
			err:  reinstall.ErrAmbiguousPrimaryDisk, msg: "no root filesystem on its disks",
		},
		"running OS inventory": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[0].Partitions[0].MountPoint = "/boot/efi"
				inv.Disks[0].Partitions[1].MountPoint = "/"
				inv.Disks[0].Partitions[2].MountPoint = "/var/lib"
				inv.Disks[1].MountPoint = "/var/lib/data"
			},
			want: "sda", partition: "sda2",
		},
		"A/B root partitions, B mounted": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[0].Partitions[2].EtcMetal = true
				inv.Disks[0].Partitions[2].MountPoint = "/"
			},
			want: "sda", partition: "sda3",
		},
		"A/B root partitions": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[0].Partitions[2].EtcMetal = true },
			want: "sda", partition: "sda2",
		},
		"xfs root on nvme": {
			edit: func(inv *reinstall.Inventory) {
				inv.Disks[0].Partitions[1].EtcMetal = false
				inv.Disks[2].Partitions[0].Filesystem = "xfs"
				inv.Disks[2].Partitions[0].EtcMetal = true
			},
			want: "nvme0n1", partition: "nvme0n1p1",
		},
		"invalid inventory": {
			edit: func(inv *reinstall.Inventory) { inv.Disks[1].Name = "sda" },
			err:  reinstall.ErrInvalidInventory,
		},
	} {
		t.Run(name, func(t *testing.T) {
			inv := base()
			tc.edit(&inv)
			det, err := reinstall.DetectPrimaryDisk(inv)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), tc.msg)
				for _, other := range []error{reinstall.ErrNoPrimaryDisk, reinstall.ErrAmbiguousPrimaryDisk, reinstall.ErrInvalidInventory} {
					if other != tc.err {
						assert.NotErrorIs(t, err, other)
					}
				}
				assert.Zero(t, det)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, det.Disk.Name)
			assert.Equal(t, tc.partition, det.Partition)
			// The same answer whatever the order of disks and partitions.
			r := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				shuffled := inv.Clone()
				r.Shuffle(len(shuffled.Disks), func(i, j int) { shuffled.Disks[i], shuffled.Disks[j] = shuffled.Disks[j], shuffled.Disks[i] })
				for k := range shuffled.Disks {
					p := shuffled.Disks[k].Partitions
					r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
				}
				again, err := reinstall.DetectPrimaryDisk(shuffled)
				require.NoError(t, err)
				assert.Equal(t, det, again)
			}
		})
	}
}

func TestDetectPrimaryDiskErrorsAreDeterministic(t *testing.T) {
	inv := reinstalltest.Inventory()
	inv.Disks[1].EtcMetal = true
	inv.Disks[2].Partitions[0].Filesystem = "ext4"
	inv.Disks[2].Partitions[0].EtcMetal = true
	_, first := reinstall.DetectPrimaryDisk(inv)
	require.ErrorIs(t, first, reinstall.ErrAmbiguousPrimaryDisk)
	inv.Disks[0], inv.Disks[2] = inv.Disks[2], inv.Disks[0]
	_, second := reinstall.DetectPrimaryDisk(inv)
	assert.Equal(t, first.Error(), second.Error())
	assert.Contains(t, first.Error(), "disks nvme0n1, sda, sdb all hold /etc/metal")
	var e *reinstall.Error
	require.True(t, errors.As(first, &e))
	assert.Equal(t, "primaryDisk", e.Field)
}

func TestPlanWipe(t *testing.T) {
	pin := reinstalltest.Inventory().Disks[0].Ref()
	order := func(intact bool) reinstall.Order {
		return reinstall.Order{Kind: reinstall.OrderReinstall, Machine: "m1", Generation: 1, Image: "ubuntu-24.04",
			PrimaryDisk: pin, Attempt: 1, DiskIntact: intact}
	}
	wiped := func(inv *reinstall.Inventory) { inv.Disks[0].Partitions = nil }
	renamed := func(inv *reinstall.Inventory) {
		// sda and sdb swap names at the next boot.
		inv.Disks[0].Name, inv.Disks[1].Name = "sdb", "sda"
		for i := range inv.Disks[0].Partitions {
			inv.Disks[0].Partitions[i].Name = "sdb" + inv.Disks[0].Partitions[i].Name[3:]
		}
	}
	for name, tc := range map[string]struct {
		order reinstall.Order
		edit  func(inv *reinstall.Inventory)
		want  string // the disk wiped, by its live name; "" for none
		err   error
	}{
		"intact, found by /etc/metal":      {order: order(true), want: "sda"},
		"names swapped, found by serial":   {order: order(true), edit: renamed, want: "sdb"},
		"intact, but /etc/metal is gone":   {order: order(true), edit: wiped, err: reinstall.ErrNoPrimaryDisk},
		"maybe wiped, /etc/metal still on": {order: order(false), want: "sda"},
		"maybe wiped, found by serial":     {order: order(false), edit: wiped, want: "sda"},
		"maybe wiped, renamed, by serial": {order: order(false), edit: func(inv *reinstall.Inventory) {
			renamed(inv)
			inv.Disks[0].Partitions = nil
		}, want: "sdb"},
		"another disk holds /etc/metal now": {order: order(true), edit: func(inv *reinstall.Inventory) {
			inv.Disks[0].Partitions[1].EtcMetal = false
			inv.Disks[1].EtcMetal = true
		}, err: reinstall.ErrNoPrimaryDisk},
		"another disk holds /etc/metal, maybe wiped": {order: order(false), edit: func(inv *reinstall.Inventory) {
			wiped(inv)
			inv.Disks[2].Partitions[0].Filesystem = "ext4"
			inv.Disks[2].Partitions[0].EtcMetal = true
		}, err: reinstall.ErrPrimaryDiskMismatch},
		"both hold /etc/metal":             {order: order(false), edit: func(inv *reinstall.Inventory) { inv.Disks[1].EtcMetal = true }, err: reinstall.ErrAmbiguousPrimaryDisk},
		"the pinned disk's serial changed": {order: order(true), edit: func(inv *reinstall.Inventory) { inv.Disks[0].Serial = "OS-2" }, err: reinstall.ErrPrimaryDiskMismatch},
		"the pinned disk's size changed":   {order: order(true), edit: func(inv *reinstall.Inventory) { inv.Disks[0].Size++ }, err: reinstall.ErrPrimaryDiskMismatch},
		"the pinned disk is gone, maybe wiped": {order: order(false), edit: func(inv *reinstall.Inventory) {
			inv.Disks = inv.Disks[1:]
		}, err: reinstall.ErrPrimaryDiskMismatch},
		"maybe wiped, now removable": {order: order(false), edit: func(inv *reinstall.Inventory) {
			wiped(inv)
			inv.Disks[0].Removable = true
		}, err: reinstall.ErrPrimaryDiskMismatch},
		"invalid live inventory, maybe wiped": {order: order(false), edit: func(inv *reinstall.Inventory) {
			wiped(inv)
			inv.Disks[2].Name = "sdb"
		}, err: reinstall.ErrInvalidInventory},
		"pin without serial, maybe wiped": {order: func() reinstall.Order {
			o := order(false)
			o.PrimaryDisk.Serial = ""
			return o
		}(), edit: func(inv *reinstall.Inventory) {
			wiped(inv)
			inv.Disks[0].Serial = ""
		}, err: reinstall.ErrPrimaryDiskMismatch},
		// The pinned disk has no serial and may have been wiped; after a
		// reboot the kernel names moved, and a data disk of the same size
		// and type carrying an old /etc/metal now has the pinned name:
		// refused, never wiped.
		"pin without serial, maybe wiped, a data disk with an old /etc/metal under its name": {order: func() reinstall.Order {
			o := order(false)
			o.PrimaryDisk.Serial = ""
			return o
		}(), edit: func(inv *reinstall.Inventory) {
			data := reinstall.Disk{Name: "sda", Size: inv.Disks[0].Size, Type: inv.Disks[0].Type,
				Partitions: []reinstall.Partition{{Name: "sda1", Size: 10 * reinstalltest.GiB, Filesystem: "ext4", EtcMetal: true}}}
			wipedPrimary := inv.Disks[0]
			wipedPrimary.Name, wipedPrimary.Serial, wipedPrimary.Partitions = "sdc", "", nil
			inv.Disks[0] = data
			inv.Disks = append(inv.Disks, wipedPrimary)
		}, err: reinstall.ErrPrimaryDiskMismatch},
		"pin without serial, intact, by name": {order: func() reinstall.Order {
			o := order(true)
			o.PrimaryDisk.Serial = ""
			return o
		}(), edit: func(inv *reinstall.Inventory) { inv.Disks[0].Serial = "" }, want: "sda"},
		"pin without serial, renamed": {order: func() reinstall.Order {
			o := order(true)
			o.PrimaryDisk.Serial = ""
			return o
		}(), edit: func(inv *reinstall.Inventory) {
			renamed(inv)
			inv.Disks[0].Serial, inv.Disks[1].Serial = "", ""
		}, err: reinstall.ErrPrimaryDiskMismatch},
		"boot local": {order: reinstall.Order{Kind: reinstall.OrderBootLocal, Machine: "m1"}},
		"halt":       {order: reinstall.Order{Kind: reinstall.OrderHalt, Machine: "m1"}},
		"malformed order": {order: func() reinstall.Order {
			o := order(true)
			o.PrimaryDisk = reinstall.DiskRef{}
			return o
		}(), err: reinstall.ErrNoPrimaryDisk},
	} {
		t.Run(name, func(t *testing.T) {
			inv := reinstalltest.Inventory()
			if tc.edit != nil {
				tc.edit(&inv)
			}
			plan, err := reinstall.PlanWipe(inv, tc.order)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Empty(t, plan.Disks)
				var e *reinstall.Error
				require.True(t, errors.As(err, &e))
				assert.Equal(t, "m1", e.Machine)
				return
			}
			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, plan.Disks)
				return
			}
			require.Len(t, plan.Disks, 1)
			assert.Equal(t, tc.want, plan.Disks[0].Name)
			if tc.order.PrimaryDisk.Serial != "" {
				assert.Equal(t, pin.Serial, plan.Disks[0].Serial, "always the pinned physical disk")
			}
			assert.Equal(t, pin.Size, plan.Disks[0].Size)
		})
	}
}

// FuzzPlanWipeShifted: the inventory the installer reads after a reboot,
// its kernel names shifted (a permutation), the primary disk perhaps wiped
// by an earlier attempt, serials perhaps lost, an old /etc/metal perhaps on
// a data disk of the primary's size and type. Whatever the fuzzer makes of
// it, a plan either refuses or wipes exactly the disk that was the primary.
func FuzzPlanWipeShifted(f *testing.F) {
	f.Add(uint8(0), false, false, false, false)
	f.Add(uint8(1), true, true, true, false)
	f.Add(uint8(5), true, false, true, true)
	f.Fuzz(func(t *testing.T, perm uint8, wiped, noSerial, oldEtcMetal, intact bool) {
		inv := reinstalltest.Inventory()
		// A fourth disk, a twin of the primary in size and type: the one
		// an old /etc/metal may sit on.
		inv.Disks = append(inv.Disks, reinstall.Disk{Name: "sdd", Serial: "DATA-3", Size: inv.Disks[0].Size, Type: inv.Disks[0].Type})
		pin := inv.Disks[0].Ref()
		if noSerial {
			pin.Serial = ""
			for i := range inv.Disks {
				inv.Disks[i].Serial = ""
			}
		}
		order := reinstall.Order{Kind: reinstall.OrderReinstall, Machine: "m1", Generation: 1, Image: "ubuntu-24.04",
			PrimaryDisk: pin, Attempt: 1, DiskIntact: intact && !wiped}
		if wiped {
			inv.Disks[0].Partitions = nil
		}
		if oldEtcMetal {
			inv.Disks[3].Partitions = []reinstall.Partition{{Name: "sdd1", Size: 10 * reinstalltest.GiB, Filesystem: "ext4", EtcMetal: true}}
		}
		// The kernel names move: a permutation of the four names.
		names := []string{"sda", "sdb", "nvme0n1", "sdd"}
		perms := [][4]int{{0, 1, 2, 3}, {3, 1, 2, 0}, {1, 0, 2, 3}, {3, 0, 2, 1}, {1, 3, 2, 0}, {0, 3, 2, 1}}
		p := perms[int(perm)%len(perms)]
		for i := range inv.Disks {
			old := inv.Disks[i].Name
			inv.Disks[i].Name = names[p[i]]
			for j := range inv.Disks[i].Partitions {
				inv.Disks[i].Partitions[j].Name = names[p[i]] + strings.TrimPrefix(inv.Disks[i].Partitions[j].Name, old)
			}
		}
		plan, err := reinstall.PlanWipe(inv, order)
		if err != nil {
			return
		}
		if len(plan.Disks) != 1 || plan.Disks[0].Name != inv.Disks[0].Name {
			t.Fatalf("the plan wipes %v, the primary is now %s (perm %v, wiped %v, no serial %v, old /etc/metal %v, intact %v)",
				plan.Disks, inv.Disks[0].Name, p, wiped, noSerial, oldEtcMetal, intact)
		}
	})
}
