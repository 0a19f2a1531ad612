package reinstall_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
)

// etcMetalIn returns a probe that says the named devices hold /etc/metal.
func etcMetalIn(names ...string) func(reinstall.LsblkDevice) (bool, error) {
	return func(d reinstall.LsblkDevice) (bool, error) {
		for _, n := range names {
			if d.Name == n || d.KName == n {
				return true, nil
			}
		}
		return false, nil
	}
}

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "lsblk", name))
	require.NoError(t, err)
	return b
}

// reinstallOrder is the order of a reinstall pinned to disk.
func reinstallOrder(disk reinstall.DiskRef) reinstall.Order {
	return reinstall.Order{Machine: "m1", Kind: reinstall.OrderReinstall, Image: "ubuntu-24.04", Generation: 1, Attempt: 1,
		PrimaryDisk: disk, DiskIntact: true}
}

// Samples in lsblk's --json --bytes --output-all format (util-linux 2.38
// fields and types, and 2.32's strings): an NVMe machine, root on software
// RAID, a multipath LUN, and an older lsblk. The primary disk rule and
// the root-only wipe plan run on each; no plan names a disk that holds
// data.
func TestParseLsblkSamples(t *testing.T) {
	t.Run("nvme", func(t *testing.T) {
		inv, err := reinstall.ParseLsblk(sample(t, "nvme.json"), reinstall.LsblkOptions{EtcMetal: etcMetalIn("nvme0n1p2")})
		require.NoError(t, err)
		require.Len(t, inv.Disks, 2)
		d := inv.Disks[0]
		assert.Equal(t, reinstall.DiskNVMe, d.Type)
		assert.Equal(t, "eui.36344630526012340025384100000001", d.Serial, "the WWN identifies the disk")
		assert.Equal(t, uint64(960197124096), d.Size)
		require.Len(t, d.Partitions, 2)
		assert.Equal(t, reinstall.Partition{Name: "nvme0n1p2", Size: 959658147840, Filesystem: "ext4", Label: "root", MountPoint: "/", EtcMetal: true}, d.Partitions[1])
		det, err := reinstall.DetectPrimaryDisk(inv)
		require.NoError(t, err)
		assert.Equal(t, "nvme0n1", det.Disk.Name)
		assert.Equal(t, "nvme0n1p2", det.Partition)
		plan, err := reinstall.PlanWipe(inv, reinstallOrder(det.Disk))
		require.NoError(t, err)
		assert.Equal(t, []reinstall.DiskRef{inv.Disks[0].Ref()}, plan.Disks, "the root disk only; the data disk nvme1n1 untouched")
	})
	t.Run("root on software RAID", func(t *testing.T) {
		inv, err := reinstall.ParseLsblk(sample(t, "raid.json"), reinstall.LsblkOptions{EtcMetal: etcMetalIn("sda1")})
		require.NoError(t, err)
		require.Len(t, inv.Disks, 2)
		assert.Equal(t, reinstall.DiskSSD, inv.Disks[0].Type)
		assert.Equal(t, reinstall.Filesystem("linux_raid_member"), inv.Disks[0].Partitions[1].Filesystem)
		_, err = reinstall.DetectPrimaryDisk(inv)
		require.Error(t, err, "/ lives on md0, beyond the disks' partitions: refused")
		assert.ErrorIs(t, err, reinstall.ErrAmbiguousPrimaryDisk)
		_, err = reinstall.PlanWipe(inv, reinstallOrder(inv.Disks[0].Ref()))
		require.Error(t, err)

		// Without mount points (the installer's view at boot), a stale
		// /etc/metal on sda1 would pass, but the RAID member beside it
		// refuses.
		for i := range inv.Disks {
			for j := range inv.Disks[i].Partitions {
				inv.Disks[i].Partitions[j].MountPoint = ""
			}
		}
		_, err = reinstall.DetectPrimaryDisk(inv)
		assert.ErrorIs(t, err, reinstall.ErrPrimaryDiskHoldsData)
		assert.Contains(t, err.Error(), "sda2 is a linux_raid_member")
	})
	t.Run("multipath", func(t *testing.T) {
		_, err := reinstall.ParseLsblk(sample(t, "multipath.json"), reinstall.LsblkOptions{EtcMetal: etcMetalIn("sda1")})
		require.Error(t, err)
		assert.ErrorIs(t, err, reinstall.ErrInvalidInventory)
		assert.Contains(t, err.Error(), "disk sdc is a path of multipath device mpatha")
	})
	t.Run("lsblk 2.32", func(t *testing.T) {
		inv, err := reinstall.ParseLsblk(sample(t, "old-2.32.json"), reinstall.LsblkOptions{EtcMetal: etcMetalIn("sda1")})
		require.NoError(t, err)
		require.Len(t, inv.Disks, 1, "the CD drive (rom) is no disk")
		d := inv.Disks[0]
		assert.Equal(t, reinstall.DiskHDD, d.Type, `rota "1"`)
		assert.Equal(t, "ZC1A2B3C", d.Serial)
		assert.Equal(t, uint64(4000787030016), d.Size)
		assert.Equal(t, "/", d.Partitions[0].MountPoint, "the single mountpoint column")
		det, err := reinstall.DetectPrimaryDisk(inv)
		require.NoError(t, err)
		assert.Equal(t, "sda", det.Disk.Name)
	})
	t.Run("not lsblk", func(t *testing.T) {
		for _, in := range []string{``, `{}`, `{"blockdevices":[{"name":"sda","type":"disk","size":"12G"}]}`, `[1]`} {
			_, err := reinstall.ParseLsblk([]byte(in), reinstall.LsblkOptions{})
			require.Error(t, err, in)
			assert.ErrorIs(t, err, reinstall.ErrInvalidInventory, in)
		}
	})
}

// This machine's own disks, as its lsblk reports them: every disk lsblk
// lists (of non-zero size) is in the inventory, and with no /etc/metal
// found, no disk is ever planned for a wipe.
func TestParseLsblkThisMachine(t *testing.T) {
	_, err := reinstall.ReadLsblk(t.Context(), reinstall.LsblkOptions{})
	require.NoError(t, err)

	out, err := exec.CommandContext(t.Context(), reinstall.LsblkCommand[0], reinstall.LsblkCommand[1:]...).Output()
	if err != nil {
		need(t, false, "lsblk failed: "+err.Error())
	}
	var raw struct {
		BlockDevices []struct {
			Name string          `json:"name"`
			Type string          `json:"type"`
			Size json.RawMessage `json:"size"`
		} `json:"blockdevices"`
	}
	require.NoError(t, json.Unmarshal(out, &raw))
	var want []string
	for _, d := range raw.BlockDevices {
		if d.Type == "disk" && string(d.Size) != "0" && string(d.Size) != `"0"` {
			want = append(want, d.Name)
		}
	}
	inv, err := reinstall.ParseLsblk(out, reinstall.LsblkOptions{})
	require.NoError(t, err, string(out))
	var got []string
	for _, d := range inv.Disks {
		got = append(got, d.Name)
	}
	assert.Equal(t, want, got)
	t.Logf("this machine: %d disks: %s", len(got), strings.Join(got, ", "))
	_, err = reinstall.DetectPrimaryDisk(inv)
	assert.ErrorIs(t, err, reinstall.ErrNoPrimaryDisk, "nothing probed for /etc/metal here")
}

// need skips t, or fails it with CI=true, when cond is false.
func need(t *testing.T, cond bool, why string) {
	t.Helper()
	if cond {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// loopDisk attaches an image with a GPT of the given partitions (sfdisk
// script lines) as a loop device with its partitions, and returns the
// device; detached when t ends. Machines without udev get the
// partitions' device nodes made here.
func loopDisk(t *testing.T, size string, table string) string {
	t.Helper()
	for _, tool := range []string{"losetup", "sfdisk", "partx", "mkfs.ext4", "debugfs", "blkid"} {
		_, err := exec.LookPath(tool)
		need(t, err == nil, tool+" is missing (util-linux, fdisk, e2fsprogs)")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	out, err := exec.Command("truncate", "-s", size, img).CombinedOutput()
	require.NoError(t, err, string(out))
	sf := exec.Command("sfdisk", "-q", img)
	sf.Stdin = strings.NewReader("label: gpt\n" + table)
	out, err = sf.CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command("losetup", "--find", "--show", "--partscan", img).CombinedOutput()
	need(t, err == nil, "no loop device: "+strings.TrimSpace(string(out)))
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	base := filepath.Base(dev)
	// The kernel scans the partitions; partx asks it again where the scan
	// is late. Bounded: 20 tries, 100 ms apart.
	for try := 0; try < 20; try++ {
		if _, err := os.Stat(filepath.Join("/sys/block", base, base+"p1")); err == nil {
			break
		}
		_ = exec.Command("partx", "--update", dev).Run()
		time.Sleep(100 * time.Millisecond)
	}
	_, err = os.Stat(filepath.Join("/sys/block", base, base+"p1"))
	need(t, err == nil, "the kernel did not scan the partitions of "+dev)
	for i := 1; ; i++ {
		part := fmt.Sprintf("%sp%d", base, i)
		mm, err := os.ReadFile(filepath.Join("/sys/block", base, part, "dev"))
		if err != nil {
			break
		}
		node := "/dev/" + part
		if _, err := os.Stat(node); err != nil {
			major, minor, _ := strings.Cut(strings.TrimSpace(string(mm)), ":")
			out, err := exec.Command("mknod", node, "b", major, minor).CombinedOutput()
			require.NoError(t, err, string(out))
			t.Cleanup(func() { _ = os.Remove(node) })
		}
	}
	return dev
}

// fillFromBlkid adds the filesystem type and label that lsblk reads from
// udev's database where a machine has none (containers): from libblkid,
// the library lsblk itself probes with, through blkid.
func fillFromBlkid(t *testing.T, out []byte) []byte {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out, &doc))
	var walk func(devs []any)
	walk = func(devs []any) {
		for _, x := range devs {
			d := x.(map[string]any)
			if d["fstype"] == nil && d["path"] != nil {
				for _, tag := range []string{"TYPE", "LABEL"} {
					v, err := exec.Command("blkid", "-o", "value", "-s", tag, d["path"].(string)).Output()
					if err == nil && len(strings.TrimSpace(string(v))) > 0 {
						d[map[string]string{"TYPE": "fstype", "LABEL": "label"}[tag]] = strings.TrimSpace(string(v))
					}
				}
			}
			if c, ok := d["children"].([]any); ok {
				walk(c)
			}
		}
	}
	walk(doc["blockdevices"].([]any))
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}

// A generated machine: two disks as loop devices, real GPTs and ext4
// filesystems, the OS disk's root holding /etc/metal (made with mkfs.ext4
// -d, probed with debugfs without mounting, as an installer can), the
// data disk's filesystem not. Real lsblk output of them parses; detection
// finds the OS disk; the wipe plan names it alone.
func TestParseLsblkGeneratedDisks(t *testing.T) {
	osDisk := loopDisk(t, "64M", "size=16MiB, name=boot\nname=root\n")
	dataDisk := loopDisk(t, "48M", "name=data\n")
	tree := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "etc", "metal"), 0o755))
	for _, fs := range []struct{ dev, label, from string }{
		{osDisk + "p1", "boot", ""}, {osDisk + "p2", "root", tree}, {dataDisk + "p1", "data", ""},
	} {
		args := []string{"-q", "-F", "-L", fs.label}
		if fs.from != "" {
			args = append(args, "-d", fs.from)
		}
		out, err := exec.Command("mkfs.ext4", append(args, fs.dev)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	args := append(append([]string{}, reinstall.LsblkCommand[1:]...), osDisk, dataDisk)
	out, err := exec.CommandContext(t.Context(), reinstall.LsblkCommand[0], args...).Output()
	require.NoError(t, err)
	out = fillFromBlkid(t, out)

	probed := map[string]bool{}
	probe := reinstall.EtcMetalDebugfs(t.Context())
	debugfs := func(d reinstall.LsblkDevice) (bool, error) {
		probed[d.KName] = true
		return probe(d)
	}
	inv, err := reinstall.ParseLsblk(out, reinstall.LsblkOptions{EtcMetal: debugfs, Loop: true})
	require.NoError(t, err, string(out))
	require.Len(t, inv.Disks, 2)
	osName, dataName := filepath.Base(osDisk), filepath.Base(dataDisk)
	assert.Equal(t, map[string]bool{osName + "p1": true, osName + "p2": true, dataName + "p1": true}, probed)
	det, err := reinstall.DetectPrimaryDisk(inv)
	require.NoError(t, err)
	assert.Equal(t, osName, det.Disk.Name)
	assert.Equal(t, osName+"p2", det.Partition)
	plan, err := reinstall.PlanWipe(inv, reinstallOrder(det.Disk))
	require.NoError(t, err)
	require.Len(t, plan.Disks, 1)
	assert.Equal(t, osName, plan.Disks[0].Name, "the data disk is never named")

	_, err = reinstall.ParseLsblk(out, reinstall.LsblkOptions{EtcMetal: debugfs})
	require.NoError(t, err)
	inv, _ = reinstall.ParseLsblk(out, reinstall.LsblkOptions{EtcMetal: debugfs})
	assert.Empty(t, inv.Disks, "loop devices are no disks on a machine")
}
