package ipmi

import (
	"context"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
)

const (
	opSetBoot = "Set System Boot Options"
	opGetBoot = "Get System Boot Options"
)

// bootSelectors maps boot devices to the boot flags' device selector.
var bootSelectors = map[fence.BootDevice]types.BootDeviceSelector{
	fence.BootPXE:  types.BootDeviceSelectorForcePXE,
	fence.BootDisk: types.BootDeviceSelectorForceHardDrive,
	fence.BootCD:   types.BootDeviceSelectorForceCDROM,
	fence.BootBIOS: types.BootDeviceSelectorForceBIOSSetup,
}

// SetBootDevice sets the boot flags (Set System Boot Options, parameter 5)
// for the next boot only, as `ipmitool chassis bootdev pxe` does: valid,
// not persistent, the PC-compatible boot type (EFI with Options.UEFI, as
// options=efiboot), the device forced. It then reads the flags back (Get
// System Boot Options) and fails unless they name the device and the boot
// type. Sending the command twice (go-ipmi's retransmission) sets the
// same flags, so no guard is needed.
func (d *Device) SetBootDevice(ctx context.Context, plug string, b fence.BootDevice) error {
	if err := d.checkPlug(plug); err != nil {
		return fence.NotDone(err)
	}
	sel, ok := bootSelectors[b]
	if !ok {
		return fence.NotDone(d.fail(opSetBoot, fmt.Errorf("%w: boot device %q", fence.ErrUnsupported, b)))
	}
	typ := types.BIOSBootTypeLegacy
	if d.o.UEFI {
		typ = types.BIOSBootTypeEFI
	}
	err := d.call(ctx, opSetBoot, false, func(ctx context.Context, c *client.Client) error {
		return c.SetBootDevice(ctx, sel, typ, false)
	})
	if err != nil {
		return err
	}
	flags := &types.BootOptionParam_BootFlags{}
	err = d.call(ctx, opGetBoot, true, func(ctx context.Context, c *client.Client) error {
		return c.GetSystemBootOptionsParamFor(ctx, flags)
	})
	if err != nil {
		return err
	}
	if flags.BootDeviceSelector != sel || flags.BIOSBootType != typ {
		return d.fail(opGetBoot, fmt.Errorf("the BMC took the boot device %s (%s) but reads back %s (%s)", sel, typ, flags.BootDeviceSelector, flags.BIOSBootType))
	}
	return nil
}

var _ fence.BootSetter = (*Device)(nil)
