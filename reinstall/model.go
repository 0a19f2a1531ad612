package reinstall

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/fencekit/fencekit/internal/enum"
)

// BootDevice is what a machine boots from first.
type BootDevice uint8

const (
	// BootUnset is the zero BootDevice: not known or never set.
	BootUnset BootDevice = iota
	// BootDisk boots the OS on the machine's disk.
	BootDisk
	// BootPXE boots from the network, into the installer.
	BootPXE
)

var bootDeviceNames = [...]string{BootUnset: "unset", BootDisk: "disk", BootPXE: "pxe"}

// String returns "disk", "pxe" or "unset".
func (b BootDevice) String() string { return enum.Name(bootDeviceNames[:], b, "BootDevice") }

// Network is the network a machine's switch ports are in.
type Network uint8

const (
	// NetworkUnset is the zero Network.
	NetworkUnset Network = iota
	// NetworkPXE is the provisioning network, where the machine finds the
	// installer.
	NetworkPXE
	// NetworkTenant is the tenant's VRF, where the installed OS runs.
	NetworkTenant
)

var networkNames = [...]string{NetworkUnset: "unset", NetworkPXE: "pxe", NetworkTenant: "tenant"}

// String returns "pxe", "tenant" or "unset".
func (n Network) String() string { return enum.Name(networkNames[:], n, "Network") }

// BootTarget is the OS the installer hands the machine over to with kexec.
type BootTarget uint8

const (
	// TargetNone is the zero BootTarget.
	TargetNone BootTarget = iota
	// TargetNewOS is the image the installer has just written.
	TargetNewOS
	// TargetLocalOS is the OS already on the primary disk: the old OS
	// after a reinstall aborted before the wipe, or the installed OS when
	// no reinstall is pending.
	TargetLocalOS
)

var bootTargetNames = [...]string{TargetNone: "none", TargetNewOS: "new-os", TargetLocalOS: "local-os"}

// String returns "new-os", "local-os" or "none".
func (t BootTarget) String() string { return enum.Name(bootTargetNames[:], t, "BootTarget") }

// Phase is where a machine's reinstall stands, on the API side.
type Phase uint8

const (
	// PhaseNone is the zero Phase: no reinstall.
	PhaseNone Phase = iota
	// PhasePending: accepted; the machine was rebooted into the installer,
	// which has not yet started an attempt.
	PhasePending
	// PhaseInstalling: the installer has started an attempt (see
	// Service.Lookup) and not yet reported.
	PhaseInstalling
	// PhaseSucceeded: the installer reported success; the reinstall flag
	// is reset.
	PhaseSucceeded
	// PhaseFailed: the reinstall failed (see Status.Reason). The reinstall
	// flag is reset when the primary disk is known to be intact; otherwise
	// it stays set and the machine stays in reinstall: the installer halts
	// without wiping until a new request re-arms it.
	PhaseFailed
)

var phaseNames = [...]string{"none", "pending", "installing", "succeeded", "failed"}

// String returns the phase's name in lower case.
func (p Phase) String() string {
	return enum.Name(phaseNames[:], p, "Phase")
}

// MarshalText encodes the phase as String does.
func (p Phase) MarshalText() ([]byte, error) {
	if int(p) >= len(phaseNames) {
		return nil, fmt.Errorf("cannot encode phase %d", uint8(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText decodes what MarshalText encodes.
func (p *Phase) UnmarshalText(b []byte) error {
	v, ok := enum.Value[Phase](phaseNames[:], string(b))
	if !ok {
		return fmt.Errorf("unknown phase %q", b)
	}
	*p = v
	return nil
}

// Pending reports whether a reinstall in this phase is still under way
// (pending or installing).
func (p Phase) Pending() bool { return p == PhasePending || p == PhaseInstalling }

// Lock marks a machine that must not be changed.
type Lock struct {
	// Reason says why, for the refusal.
	Reason string
}

// Allocation is what a tenant was given: the machine, its OS image and the
// rest of its configuration. A reinstall changes Image and Reinstall only.
type Allocation struct {
	// Image is the OS image installed, or being installed.
	Image string
	// Reinstall is the flag the installer reads at PXE boot: set, it
	// reinstalls the primary disk only; it is reset after a reported
	// success (see Phase).
	Reinstall bool
	// Project, Name and Hostname name the allocation.
	Project, Name, Hostname string
	// Networks are the networks the machine is attached to.
	Networks []string
	// SSHPublicKeys are installed for the tenant's login.
	SSHPublicKeys []string
	// UserData is handed to the installed OS.
	UserData string
}

// Clone returns a deep copy.
func (a *Allocation) Clone() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Networks = slices.Clone(a.Networks)
	c.SSHPublicKeys = slices.Clone(a.SSHPublicKeys)
	return &c
}

// Status is the record of a machine's current or last reinstall.
type Status struct {
	// Phase is where the reinstall stands.
	Phase Phase `json:"phase"`
	// Generation numbers the machine's reinstall requests, from 1; orders
	// and reports carry it, so that a report of an earlier request is
	// never taken for one of this request.
	Generation uint64 `json:"generation"`
	// Image is the image asked for.
	Image string `json:"image"`
	// PreviousImage is the allocation's image before the reinstall; it is
	// restored when the reinstall fails with the old OS intact.
	PreviousImage string `json:"previousImage,omitempty"`
	// PrimaryDisk is the disk primary disk detection found when the
	// reinstall was requested: the only disk the installer may wipe.
	PrimaryDisk DiskRef `json:"primaryDisk"`
	// Attempts counts the installer's attempts (see Service.Lookup); it
	// never exceeds the service's MaxAttempts.
	Attempts int `json:"attempts"`
	// DiskIntact is true while no attempt can have touched the primary
	// disk: the installer then requires /etc/metal on it before wiping,
	// and boots the old OS when it aborts before the wipe.
	DiskIntact bool `json:"diskIntact"`
	// AttemptIntact is DiskIntact as it was when the current attempt
	// started.
	AttemptIntact bool `json:"attemptIntact"`
	// Expired is true when the reinstall was marked failed because no
	// report came before Deadline (see Service.Expire).
	Expired bool `json:"expired,omitempty"`
	// Reason says why the reinstall failed.
	Reason string `json:"reason,omitempty"`
	// RequestedAt, UpdatedAt and Deadline are the request's time, the last
	// change's and the time by which a report is expected.
	RequestedAt time.Time `json:"requestedAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	Deadline    time.Time `json:"deadline"`
}

// Clone returns a copy.
func (s *Status) Clone() *Status {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// Machine is one machine's record in the MachineStore.
type Machine struct {
	// ID identifies the machine: letters, digits and ".-_:", at most 128,
	// starting with a letter or digit.
	ID string
	// Inventory is the machine's disks as last reported.
	Inventory Inventory
	// Allocation is nil when the machine is not allocated.
	Allocation *Allocation
	// BootOrder is the boot order last set through this package.
	BootOrder BootDevice
	// Lock is nil when the machine is not locked.
	Lock *Lock
	// Reinstall is the current or last reinstall, nil if none.
	Reinstall *Status
	// Version is the record's version for optimistic concurrency: a
	// MachineStore stores an update only if its Version is the stored one.
	Version uint64
}

// Clone returns a deep copy.
func (m Machine) Clone() Machine {
	m.Inventory = m.Inventory.Clone()
	m.Allocation = m.Allocation.Clone()
	if m.Lock != nil {
		l := *m.Lock
		m.Lock = &l
	}
	m.Reinstall = m.Reinstall.Clone()
	return m
}

// Reinstalling reports whether the machine's reinstall flag is set.
func (m *Machine) Reinstalling() bool { return m.Allocation != nil && m.Allocation.Reinstall }

// Image is one entry of the image catalog.
type Image struct {
	// ID names the image ("ubuntu-24.04"): lower-case letters, digits and
	// ".-_", at most 128, starting with a letter or digit.
	ID string
	// ExpiresAt, when set, is when the image may no longer be installed.
	ExpiresAt time.Time
	// Revoked images may no longer be installed (withdrawn, broken).
	Revoked bool
}

var (
	machineIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	imageIDRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
)

// ValidMachineID reports whether id can name a machine.
func ValidMachineID(id string) bool { return machineIDRE.MatchString(id) }

// ValidImageID reports whether id can name an image.
func ValidImageID(id string) bool { return imageIDRE.MatchString(id) }

// Request is a reinstall request: exactly a machine and an image.
type Request struct {
	// MachineID names the machine to reinstall.
	MachineID string
	// Image names the image to install.
	Image string
}

// Result answers a reinstall request.
type Result struct {
	// Machine is the machine's ID.
	Machine string `json:"machine"`
	// Status is the machine's reinstall as recorded.
	Status Status `json:"status"`
	// AlreadyPending is true when the request repeated a pending one and
	// changed nothing.
	AlreadyPending bool `json:"alreadyPending"`
}

// OrderKind is what the API side tells the installer to do at PXE boot.
type OrderKind uint8

const (
	// OrderNone is the zero OrderKind; no valid order has it.
	OrderNone OrderKind = iota
	// OrderNotAllocated: the machine has no allocation; the reinstall
	// installer leaves it to the ordinary install and wipes nothing.
	OrderNotAllocated
	// OrderBootLocal: the machine is allocated and no reinstall is
	// pending; boot the OS on its disk, wipe nothing.
	OrderBootLocal
	// OrderReinstall: reinstall Image on PrimaryDisk, this attempt only.
	OrderReinstall
	// OrderHalt: the machine is in reinstall but may not be wiped (the
	// reinstall failed, or its attempts are used up); stay in the
	// installer, wipe nothing.
	OrderHalt
)

var orderNames = [...]string{"none", "not-allocated", "boot-local", "reinstall", "halt"}

// String returns the kind's name.
func (k OrderKind) String() string {
	return enum.Name(orderNames[:], k, "OrderKind")
}

// Order is the API side's answer to the installer's lookup at PXE boot.
type Order struct {
	// Kind says what to do.
	Kind OrderKind
	// Machine is the machine's ID.
	Machine string
	// Generation, Image, PrimaryDisk, Attempt and DiskIntact are set for
	// OrderReinstall: the request's generation (see Status.Generation),
	// the image to write, the only disk that may be wiped,
	// the attempt's number (for the report) and whether the primary disk
	// is known to be untouched (see Status.DiskIntact).
	Generation  uint64
	Image       string
	PrimaryDisk DiskRef
	Attempt     int
	DiskIntact  bool
	// Reason says why, for OrderHalt.
	Reason string
}

// Validate checks that an OrderReinstall names an image, a disk and an
// attempt.
func (o *Order) Validate() error {
	if o.Kind != OrderReinstall {
		return nil
	}
	switch {
	case !ValidImageID(o.Image):
		return errorf(o.Machine, "order.image", fmt.Errorf("%w: image %q", ErrInvalidImage, o.Image))
	case o.PrimaryDisk.Name == "" || o.PrimaryDisk.Size == 0 || o.PrimaryDisk.Type == DiskTypeUnknown:
		return errorf(o.Machine, "order.primaryDisk", fmt.Errorf("%w: the order names no disk", ErrNoPrimaryDisk))
	case o.Attempt < 1 || o.Generation < 1:
		return errorf(o.Machine, "order.attempt", fmt.Errorf("%w: generation %d, attempt %d", ErrBadRequest, o.Generation, o.Attempt))
	}
	return nil
}

// Outcome is what an installer attempt reports.
type Outcome uint8

const (
	// OutcomeNone is the zero Outcome; no valid report has it.
	OutcomeNone Outcome = iota
	// OutcomeSucceeded: the image is written and its /install.sh ran.
	OutcomeSucceeded
	// OutcomeFailed: the attempt failed; see Report.Wiped.
	OutcomeFailed
)

var outcomeNames = [...]string{OutcomeNone: "none", OutcomeSucceeded: "succeeded", OutcomeFailed: "failed"}

// String returns "succeeded", "failed" or "none".
func (o Outcome) String() string { return enum.Name(outcomeNames[:], o, "Outcome") }

// Report is the installer's report of one attempt.
type Report struct {
	// Machine is the machine's ID.
	Machine string
	// Generation and Attempt are the Order's.
	Generation uint64
	Attempt    int
	// Outcome says whether the attempt succeeded.
	Outcome Outcome
	// Wiped is true when the attempt started wiping the primary disk (so
	// the old OS may be gone).
	Wiped bool
	// Reason says why the attempt failed.
	Reason string
}
