package installer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fencekit/fencekit/internal/ctxsleep"
	"github.com/fencekit/fencekit/reinstall"
)

// Allocations is the installer's way to the API side's lookup
// (reinstall.Service.Lookup implements it in-process).
type Allocations interface {
	Lookup(ctx context.Context, machineID string) (reinstall.Order, error)
}

// Reporter sends the installer's report to the API side
// (reinstall.Service.Report implements it in-process). It must be safe to
// call again with the same report: the installer retries reports whose
// answer it lost.
type Reporter interface {
	Report(ctx context.Context, r reinstall.Report) error
}

// Disks is the machine's local storage, as the installer running on it sees
// it. Implementations act on the disk the DiskRef names in the live
// inventory (/dev/<Name>), and should refuse when that device's size or
// serial no longer match the DiskRef.
type Disks interface {
	// Inventory reads the live inventory: every disk, with its partitions,
	// filesystems, and whether each filesystem holds /etc/metal.
	Inventory(ctx context.Context) (reinstall.Inventory, error)
	// Wipe wipes the disk: partition table, signatures, data.
	Wipe(ctx context.Context, d reinstall.DiskRef) error
	// WriteImage writes the image to the disk.
	WriteImage(ctx context.Context, d reinstall.DiskRef, image string) error
	// RunInstall runs the written image's /install.sh.
	RunInstall(ctx context.Context, d reinstall.DiskRef) error
}

// Kexec boots an OS from the running installer. A nil error means the
// machine is handed over (a real implementation does not return). d is the
// primary disk as the installer knows it: named as in the live inventory
// once the wipe was planned, otherwise as pinned by the API side (the name
// may have changed since), or zero when no reinstall was ordered; an
// implementation locates the kernel itself when d does not lead to one.
type Kexec interface {
	Kexec(ctx context.Context, t reinstall.BootTarget, d reinstall.DiskRef) error
}

// Ports are what Run works through; all are required.
type Ports struct {
	// Allocations answers the lookup at boot.
	Allocations Allocations
	// Reporter takes the reports.
	Reporter Reporter
	// Disks are the machine's local disks.
	Disks Disks
	// BootOrder sets the machine's boot order back to disk.
	BootOrder reinstall.BootOrder
	// SwitchPorts move the machine to the tenant VRF.
	SwitchPorts reinstall.SwitchPorts
	// Kexec boots the new or the local OS.
	Kexec Kexec
}

// Defaults of Options.
const (
	DefaultCallTimeout = 2 * time.Minute
	DefaultDiskTimeout = 2 * time.Hour
)

// Transition is one step of a run, for Options.Observer.
type Transition struct {
	// From is the state before the event.
	From State
	// Event is what happened.
	Event Event
	// To is the state after it.
	To State
	// Commands are what Step asked for.
	Commands []Command
}

// Options tune Run. The zero value gives the defaults.
type Options struct {
	// Limits bound the retries (see Limits).
	Limits Limits
	// CallTimeout bounds each lookup, report, boot order, network and kexec
	// call (default 2 min); DiskTimeout each inventory, wipe, write and
	// install call (default 2 h). Both are carved from Run's context.
	CallTimeout, DiskTimeout time.Duration
	// Observer, if set, receives every transition, in order.
	Observer func(Transition)
	// Logger receives a record per transition; nil discards them.
	Logger *slog.Logger
}

// maxSteps bounds a run; Step ends far sooner with any Limits.
const maxSteps = 10000

// Run is the installer after a PXE boot of the machine: it drives Step,
// carrying out each command through the ports, until a terminal phase,
// and returns the final state. Waits honour ctx; each call gets its own
// timeout carved from ctx. A cancelled ctx makes every further call fail,
// which Step turns into its bounded failure paths, and Run returns ctx's
// error beside the final state.
func Run(ctx context.Context, machineID string, p Ports, o *Options) (State, error) {
	var oo Options
	if o != nil {
		oo = *o
	}
	if p.Allocations == nil || p.Reporter == nil || p.Disks == nil || p.BootOrder == nil || p.SwitchPorts == nil || p.Kexec == nil {
		return State{}, errors.New("installer: Run: a port is missing")
	}
	if oo.CallTimeout <= 0 {
		oo.CallTimeout = DefaultCallTimeout
	}
	if oo.DiskTimeout <= 0 {
		oo.DiskTimeout = DefaultDiskTimeout
	}
	log := oo.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := NewState(machineID, oo.Limits)
	ev := Event{Kind: EventBoot}
	for range maxSteps {
		next, cmds, err := Step(s, ev)
		if err != nil {
			return s, err
		}
		if oo.Observer != nil {
			oo.Observer(Transition{From: s, Event: ev, To: next, Commands: cmds})
		}
		if log.Enabled(ctx, slog.LevelInfo) {
			log.LogAttrs(ctx, slog.LevelInfo, "installer step", slog.String("machine", machineID), slog.String("event", ev.Kind.String()),
				slog.String("state", next.Summary()))
		}
		s = next
		var call *Command
		for i := range cmds {
			if cmds[i].Kind == CmdWait {
				_ = ctxsleep.Sleep(ctx, cmds[i].Delay) // an ended ctx ends the next command, which runs under it
				continue
			}
			call = &cmds[i]
		}
		if call == nil {
			if s.Phase.Terminal() {
				return s, ctx.Err()
			}
			return s, fmt.Errorf("installer: machine %s: phase %v gave no command", machineID, s.Phase)
		}
		ev = exec(ctx, machineID, p, oo, *call)
	}
	return s, fmt.Errorf("installer: machine %s: more than %d steps", machineID, maxSteps)
}

// exec carries out one command and returns its result as an event.
func exec(ctx context.Context, id string, p Ports, o Options, c Command) Event {
	timeout := o.CallTimeout
	switch c.Kind {
	case CmdReadInventory, CmdWipe, CmdWriteImage, CmdRunInstall:
		timeout = o.DiskTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev := Event{Kind: c.Kind.Event()}
	switch c.Kind {
	case CmdLookup:
		ev.Order, ev.Err = p.Allocations.Lookup(cctx, id)
	case CmdReadInventory:
		ev.Inventory, ev.Err = p.Disks.Inventory(cctx)
	case CmdWipe:
		ev.Err = p.Disks.Wipe(cctx, c.Disk)
	case CmdWriteImage:
		ev.Err = p.Disks.WriteImage(cctx, c.Disk, c.Image)
	case CmdRunInstall:
		ev.Err = p.Disks.RunInstall(cctx, c.Disk)
	case CmdReport:
		ev.Err = p.Reporter.Report(cctx, c.Report)
	case CmdSetBootOrder:
		ev.Err = p.BootOrder.SetBootOrder(cctx, id, c.BootOrder)
	case CmdSetNetwork:
		ev.Err = p.SwitchPorts.SetNetwork(cctx, id, c.Network)
	case CmdKexec:
		ev.Err = p.Kexec.Kexec(cctx, c.Target, c.Disk)
	}
	return ev
}
