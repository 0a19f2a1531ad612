package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// BootDevice is a device a machine can be told to boot from.
type BootDevice string

// The boot devices drivers know.
const (
	// BootPXE boots from the network (PXE), such as into an installer.
	BootPXE BootDevice = "pxe"
	// BootDisk boots from the machine's own disk.
	BootDisk BootDevice = "disk"
	// BootCD boots from a CD or DVD drive (a virtual one, for most BMCs).
	BootCD BootDevice = "cdrom"
	// BootBIOS stops in the firmware's setup.
	BootBIOS BootDevice = "bios"
)

// ParseBootDevice parses pxe, disk, cdrom or bios (any case).
func ParseBootDevice(s string) (BootDevice, error) {
	switch d := BootDevice(strings.ToLower(strings.TrimSpace(s))); d {
	case BootPXE, BootDisk, BootCD, BootBIOS:
		return d, nil
	}
	return "", fmt.Errorf("%q is not a boot device (want pxe, disk, cdrom or bios)", s)
}

// BootSetter is implemented by devices that can choose what the machine
// boots from at its next boot only: IPMI's Set System Boot Options (boot
// flags, not persistent), Redfish's Boot.BootSourceOverrideTarget with
// BootSourceOverrideEnabled Once. SetBootDevice returns once the device
// holds the override, read back where the protocol allows; the machine's
// next power on, cycle or reset boots from the device, the boots after it
// as before. A device that cannot boot from d returns an error wrapping
// ErrUnsupported.
type BootSetter interface {
	SetBootDevice(ctx context.Context, plug string, d BootDevice) error
}

// SetBootDevice sets the boot device of the method's machine for its next
// boot, with the method's IOTimeout, and returns an *Error naming node,
// method and device. A device without the capability is ErrUnsupported.
// It does not power anything: a verified reboot (Do with ActionReboot)
// then boots the machine from it.
func SetBootDevice(ctx context.Context, m *Method, d BootDevice) error {
	r := &run{m: m, o: m.Options.withDefaults()}
	wrap := func(err error) error {
		return &Error{Node: m.Node, Method: m.Name, Driver: m.Driver, Host: m.Host, Plug: m.Plug, Op: "boot device " + string(d), Err: err}
	}
	if _, err := ParseBootDevice(string(d)); err != nil {
		return wrap(NotDone(fmt.Errorf("%w: %w", ErrConfig, err)))
	}
	if m.Device == nil {
		return wrap(NotDone(errors.New("method has no device")))
	}
	b, ok := m.Device.(BootSetter)
	if !ok {
		return wrap(NotDone(fmt.Errorf("%w: setting the boot device", ErrUnsupported)))
	}
	if err := r.call(ctx, func(c context.Context) error { return b.SetBootDevice(c, m.Plug, d) }); err != nil {
		return wrap(err)
	}
	return nil
}
