package reinstall

import (
	"errors"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels, checked with errors.Is. Every error of this package that
// refuses a request or a report wraps exactly one of them; the HTTP handler
// maps them to status codes and error codes (see Code).
var (
	// ErrMachineNotFound refuses a request for a machine the store does
	// not hold (or whose ID cannot name a machine).
	ErrMachineNotFound = errors.New("machine not found")
	// ErrNotAllocated refuses a reinstall of a machine with no allocation:
	// there is nothing to keep, so a reinstall makes no sense.
	ErrNotAllocated = errors.New("machine is not allocated")
	// ErrLocked refuses a reinstall of a locked machine.
	ErrLocked = errors.New("machine is locked")
	// ErrUnknownImage refuses an image the image catalog does not know.
	ErrUnknownImage = errors.New("unknown image")
	// ErrInvalidImage refuses an image ID that is malformed or empty, or an
	// image that may no longer be installed (revoked or expired).
	ErrInvalidImage = errors.New("invalid image")
	// ErrOtherAttributes refuses a request that would change anything but
	// the image of the allocation: a reinstall takes a machine ID and an
	// image, nothing else.
	ErrOtherAttributes = errors.New("a reinstall changes only the image")
	// ErrReinstallPending refuses a request for another image while a
	// reinstall is pending. A request for the same image is answered with
	// the pending reinstall (it is idempotent).
	ErrReinstallPending = errors.New("a reinstall is pending")
	// ErrInvalidInventory means a disk inventory is malformed or
	// inconsistent. It refuses the reinstall: an inventory that cannot be
	// trusted cannot say which disk may be wiped.
	ErrInvalidInventory = errors.New("invalid disk inventory")
	// ErrNoPrimaryDisk means primary disk detection found no disk it may
	// wipe: no disk holds /etc/metal, or the one that does is removable or
	// holds it outside a root filesystem partition.
	ErrNoPrimaryDisk = errors.New("no primary disk")
	// ErrAmbiguousPrimaryDisk means more than one disk could be the
	// primary disk. Detection refuses rather than guesses: a wrong guess
	// wipes a data disk.
	ErrAmbiguousPrimaryDisk = errors.New("ambiguous primary disk")
	// ErrPrimaryDiskHoldsData means the primary disk holds data beyond the
	// OS: a partition that is a member of a RAID array, a volume group, a
	// pool, an encrypted volume or a Ceph OSD. A reinstall, which wipes
	// the whole disk, would destroy it.
	ErrPrimaryDiskHoldsData = errors.New("the primary disk holds data")
	// ErrPrimaryDiskMismatch means the installer could not find, in the
	// machine's live inventory, the very disk the API side detected when
	// the reinstall was requested. Nothing is wiped.
	ErrPrimaryDiskMismatch = errors.New("primary disk does not match the requested one")
	// ErrConflict means the machine record kept changing under the request
	// (optimistic concurrency), or a record is inconsistent with the
	// request. Retrying later is safe.
	ErrConflict = errors.New("machine record changed concurrently")
	// ErrPlanFailed means setting the boot order, the switch ports or the
	// verified reboot failed; the reinstall was rolled back and is
	// reported failed. The machine's disks were not touched.
	ErrPlanFailed = errors.New("reinstall could not be started")
	// ErrStaleReport refuses an installer report that does not belong to
	// the machine's current reinstall attempt.
	ErrStaleReport = errors.New("stale installer report")
	// ErrBadRequest refuses a malformed request or report (not JSON, a
	// field of the wrong type, a missing field).
	ErrBadRequest = errors.New("bad request")
)

// Error is the error of this package: it names the machine and the field
// at fault and wraps a sentinel (with details) or the cause of a failure.
type Error struct {
	// Machine is the machine's ID, when known.
	Machine string
	// Field names the attribute at fault, such as "image", "lock",
	// "allocation", "inventory.disks[1].partitions[0].fstype",
	// "primaryDisk", "bootOrder", "switchPorts" or "power".
	Field string
	// Err is the reason, wrapping a sentinel.
	Err error
}

// Error returns "reinstall: machine M, field F: reason".
func (e *Error) Error() string {
	return new(errfmt.Labels).Start("reinstall").Add("machine", e.Machine).AddRaw("field", e.Field).Cause(e.Err, "failed")
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an *Error.
func errorf(machine, field string, err error) *Error {
	return &Error{Machine: machine, Field: field, Err: err}
}

// withMachine returns err naming machine id: an *Error without a machine
// is copied with it; an *Error with one is returned as it is; any other
// error is wrapped in one.
func withMachine(err error, id string) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		if e.Machine == "" {
			c := *e
			c.Machine = id
			return &c
		}
		return err
	}
	return &Error{Machine: id, Err: err}
}

func quote(s string) string { return errfmt.Quote(s) }

// codes maps each sentinel to its error code in HTTP error bodies and to
// its HTTP status.
var codes = []struct {
	err    error
	code   string
	status int
}{
	{ErrMachineNotFound, "machine_not_found", 404},
	{ErrNotAllocated, "not_allocated", 409},
	{ErrLocked, "locked", 423},
	{ErrUnknownImage, "unknown_image", 422},
	{ErrInvalidImage, "invalid_image", 422},
	{ErrOtherAttributes, "other_attributes", 422},
	{ErrReinstallPending, "reinstall_pending", 409},
	{ErrInvalidInventory, "invalid_inventory", 422},
	{ErrNoPrimaryDisk, "no_primary_disk", 422},
	{ErrAmbiguousPrimaryDisk, "ambiguous_primary_disk", 422},
	{ErrPrimaryDiskHoldsData, "primary_disk_holds_data", 422},
	{ErrPrimaryDiskMismatch, "primary_disk_mismatch", 422},
	{ErrPlanFailed, "plan_failed", 502},
	{ErrConflict, "conflict", 409},
	{ErrStaleReport, "stale_report", 409},
	{ErrBadRequest, "bad_request", 400},
}

// Code returns the error code that names err's sentinel in HTTP error
// bodies ("locked", "unknown_image", ...), and the HTTP status the handler
// answers with; "internal" and 500 for an error that wraps none. An error
// that wraps several (a failed start whose rollback failed too) gets the
// code of the first in the order of the sentinels' declaration, but with
// ErrPlanFailed before ErrConflict.
func Code(err error) (code string, status int) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return "internal", 500
}

// sentinelFor returns the sentinel named by code, or nil.
func sentinelFor(code string) error {
	for _, c := range codes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}
