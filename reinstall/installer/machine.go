package installer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/enum"
	"github.com/fencekit/fencekit/reinstall"
)

// Defaults of Limits.
const (
	DefaultLookupTries = 3
	DefaultReportTries = 5
	DefaultPortTries   = 3
	DefaultKexecTries  = 2
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 30 * time.Second
)

// Limits bound the installer's retries. The zero value gives the defaults.
type Limits struct {
	// LookupTries is how many times the allocation lookup is tried before
	// the installer halts (default 3).
	LookupTries int
	// ReportTries is how many times a report is tried before it counts as
	// lost (default 5).
	ReportTries int
	// PortTries is how many times setting the boot order or the network is
	// tried before the installer goes on without it (default 3).
	PortTries int
	// KexecTries is how many times the kexec is tried before the installer
	// halts (default 2).
	KexecTries int
	// Backoff is the wait before the first retry, doubled for each further
	// one up to MaxBackoff (defaults 1 s and 30 s). A negative Backoff
	// means no wait.
	Backoff, MaxBackoff time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.LookupTries, DefaultLookupTries)
	def(&l.ReportTries, DefaultReportTries)
	def(&l.PortTries, DefaultPortTries)
	def(&l.KexecTries, DefaultKexecTries)
	if l.Backoff == 0 {
		l.Backoff = DefaultBackoff
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = DefaultMaxBackoff
	}
	return l
}

// Phase is the installer's state.
type Phase uint8

const (
	// PhaseBoot: the machine has PXE booted into the installer; awaits
	// EventBoot.
	PhaseBoot Phase = iota
	// PhaseLookup awaits the allocation lookup (EventLookup).
	PhaseLookup
	// PhaseInventory awaits the live disk inventory (EventInventory).
	PhaseInventory
	// PhaseWipe awaits the wipe of the primary disk (EventWipe).
	PhaseWipe
	// PhaseWrite awaits the image write (EventWrite).
	PhaseWrite
	// PhaseInstall awaits the image's /install.sh (EventInstall).
	PhaseInstall
	// PhaseReportSuccess awaits the success report (EventReport).
	PhaseReportSuccess
	// PhaseReportFailure awaits the failure report (EventReport).
	PhaseReportFailure
	// PhaseBootOrder awaits setting the boot order to disk (EventBootOrder).
	PhaseBootOrder
	// PhaseNetwork awaits moving the network to the tenant VRF
	// (EventNetwork).
	PhaseNetwork
	// PhaseKexec awaits the kexec into State.Target (EventKexec).
	PhaseKexec
	// PhaseBooted is terminal: the machine runs State.Target.
	PhaseBooted
	// PhaseHalted is terminal: the installer stays, wiping nothing more,
	// until an operator acts (State.Halt says why).
	PhaseHalted
	// PhaseHandedOff is terminal: the machine is not allocated; it is left
	// to the ordinary install, and nothing was wiped.
	PhaseHandedOff
)

var phaseNames = [...]string{"boot", "lookup", "inventory", "wipe", "write", "install", "report-success",
	"report-failure", "boot-order", "network", "kexec", "booted", "halted", "handed-off"}

// String returns the phase's name.
func (p Phase) String() string {
	return enum.Name(phaseNames[:], p, "Phase")
}

// Terminal reports whether the installer stops in this phase.
func (p Phase) Terminal() bool { return p >= PhaseBooted }

// EventKind is what happened: the machine booted, or a command finished.
type EventKind uint8

const (
	// EventNone is the zero EventKind; no valid event has it.
	EventNone EventKind = iota
	// EventBoot starts the installer.
	EventBoot
	// EventLookup is the result of CmdLookup (Event.Order or Event.Err).
	EventLookup
	// EventInventory is the result of CmdReadInventory (Event.Inventory
	// or Event.Err).
	EventInventory
	// EventWipe, EventWrite, EventInstall, EventReport, EventBootOrder,
	// EventNetwork and EventKexec are the results of the commands of the
	// same names (Event.Err).
	EventWipe
	EventWrite
	EventInstall
	EventReport
	EventBootOrder
	EventNetwork
	EventKexec
)

var eventNames = [...]string{"none", "boot", "lookup", "inventory", "wipe", "write", "install", "report", "boot-order", "network", "kexec"}

// String returns the kind's name.
func (k EventKind) String() string {
	return enum.Name(eventNames[:], k, "EventKind")
}

// Event is the input of Step.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Err is the command's error; nil for success.
	Err error
	// Order is the lookup's answer (EventLookup).
	Order reinstall.Order
	// Inventory is the live inventory (EventInventory).
	Inventory reinstall.Inventory
}

// CommandKind is what the installer asks its ports to do.
type CommandKind uint8

const (
	// CmdNone is the zero CommandKind; no valid command has it.
	CmdNone CommandKind = iota
	// CmdWait waits Command.Delay before the next command.
	CmdWait
	// CmdLookup asks the API side for the machine's order.
	CmdLookup
	// CmdReadInventory reads the live disk inventory.
	CmdReadInventory
	// CmdWipe wipes Command.Disk.
	CmdWipe
	// CmdWriteImage writes Command.Image to Command.Disk.
	CmdWriteImage
	// CmdRunInstall runs the written image's /install.sh.
	CmdRunInstall
	// CmdReport sends Command.Report.
	CmdReport
	// CmdSetBootOrder sets the boot order to Command.BootOrder.
	CmdSetBootOrder
	// CmdSetNetwork moves the switch ports to Command.Network.
	CmdSetNetwork
	// CmdKexec boots Command.Target.
	CmdKexec
)

var commandNames = [...]string{"none", "wait", "lookup", "read-inventory", "wipe", "write-image", "run-install", "report", "set-boot-order", "set-network", "kexec"}

// String returns the kind's name.
func (k CommandKind) String() string {
	return enum.Name(commandNames[:], k, "CommandKind")
}

// Event returns the kind of the event that reports the command's result;
// EventNone for CmdWait.
func (k CommandKind) Event() EventKind {
	switch k {
	case CmdLookup:
		return EventLookup
	case CmdReadInventory:
		return EventInventory
	case CmdWipe:
		return EventWipe
	case CmdWriteImage:
		return EventWrite
	case CmdRunInstall:
		return EventInstall
	case CmdReport:
		return EventReport
	case CmdSetBootOrder:
		return EventBootOrder
	case CmdSetNetwork:
		return EventNetwork
	case CmdKexec:
		return EventKexec
	}
	return EventNone
}

// Command is an output of Step: an I/O the caller carries out through
// the ports. Step returns zero or more CmdWait followed by at most one
// other command, whose result is the next event; no command but waits
// means the phase is terminal.
type Command struct {
	// Kind says what to do; the other fields are its arguments.
	Kind      CommandKind
	Delay     time.Duration        // CmdWait
	Disk      reinstall.DiskRef    // CmdWipe, CmdWriteImage, CmdRunInstall, CmdKexec
	Image     string               // CmdWriteImage
	Report    reinstall.Report     // CmdReport
	BootOrder reinstall.BootDevice // CmdSetBootOrder
	Network   reinstall.Network    // CmdSetNetwork
	Target    reinstall.BootTarget // CmdKexec
}

// String describes the command in one line.
func (c Command) String() string {
	switch c.Kind {
	case CmdWait:
		return "wait " + c.Delay.String()
	case CmdWipe, CmdRunInstall:
		return c.Kind.String() + " " + c.Disk.String()
	case CmdWriteImage:
		return fmt.Sprintf("write-image %s to %v", c.Image, c.Disk)
	case CmdReport:
		r := c.Report
		s := fmt.Sprintf("report %v generation %d attempt %d", r.Outcome, r.Generation, r.Attempt)
		if r.Wiped {
			s += " wiped"
		}
		if r.Reason != "" {
			s += ": " + r.Reason
		}
		return s
	case CmdSetBootOrder:
		return "set-boot-order " + c.BootOrder.String()
	case CmdSetNetwork:
		return "set-network " + c.Network.String()
	case CmdKexec:
		if c.Disk.IsZero() {
			return "kexec " + c.Target.String()
		}
		return fmt.Sprintf("kexec %v on %v", c.Target, c.Disk)
	}
	return c.Kind.String()
}

// State is the installer's state: the input and output of Step. NewState
// makes the initial one.
type State struct {
	// Phase is where the installer stands.
	Phase Phase
	// Machine is the ID of the machine the installer runs on.
	Machine string
	// Limits bound the retries, with the defaults filled in.
	Limits Limits
	// Order is the API side's answer to the lookup.
	Order reinstall.Order
	// Primary is the disk of the wipe plan, once planned, named as in the
	// live inventory: the only disk a command ever wipes or writes.
	Primary reinstall.DiskRef
	// Wiped is true once the wipe was commanded: from then on the old OS
	// may be gone.
	Wiped bool
	// Target is the OS the installer boots in the end.
	Target reinstall.BootTarget
	// Tries counts the tries of the command awaited.
	Tries int
	// Failure says why the reinstall failed; empty if it did not.
	Failure string
	// Reported is true once the outcome report was accepted.
	Reported bool
	// Halt says why the installer halted (PhaseHalted).
	Halt string
	// Warnings are problems that did not stop the installer (a boot order
	// or network that could not be set, a failure report that was lost).
	Warnings []string
}

// NewState returns the state of an installer that has just PXE booted on
// the machine; its first event is EventBoot.
func NewState(machineID string, l Limits) State {
	return State{Phase: PhaseBoot, Machine: machineID, Limits: l.withDefaults()}
}

// ErrUnexpectedEvent is returned by Step for an event the state does not
// await.
var ErrUnexpectedEvent = errors.New("unexpected event")

// awaits returns the event kind the phase waits for.
func (p Phase) awaits() EventKind {
	switch p {
	case PhaseBoot:
		return EventBoot
	case PhaseLookup:
		return EventLookup
	case PhaseInventory:
		return EventInventory
	case PhaseWipe:
		return EventWipe
	case PhaseWrite:
		return EventWrite
	case PhaseInstall:
		return EventInstall
	case PhaseReportSuccess, PhaseReportFailure:
		return EventReport
	case PhaseBootOrder:
		return EventBootOrder
	case PhaseNetwork:
		return EventNetwork
	case PhaseKexec:
		return EventKexec
	}
	return EventNone
}

// Step is the installer's state machine, a pure function: from a state
// and the event that happened it returns the next state and the commands
// to carry out. An event the state does not await is an error wrapping
// ErrUnexpectedEvent, and the state is returned unchanged.
//
// The path of a reinstall: lookup, read the live inventory, plan the wipe
// (reinstall.PlanWipe: only the pinned primary disk, found again), wipe it,
// write the image, run /install.sh, report success, boot order to disk,
// network to the tenant VRF, kexec into the new OS. The safety rules:
//
//   - Nothing is wiped unless the lookup answered OrderReinstall and the
//     plan found the pinned primary disk in the live inventory; the wipe,
//     write and install commands only ever name that disk.
//   - A lookup that fails LookupTries times halts the installer: an
//     unknown answer is never taken for "not allocated" or "fresh install".
//   - OrderBootLocal (allocated, no reinstall pending) boots the local OS
//     and wipes nothing; OrderHalt halts; OrderNotAllocated hands off.
//   - A failure before the wipe (lookup order malformed, inventory
//     unreadable, plan refused) reports the failure and, if the order said
//     the disk was intact, boots the old OS again (boot order disk, tenant
//     network, kexec); otherwise it halts.
//   - A failure from the wipe on (wipe, write, /install.sh) reports the
//     failure and halts: the machine stays in reinstall.
//   - A report is tried ReportTries times. A lost success report halts the
//     installer with the new OS installed and unbooted; it never wipes or
//     writes again. A lost failure report is a warning: the path goes on as
//     if it had been accepted.
//   - Setting the boot order or the network is tried PortTries times, then
//     the installer goes on with a warning; the kexec KexecTries times,
//     then it halts.
//
// Every phase is left after a bounded number of events, so the installer
// always ends, in PhaseBooted, PhaseHalted or PhaseHandedOff.
func Step(s State, e Event) (State, []Command, error) {
	want := s.Phase.awaits()
	if want == EventNone || e.Kind != want {
		return s, nil, fmt.Errorf("installer: machine %s: %w %v in phase %v (awaits %v)", s.Machine, ErrUnexpectedEvent, e.Kind, s.Phase, want)
	}
	s.Warnings = slices.Clip(s.Warnings) // appends never write into the caller's array
	l := s.Limits
	switch s.Phase {
	case PhaseBoot:
		s.Phase, s.Tries = PhaseLookup, 0
		return s, []Command{{Kind: CmdLookup}}, nil

	case PhaseLookup:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.LookupTries {
				return s, retry(l, s.Tries, Command{Kind: CmdLookup}), nil
			}
			return halt(s, fmt.Sprintf("allocation lookup failed %d times: %v", s.Tries, e.Err)), nil, nil
		}
		o := e.Order
		if o.Machine != s.Machine {
			return halt(s, fmt.Sprintf("the lookup answered for machine %q", o.Machine)), nil, nil
		}
		switch o.Kind {
		case reinstall.OrderNotAllocated:
			s.Phase = PhaseHandedOff
			return s, nil, nil
		case reinstall.OrderBootLocal:
			s.Target = reinstall.TargetLocalOS
			return bootSteps(s)
		case reinstall.OrderHalt:
			return halt(s, "the machine stays in reinstall: "+o.Reason), nil, nil
		case reinstall.OrderReinstall:
			s.Order = o
			if err := o.Validate(); err != nil {
				return failure(s, "malformed order: "+err.Error())
			}
			s.Phase, s.Tries = PhaseInventory, 0
			return s, []Command{{Kind: CmdReadInventory}}, nil
		}
		return halt(s, fmt.Sprintf("unknown order %v", o.Kind)), nil, nil

	case PhaseInventory:
		if e.Err != nil {
			return failure(s, "reading the disk inventory: "+e.Err.Error())
		}
		plan, err := reinstall.PlanWipe(e.Inventory, s.Order)
		if err != nil {
			return failure(s, "wipe plan refused: "+err.Error())
		}
		if len(plan.Disks) != 1 {
			return failure(s, fmt.Sprintf("wipe plan has %d disks, not 1", len(plan.Disks)))
		}
		s.Primary, s.Wiped = plan.Disks[0], true
		s.Phase = PhaseWipe
		return s, []Command{{Kind: CmdWipe, Disk: s.Primary}}, nil

	case PhaseWipe:
		if e.Err != nil {
			return failure(s, "wiping "+s.Primary.String()+": "+e.Err.Error())
		}
		s.Phase = PhaseWrite
		return s, []Command{{Kind: CmdWriteImage, Disk: s.Primary, Image: s.Order.Image}}, nil

	case PhaseWrite:
		if e.Err != nil {
			return failure(s, "writing image "+s.Order.Image+": "+e.Err.Error())
		}
		s.Phase = PhaseInstall
		return s, []Command{{Kind: CmdRunInstall, Disk: s.Primary}}, nil

	case PhaseInstall:
		if e.Err != nil {
			return failure(s, "running /install.sh: "+e.Err.Error())
		}
		s.Phase, s.Tries = PhaseReportSuccess, 0
		return s, []Command{s.report(reinstall.OutcomeSucceeded, "")}, nil

	case PhaseReportSuccess:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.ReportTries && !errors.Is(e.Err, reinstall.ErrStaleReport) {
				return s, retry(l, s.Tries, s.report(reinstall.OutcomeSucceeded, "")), nil
			}
			return halt(s, fmt.Sprintf("the new OS is installed, but its success report was lost after %d tries (%v): staying in reinstall", s.Tries, e.Err)), nil, nil
		}
		s.Reported = true
		s.Target = reinstall.TargetNewOS
		return bootSteps(s)

	case PhaseReportFailure:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.ReportTries && !errors.Is(e.Err, reinstall.ErrStaleReport) {
				return s, retry(l, s.Tries, s.report(reinstall.OutcomeFailed, s.Failure)), nil
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("failure report lost after %d tries: %v", s.Tries, e.Err))
		} else {
			s.Reported = true
		}
		if !s.Wiped && s.Order.DiskIntact {
			s.Target = reinstall.TargetLocalOS
			return bootSteps(s)
		}
		return halt(s, "the reinstall failed after the primary disk may have been wiped: staying in reinstall"), nil, nil

	case PhaseBootOrder:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.PortTries {
				return s, retry(l, s.Tries, Command{Kind: CmdSetBootOrder, BootOrder: reinstall.BootDisk}), nil
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("boot order not set to disk after %d tries: %v", s.Tries, e.Err))
		}
		s.Phase, s.Tries = PhaseNetwork, 0
		return s, []Command{{Kind: CmdSetNetwork, Network: reinstall.NetworkTenant}}, nil

	case PhaseNetwork:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.PortTries {
				return s, retry(l, s.Tries, Command{Kind: CmdSetNetwork, Network: reinstall.NetworkTenant}), nil
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("network not moved to the tenant VRF after %d tries: %v", s.Tries, e.Err))
		}
		s.Phase, s.Tries = PhaseKexec, 0
		return s, []Command{s.kexec()}, nil

	case PhaseKexec:
		if e.Err != nil {
			s.Tries++
			if s.Tries < l.KexecTries {
				return s, retry(l, s.Tries, s.kexec()), nil
			}
			return halt(s, fmt.Sprintf("kexec into the %v failed %d times: %v", s.Target, s.Tries, e.Err)), nil, nil
		}
		s.Phase = PhaseBooted
		return s, nil, nil
	}
	return s, nil, fmt.Errorf("installer: machine %s: %w in phase %v", s.Machine, ErrUnexpectedEvent, s.Phase)
}

func (s State) report(o reinstall.Outcome, reason string) Command {
	return Command{Kind: CmdReport, Report: reinstall.Report{
		Machine: s.Machine, Generation: s.Order.Generation, Attempt: s.Order.Attempt, Outcome: o, Wiped: s.Wiped, Reason: reason,
	}}
}

func (s State) kexec() Command {
	d := s.Primary
	if d.IsZero() {
		d = s.Order.PrimaryDisk
	}
	return Command{Kind: CmdKexec, Target: s.Target, Disk: d}
}

func bootSteps(s State) (State, []Command, error) {
	s.Phase, s.Tries = PhaseBootOrder, 0
	return s, []Command{{Kind: CmdSetBootOrder, BootOrder: reinstall.BootDisk}}, nil
}

// failure reports the failure; what follows the report depends on
// s.Wiped and the order (see PhaseReportFailure).
func failure(s State, reason string) (State, []Command, error) {
	s.Failure = reason
	s.Phase, s.Tries = PhaseReportFailure, 0
	return s, []Command{s.report(reinstall.OutcomeFailed, reason)}, nil
}

func halt(s State, reason string) State {
	s.Phase, s.Halt = PhaseHalted, reason
	return s
}

// retry returns the wait before try n+1 (if any) and the command.
func retry(l Limits, n int, c Command) []Command {
	if l.Backoff < 0 {
		return []Command{c}
	}
	d := l.Backoff
	for i := 1; i < n && d < l.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, l.MaxBackoff)
	return []Command{{Kind: CmdWait, Delay: d}, c}
}

// Summary describes the state in one line, for logs and transcripts.
func (s State) Summary() string {
	var b strings.Builder
	b.WriteString(s.Phase.String())
	if s.Tries > 0 {
		fmt.Fprintf(&b, " tries=%d", s.Tries)
	}
	if !s.Primary.IsZero() {
		b.WriteString(" primary=" + s.Primary.String())
	}
	if s.Wiped {
		b.WriteString(" wiped")
	}
	if s.Target != reinstall.TargetNone {
		b.WriteString(" target=" + s.Target.String())
	}
	if s.Reported {
		b.WriteString(" reported")
	}
	if s.Failure != "" {
		b.WriteString(" failure=" + strings.ReplaceAll(s.Failure, "\n", " "))
	}
	if s.Halt != "" {
		b.WriteString(" halt=" + s.Halt)
	}
	for _, w := range s.Warnings {
		b.WriteString(" warning=" + w)
	}
	return b.String()
}
