// Package installer is the machine side of a reinstall: what runs after the
// machine PXE boots (metal-hammer, in metal-stack's machine reinstall
// design). It asks the API side what to do before it touches any disk,
// wipes only the primary disk when a reinstall is pending, writes the image,
// runs its /install.sh, reports, sets the boot order back to disk and the
// network to the tenant VRF, and kexecs into the new kernel.
//
// Step is the whole state machine and is pure: (State, Event) in, (State,
// []Command) out. Run drives it through small ports the host implements
// (Allocations, Reporter, Disks, reinstall.BootOrder, reinstall.SwitchPorts,
// Kexec); tests and simulations can drive it alike.
//
// # Safety rules
//
//   - The only disk ever wiped, written or installed to is the one of the
//     wipe plan, reinstall.PlanWipe: the primary disk the API side pinned
//     when it accepted the request, found again in the live inventory. Any
//     doubt (no /etc/metal where it should be, another disk holding it, a
//     changed serial or size) refuses the plan, and nothing is wiped.
//   - The allocation is looked up first. A lookup that fails, or an order
//     other than OrderReinstall, never leads to a wipe: an allocated machine
//     without a pending reinstall boots its local OS; a machine the API side
//     keeps in reinstall after a failure halts; a machine that is not
//     allocated is handed off to the ordinary install untouched.
//   - Failure before the wipe: report it and boot the old OS again. Failure
//     from the wipe on: report it and stay in reinstall (halt). A lost
//     report (retried Limits.ReportTries times) never leads to a wipe or a
//     fresh install: after a lost success report the installer halts with
//     the new OS written, and the API side's reinstall.Service.Expire marks
//     the reinstall failed.
//   - Every retry is bounded, so every run ends: booted, halted or handed
//     off. Across boots, reinstall.Service.Lookup bounds the attempts of one
//     request.
package installer
