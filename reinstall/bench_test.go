package reinstall_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/installer"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// bigInventory has n disks with four partitions each; the first is the OS
// disk.
func bigInventory(n int) reinstall.Inventory {
	inv := reinstalltest.Inventory()
	for i := range n - len(inv.Disks) {
		name := fmt.Sprintf("vd%c%c", 'a'+i/26, 'a'+i%26)
		d := reinstall.Disk{Name: name, Serial: "D-" + name, Size: 4 * reinstalltest.TiB, Type: reinstall.DiskHDD}
		for k := 1; k <= 4; k++ {
			d.Partitions = append(d.Partitions, reinstall.Partition{Name: fmt.Sprintf("%s%d", name, k), Size: reinstalltest.TiB, Filesystem: "xfs", Label: "data"})
		}
		inv.Disks = append(inv.Disks, d)
	}
	return inv
}

func BenchmarkParseInventory(b *testing.B) {
	for _, n := range []int{3, 256} {
		data, err := json.Marshal(bigInventory(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("disks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := reinstall.ParseInventory(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDetectPrimaryDisk(b *testing.B) {
	for _, n := range []int{3, 256} {
		inv := bigInventory(n)
		b.Run(fmt.Sprintf("disks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reinstall.DetectPrimaryDisk(inv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStep(b *testing.B) {
	order := reinstall.Order{Kind: reinstall.OrderReinstall, Machine: "m1", Generation: 1, Image: "ubuntu-24.04",
		PrimaryDisk: reinstalltest.Inventory().Disks[0].Ref(), Attempt: 1, DiskIntact: true}
	inv := reinstalltest.Inventory()
	b.ReportAllocs()
	for b.Loop() {
		s := installer.NewState("m1", installer.Limits{})
		ev := installer.Event{Kind: installer.EventBoot}
		for !s.Phase.Terminal() {
			next, cmds, err := installer.Step(s, ev)
			if err != nil {
				b.Fatal(err)
			}
			s = next
			if len(cmds) == 0 {
				break
			}
			c := cmds[len(cmds)-1]
			ev = installer.Event{Kind: c.Kind.Event(), Order: order, Inventory: inv}
		}
	}
}
