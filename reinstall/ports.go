package reinstall

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencekit/fencekit/fence"
)

// MachineStore persists machine records with optimistic concurrency. The
// host application implements it over its database; MemStore is an
// in-memory one.
type MachineStore interface {
	// Get returns a copy of the machine's record; an error wrapping
	// ErrMachineNotFound when there is none.
	Get(ctx context.Context, id string) (Machine, error)
	// Update stores m if m.Version is the stored record's version, and
	// returns the stored record with its new version. A changed version is
	// an error wrapping ErrConflict, a missing record ErrMachineNotFound.
	Update(ctx context.Context, m Machine) (Machine, error)
	// List returns a copy of every record, for Service.Expire.
	List(ctx context.Context) ([]Machine, error)
}

// Images is the image catalog.
type Images interface {
	// Image returns the image with this ID; an error wrapping
	// ErrUnknownImage when the catalog has none.
	Image(ctx context.Context, id string) (Image, error)
}

// BootOrder sets what a machine boots from first (the BMC's boot device).
type BootOrder interface {
	SetBootOrder(ctx context.Context, machineID string, d BootDevice) error
}

// SwitchPorts moves a machine's switch ports between the PXE network and
// the tenant's VRF.
type SwitchPorts interface {
	SetNetwork(ctx context.Context, machineID string, n Network) error
}

// Power reboots a machine. A nil error means the reboot was verified.
// FencePower implements it through the fence core.
type Power interface {
	Reboot(ctx context.Context, machineID string) error
}

// FencePower reboots machines through the fence core: fence.Do with
// fence.ActionReboot on the machine's method, so that any fence driver can
// reboot a machine and the reboot is verified by the device.
type FencePower struct {
	// Method returns the fence method that powers the machine.
	Method func(machineID string) (*fence.Method, error)
}

// Reboot does a verified reboot. It fails when the method has no device,
// always does another action (such as off), when fence.Do fails, or when
// the machine was verified off but not powered on again (Result.OnErr):
// the machine then stays off and did not boot the installer.
func (p FencePower) Reboot(ctx context.Context, machineID string) error {
	m, err := methodOf(p.Method, machineID)
	if err != nil {
		return err
	}
	if m.Action != fence.ActionNone && m.Action != fence.ActionReboot {
		return fmt.Errorf("fence method %s always does %v, not a reboot", m.Name, m.Action)
	}
	res, err := fence.Do(ctx, m, fence.ActionReboot)
	if err != nil {
		return err
	}
	if res.OnErr != nil {
		return fmt.Errorf("machine verified off, but power on failed: %w", res.OnErr)
	}
	return nil
}

// FenceBootOrder sets a machine's boot device through its fence method's
// device (fence.BootSetter: the IPMI and Redfish drivers), for the next
// boot only: PXE before the reboot into the installer, the disk after.
type FenceBootOrder struct {
	// Method returns the fence method that powers the machine, as for
	// FencePower.
	Method func(machineID string) (*fence.Method, error)
}

// SetBootOrder sets the boot device with fence.SetBootDevice. A device
// without the capability fails with fence.ErrUnsupported: a reinstall must
// not reboot a machine that would boot its old system.
func (b FenceBootOrder) SetBootOrder(ctx context.Context, machineID string, d BootDevice) error {
	var fd fence.BootDevice
	switch d {
	case BootPXE:
		fd = fence.BootPXE
	case BootDisk:
		fd = fence.BootDisk
	default:
		return fmt.Errorf("machine %s: no boot device %v", machineID, d)
	}
	m, err := methodOf(b.Method, machineID)
	if err != nil {
		return err
	}
	return fence.SetBootDevice(ctx, m, fd)
}

// methodOf returns the machine's fence method through lookup.
func methodOf(lookup func(string) (*fence.Method, error), machineID string) (*fence.Method, error) {
	if lookup == nil {
		return nil, errors.New("no fence method lookup")
	}
	m, err := lookup(machineID)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("no fence method for machine %s", machineID)
	}
	return m, nil
}
