package reinstall_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/fencekit/fencekit/reinstall"
)

func FuzzParseInventory(f *testing.F) {
	for _, seed := range []string{
		goodInventory,
		`{}`,
		`{"disks":[]}`,
		`{"disks":null}`,
		`{"disks":[{"name":"sda","size":1,"type":"ssd","removable":false}]}`,
		`{"disks":[{"name":"sda","size":10,"type":"hdd","removable":true,"partitions":[{"name":"sda1","size":5,"fstype":"ext4","etcMetal":true}]}]}`,
		`{"disks":[{"name":"sda","size":10,"type":"hdd","removable":false,"partitions":[{"name":"sda1","size":5,"fstype":"ext4","etcMetal":true,"mountpoint":"/"}]},` +
			`{"name":"sdb","size":10,"type":"ssd","removable":false,"fstype":"xfs","etcMetal":true}]}`,
		`{"disks":[{"name":"nvme0n1","serial":"X","size":10,"type":"nvme","removable":false,"partitions":[{"name":"nvme0n1p1","size":5,"fstype":"xfs","etcMetal":true}]},` +
			`{"name":"sda","serial":"X","size":10,"type":"ssd","removable":false}]}`,
		`{"disks":[{"name":"sda","size":1,"type":"ssd","removable":false,"name":"sdb"}]}`,
		`{"Disks":[]}`,
		`{"disks":[{"name":"sda","size":1e3,"type":"ssd","removable":false}]}`,
		`{"disks":[{"name":"sda","size":18446744073709551615,"type":"ssd","removable":false,"partitions":[{"name":"sda1","size":18446744073709551615},{"name":"sda2","size":1}]}]}`,
		"{\"disks\":[{\"name\":\"sda\\u0000\",\"size\":1,\"type\":\"ssd\",\"removable\":false}]}",
		`{"disks":[{"name":"sda","size":1,"type":"ssd","removable":false}]} `,
		`[{"name":"sda"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := reinstall.ParseInventory(data)
		if err != nil {
			if code, _ := reinstall.Code(err); code != "invalid_inventory" {
				t.Fatalf("error %v has code %s", err, code)
			}
			return
		}
		if err := inv.Validate(); err != nil {
			t.Fatalf("parsed, but invalid: %v", err)
		}
		b, err := json.Marshal(inv)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := reinstall.ParseInventory(b)
		if err != nil {
			t.Fatalf("the marshalled inventory does not parse: %v\n%s", err, b)
		}
		if string(mustJSON(t, again)) != string(b) {
			t.Fatalf("no round trip:\n%s\n%s", b, mustJSON(t, again))
		}

		det, derr := reinstall.DetectPrimaryDisk(inv)
		rev := inv.Clone()
		slices.Reverse(rev.Disks)
		det2, derr2 := reinstall.DetectPrimaryDisk(rev)
		if det != det2 || (derr == nil) != (derr2 == nil) || (derr != nil && derr.Error() != derr2.Error()) {
			t.Fatalf("detection depends on the order: %v %v / %v %v", det, derr, det2, derr2)
		}
		if derr != nil {
			if code, _ := reinstall.Code(derr); code != "no_primary_disk" && code != "ambiguous_primary_disk" {
				t.Fatalf("detection error %v has code %s", derr, code)
			}
			return
		}
		holders := 0
		for _, d := range inv.Disks {
			if d.HoldsEtcMetal() {
				holders++
			}
			if d.Name != det.Disk.Name {
				continue
			}
			if d.Removable {
				t.Fatalf("detected a removable disk")
			}
			ok := false
			for _, p := range d.Partitions {
				ok = ok || (p.Name == det.Partition && p.EtcMetal && p.Filesystem.IsRoot())
			}
			if !ok {
				t.Fatalf("partition %s does not hold /etc/metal in a root filesystem", det.Partition)
			}
		}
		if holders != 1 {
			t.Fatalf("detected a disk while %d disks hold /etc/metal", holders)
		}
		for _, intact := range []bool{true, false} {
			o := reinstall.Order{Kind: reinstall.OrderReinstall, Machine: "m1", Generation: 1, Image: "x", PrimaryDisk: det.Disk, Attempt: 1, DiskIntact: intact}
			plan, err := reinstall.PlanWipe(inv, o)
			if err != nil || len(plan.Disks) != 1 || plan.Disks[0] != det.Disk {
				t.Fatalf("wipe plan %v, %v; want only %v", plan, err, det.Disk)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecodeRequestBody(f *testing.F) {
	for _, seed := range []string{
		`{"image":"ubuntu-24.04"}`, `{"image":""}`, `{}`, `{"image":1}`, `{"image":"a","image":"b"}`,
		`{"image":"a","hostname":"b"}`, `{"Image":"a"}`, `{"image":"a"}x`, `[]`, ``, `{"image":"\u00e9"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		image, err := reinstall.DecodeRequestBody(body)
		if err != nil {
			switch code, _ := reinstall.Code(err); code {
			case "bad_request", "other_attributes", "invalid_image":
			default:
				t.Fatalf("error %v has code %s", err, code)
			}
			return
		}
		if image == "" {
			t.Fatal("accepted an empty image")
		}
		var members map[string]any
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		if len(members) != 1 || members["image"] != image {
			t.Fatalf("accepted %s as image %q", body, image)
		}
	})
}
