// Package reinstall reinstalls a bare-metal machine with a new OS image
// while keeping the data on its other disks: the API side of metal-stack's
// machine reinstall design (the metal-stack MEP "Machine Re-Installation"),
// over ports the host application implements. Its subpackage installer is
// the machine side.
//
// # The promise
//
// A reinstall never wipes anything but the OS (root) disk, and never loops
// forever. Everything in this package and in installer is built around
// these two rules:
//
//   - One disk per reinstall. When the API side accepts a request, primary
//     disk detection (DetectPrimaryDisk) runs on the machine's inventory and
//     the disk it finds is pinned in the record. The installer wipes only
//     that disk, after finding it again in the live inventory (PlanWipe).
//     Detection refuses every doubt instead of guessing: no disk holding
//     /etc/metal, more than one, a removable one, /etc/metal outside a root
//     filesystem, a root filesystem mounted elsewhere, an inconsistent
//     inventory. A wrong guess would wipe a data disk.
//   - No fresh install by mistake. The installer looks the allocation up
//     before touching a disk, and wipes only on an explicit OrderReinstall.
//     An allocated machine without a pending reinstall boots its local OS;
//     a failed lookup halts. The Reinstall flag is reset only when the
//     installer reports success, or a failure with the old OS intact; after
//     a failure from the wipe on it stays set and the machine stays in
//     reinstall (the installer halts at each boot and wipes nothing) until a
//     new request re-arms it. So a failed or lost report never turns into a
//     fresh install that wipes the data disks.
//   - No endless loop. A success report resets the flag. Service.Lookup
//     starts at most Options.MaxAttempts attempts per request, recording
//     each before the installer acts, then marks the reinstall failed. The
//     installer's retries are bounded. Service.Expire marks a reinstall
//     whose report never came failed. Every reinstall thus ends with the
//     flag reset or the machine reported failed.
//
// # The API side
//
// A request takes exactly a machine ID and an image (Request). PlanReinstall,
// a pure function, refuses it with the reason (an *Error wrapping a
// sentinel) when the machine does not exist, is not allocated, is locked,
// has another reinstall pending, when the image is unknown or invalid,
// when primary disk detection fails, or when anything but the image would
// change. A request that repeats a pending one is answered with it and
// changes nothing. Service.Reinstall then stores the plan (flag, image,
// pinned disk, boot order PXE) with optimistic concurrency, sets the boot
// order to PXE (BootOrder; FenceBootOrder sets it through the machine's
// BMC for the next boot only), moves the switch ports to the PXE network
// (SwitchPorts) and reboots the machine through the fence core, verified
// (Power, FencePower). A failure there rolls the request back.
// Service.Expire, called periodically, fails reinstalls whose report never
// came.
//
// NewHandler serves POST /v1/machine/{id}/reinstall with a JSON body
// {"image": "..."} and JSON error bodies, and the installer's POST
// /v1/machine/{id}/order (a POST: the lookup starts an attempt) and POST
// /v1/machine/{id}/report; every caller
// authenticates first (package apiauth: bearer tokens or signed requests;
// the installer's credential apart from the operators'), or gets 401 and
// nothing is done. Client calls them and returns typed errors; it is the
// installer's Allocations and Reporter when the installer runs as its own
// program. MemStore and MemImages are in-memory ports.
//
// The installer reads the machine's disks with ReadLsblk (lsblk --json
// --bytes --output-all), probing filesystems for /etc/metal with
// EtcMetalDebugfs.
//
// # The installer side
//
// Service.Lookup answers the installer's first call after a PXE boot with
// an Order; Service.Report takes its report. See package installer for the
// state machine.
package reinstall
