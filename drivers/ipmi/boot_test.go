package ipmi

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// The boot device set through the driver, read back by ipmitool (the
// reference client) from OpenIPMI's ipmi_sim: the boot flags' device
// selector, for the next boot only.
func TestBootDeviceIPMISim(t *testing.T) {
	ipmitool := ipmisim.RequireTool(t, "ipmitool", "ipmitool")
	sim, p := simPeer(t, ipmisim.SimOptions{Password: secret})
	d := p.open(t, nil)
	bootparam := func() string {
		out, err := exec.CommandContext(ctx(t), ipmitool, "-I", "lanplus", "-C", "3", "-H", ipmisim.Host, "-p", fmt.Sprint(sim.Port),
			"-U", sim.User, "-P", sim.Password, "chassis", "bootparam", "get", "5").CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	for _, tc := range []struct {
		dev      fence.BootDevice
		selector string // as ipmitool prints it
		sim      string // what ipmi_sim hands its chassis control
	}{
		{fence.BootPXE, "Boot Device Selector : Force PXE", "pxe"},
		{fence.BootCD, "Boot Device Selector : Force Boot from CD/DVD", "cdrom"},
		{fence.BootBIOS, "Boot Device Selector : Force Boot into BIOS Setup", "bios"},
		{fence.BootDisk, "Boot Device Selector : Force Boot from default Hard-Drive", "default"},
	} {
		t.Run(string(tc.dev), func(t *testing.T) {
			require.NoError(t, fence.SetBootDevice(ctx(t), method(d, "bmc"), tc.dev))
			out := bootparam()
			assert.Contains(t, out, tc.selector)
			assert.Contains(t, out, "Options apply to only next boot")
			assert.Equal(t, tc.sim, sim.BootDevice())
		})
	}
	// boot_mode=uefi: ipmi_sim keeps only the device selector of the boot
	// flags (OpenIPMI's lanserv hands its chassis control the selector
	// alone), so the EFI boot type does not hold: the read back says so,
	// and the boot device is not reported set.
	efi := p.open(t, func(o *Options) { o.UEFI = true })
	err := fence.SetBootDevice(ctx(t), method(efi, "bmc"), fence.BootPXE)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the BMC took the boot device Force PXE (BIOS EFI boot) but reads back Force PXE (BIOS PC Compatible (legacy) boot)")
	assert.Contains(t, bootparam(), "BIOS PC Compatible (legacy) boot")

	// Then a verified power cycle through the fence engine, as the
	// reinstall flow does after setting PXE.
	require.NoError(t, fence.SetBootDevice(ctx(t), method(d, "bmc"), fence.BootPXE))
	res, err := fence.Do(ctx(t), method(d, "bmc"), fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Contains(t, bootparam(), "Force PXE", "a power cycle does not clear the override in the simulator; a real BIOS does on boot")
	assert.NotContains(t, fmt.Sprint(d), secret)
}

// go-ipmi's reference BMC keeps the boot flags too: every device is set
// and read back.
func TestBootDeviceGoBMC(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	efi := p.open(t, func(o *Options) { o.UEFI = true })
	for _, b := range []fence.BootDevice{fence.BootPXE, fence.BootDisk, fence.BootCD, fence.BootBIOS} {
		require.NoError(t, fence.SetBootDevice(ctx(t), method(d, "bmc"), b), b)
		require.NoError(t, fence.SetBootDevice(ctx(t), method(efi, "bmc"), b), "%s, EFI", b)
	}
	// The EFI boot type as ipmitool reads it from this BMC.
	ipmitool := ipmisim.RequireTool(t, "ipmitool", "ipmitool")
	require.NoError(t, fence.SetBootDevice(ctx(t), method(efi, "bmc"), fence.BootPXE))
	out, err := exec.CommandContext(ctx(t), ipmitool, "-I", "lanplus", "-C", "3", "-H", ipmisim.Host, "-p", fmt.Sprint(g.Port),
		"-U", g.User, "-P", g.Password, "chassis", "bootparam", "get", "5").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "BIOS EFI boot")
	assert.Contains(t, string(out), "Force PXE")
	err = fence.SetBootDevice(ctx(t), method(d, "bmc"), "floppy")
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrConfig)
	assert.True(t, fence.IsNotDone(err))
	assert.Contains(t, err.Error(), "node node-1, method bmc")
}
