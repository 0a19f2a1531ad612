package reinstall_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

const goodInventory = `{"disks": [
  {"name": "sda", "serial": "S4EVNX0N", "size": 240057409536, "type": "ssd", "removable": false,
   "partitions": [
     {"name": "sda1", "size": 536870912, "fstype": "vfat", "label": "efi"},
     {"name": "sda2", "size": 239519497728, "fstype": "ext4", "label": "root", "etcMetal": true}]},
  {"name": "sdb", "size": 4000787030016, "type": "hdd", "removable": false, "fstype": "xfs"},
  {"name": "nvme0n1", "size": 1000204886016, "type": "nvme", "removable": false,
   "partitions": [{"name": "nvme0n1p1", "size": 1000204886016, "fstype": null}]}]}`

func TestParseInventory(t *testing.T) {
	inv, err := reinstall.ParseInventory([]byte(goodInventory))
	require.NoError(t, err)
	require.Len(t, inv.Disks, 3)
	assert.Equal(t, reinstall.Disk{Name: "sda", Serial: "S4EVNX0N", Size: 240057409536, Type: reinstall.DiskSSD, Partitions: []reinstall.Partition{
		{Name: "sda1", Size: 536870912, Filesystem: "vfat", Label: "efi"},
		{Name: "sda2", Size: 239519497728, Filesystem: "ext4", Label: "root", EtcMetal: true},
	}}, inv.Disks[0])
	assert.Equal(t, reinstall.Filesystem("xfs"), inv.Disks[1].Filesystem)
	assert.Equal(t, reinstall.DiskNVMe, inv.Disks[2].Type)

	// It round-trips.
	b, err := json.Marshal(inv)
	require.NoError(t, err)
	again, err := reinstall.ParseInventory(b)
	require.NoError(t, err)
	assert.Equal(t, inv, again)

	empty, err := reinstall.ParseInventory([]byte(`{}`))
	require.NoError(t, err)
	assert.Empty(t, empty.Disks)
}

func TestParseInventoryRefusals(t *testing.T) {
	disk := func(members string) string {
		return `{"disks":[{"name":"sda","size":100,"type":"ssd","removable":false` + members + `}]}`
	}
	part := func(members string) string {
		return disk(`,"partitions":[{"name":"sda1","size":10` + members + `}]`)
	}
	for name, tc := range map[string]struct{ in, field, msg string }{
		"empty":                {``, "inventory.", "empty input"},
		"not an object":        {`[]`, "inventory.", "not a JSON object"},
		"trailing data":        {`{} {}`, "inventory.", "data after"},
		"trailing garbage":     {`{} x`, "inventory.", "invalid character"},
		"invalid UTF-8":        {"{\"disks\":[{\"name\":\"s\xffa\"}]}", "inventory.", "UTF-8"},
		"unknown member":       {`{"disk":[]}`, "inventory.", `unknown member "disk"`},
		"case variant":         {disk(`,"Serial":"x"`), "inventory.", `unknown member "Serial"`},
		"member misplaced":     {disk(`,"label":"x"`), "inventory.", `unknown field "label"`},
		"duplicate member":     {part(`,"etcMetal":false,"etcMetal":true`), "inventory.", `"etcMetal" appears twice`},
		"too deep":             {disk(`,"partitions":[{"name":"sda1","size":1,"label":[[1]]}]`), "inventory.", "nested deeper"},
		"missing name":         {`{"disks":[{"size":1,"type":"ssd","removable":false}]}`, "inventory.disks[0].name", "missing"},
		"null name":            {`{"disks":[{"name":null,"size":1,"type":"ssd","removable":false}]}`, "inventory.disks[0].name", "missing"},
		"missing size":         {`{"disks":[{"name":"sda","type":"ssd","removable":false}]}`, "inventory.disks[0].size", "missing"},
		"missing type":         {`{"disks":[{"name":"sda","size":1,"removable":false}]}`, "inventory.disks[0].type", "missing"},
		"missing removable":    {`{"disks":[{"name":"sda","size":1,"type":"ssd"}]}`, "inventory.disks[0].removable", "missing"},
		"null disk":            {`{"disks":[null]}`, "inventory.disks[0].name", "missing"},
		"bad type":             {`{"disks":[{"name":"sda","size":1,"type":"SSD","removable":false}]}`, "inventory.disks[0].type", "not hdd, ssd or nvme"},
		"negative size":        {`{"disks":[{"name":"sda","size":-1,"type":"ssd","removable":false}]}`, "inventory.", "cannot unmarshal"},
		"float size":           {`{"disks":[{"name":"sda","size":1.5,"type":"ssd","removable":false}]}`, "inventory.", "cannot unmarshal"},
		"size as string":       {`{"disks":[{"name":"sda","size":"1","type":"ssd","removable":false}]}`, "inventory.", "cannot unmarshal"},
		"zero size":            {`{"disks":[{"name":"sda","size":0,"type":"ssd","removable":false}]}`, "inventory.disks[0].size", "size 0"},
		"removable as string":  {`{"disks":[{"name":"sda","size":1,"type":"ssd","removable":"no"}]}`, "inventory.", "cannot unmarshal"},
		"bad disk name":        {`{"disks":[{"name":"/dev/sda","size":1,"type":"ssd","removable":false}]}`, "inventory.disks[0].name", "not a kernel disk name"},
		"duplicate disk":       {`{"disks":[{"name":"sda","size":1,"type":"ssd","removable":false},{"name":"sda","size":1,"type":"ssd","removable":false}]}`, "inventory.disks[1].name", "already used"},
		"duplicate serial":     {`{"disks":[{"name":"sda","serial":"X","size":1,"type":"ssd","removable":false},{"name":"sdb","serial":"X","size":1,"type":"ssd","removable":false}]}`, "inventory.disks[1].serial", "already used"},
		"bad serial":           {disk(`,"serial":"a b"`), "inventory.disks[0].serial", "printable token"},
		"partition of another": {disk(`,"partitions":[{"name":"sdb1","size":1}]`), "inventory.disks[0].partitions[0].name", "not a partition of disk sda"},
		"partition zero":       {disk(`,"partitions":[{"name":"sda0","size":1}]`), "inventory.disks[0].partitions[0].name", "not a partition"},
		"duplicate partition":  {disk(`,"partitions":[{"name":"sda1","size":1},{"name":"sda1","size":1}]`), "inventory.disks[0].partitions[1].name", "already used"},
		"partition missing":    {disk(`,"partitions":[{"size":1}]`), "inventory.disks[0].partitions[0].name", "missing"},
		"partitions overflow":  {disk(`,"partitions":[{"name":"sda1","size":60},{"name":"sda2","size":60}]`), "inventory.disks[0].partitions[1].size", "do not fit"},
		"etcMetal without fs":  {part(`,"etcMetal":true`), "inventory.disks[0].partitions[0].etcMetal", "no filesystem"},
		"bad fstype":           {part(`,"fstype":"ext 4"`), "inventory.disks[0].partitions[0].fstype", "not a token"},
		"relative mount":       {part(`,"fstype":"ext4","mountpoint":"var"`), "inventory.disks[0].partitions[0].mountpoint", "clean absolute"},
		"unclean mount":        {part(`,"fstype":"ext4","mountpoint":"/var/"`), "inventory.disks[0].partitions[0].mountpoint", "clean absolute"},
		"mount without fs":     {part(`,"mountpoint":"/var"`), "inventory.disks[0].partitions[0].mountpoint", "no filesystem"},
		"label control char":   {part(`,"label":"a\u0007"`), "inventory.disks[0].partitions[0].label", "printable"},
		"fs and partitions":    {disk(`,"fstype":"xfs","partitions":[{"name":"sda1","size":1}]`), "inventory.disks[0].fstype", "both"},
		"two roots mounted": {`{"disks":[{"name":"sda","size":9,"type":"ssd","removable":false,"fstype":"ext4","mountpoint":"/"},` +
			`{"name":"sdb","size":9,"type":"ssd","removable":false,"fstype":"ext4","mountpoint":"/"}]}`, "inventory.disks[1].mountpoint", "second filesystem mounted at /"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := reinstall.ParseInventory([]byte(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, reinstall.ErrInvalidInventory)
			var e *reinstall.Error
			require.True(t, errors.As(err, &e), "%T", err)
			assert.True(t, strings.HasPrefix(e.Field, tc.field), "field %q, want prefix %q", e.Field, tc.field)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestParseInventoryLimits(t *testing.T) {
	big := `{"disks":[` + strings.Repeat(" ", reinstall.MaxInventoryBytes) + `]}`
	_, err := reinstall.ParseInventory([]byte(big))
	assert.ErrorIs(t, err, reinstall.ErrInvalidInventory)

	var b strings.Builder
	b.WriteString(`{"disks":[`)
	for i := range reinstall.MaxDisks + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"d` + itoa(i) + `","size":1,"type":"ssd","removable":false}`)
	}
	b.WriteString(`]}`)
	_, err = reinstall.ParseInventory([]byte(b.String()))
	require.ErrorIs(t, err, reinstall.ErrInvalidInventory)
	assert.Contains(t, err.Error(), "more than 256")
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestValidateCatchesHandBuiltInventories(t *testing.T) {
	inv := reinstalltest.Inventory()
	require.NoError(t, inv.Validate())
	inv.Disks[1].Type = reinstall.DiskTypeUnknown
	assert.ErrorIs(t, inv.Validate(), reinstall.ErrInvalidInventory)
}

func TestDiskTypeText(t *testing.T) {
	for _, ty := range []reinstall.DiskType{reinstall.DiskHDD, reinstall.DiskSSD, reinstall.DiskNVMe} {
		b, err := ty.MarshalText()
		require.NoError(t, err)
		var back reinstall.DiskType
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, ty, back)
	}
	_, err := reinstall.DiskTypeUnknown.MarshalText()
	assert.Error(t, err)
	assert.Equal(t, "DiskType(9)", reinstall.DiskType(9).String())
}
