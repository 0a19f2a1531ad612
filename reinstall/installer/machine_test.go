package installer

// Golden transcripts of the state machine: for each scenario below,
// testdata/<name>.txt holds every transition of one installer run. Run
//
//	go test ./reinstall/installer -run Golden -rewrite
//
// to write what the scenarios print now into the files, then review the
// diff.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden transcripts in testdata/ with what the scenarios print now")

var errFault = errors.New("injected fault")

// scenario is one installer run against scripted ports.
type scenario struct {
	name string
	// order is the lookup's answer; the reinstall order of attempt 1 with
	// the disk intact by default.
	order func(o *reinstall.Order)
	// inv edits the live inventory (reinstalltest.Inventory by default).
	inv func(inv *reinstall.Inventory)
	// fail makes the first n calls of a command fail.
	fail map[CommandKind]int
	// stale makes reports fail with ErrStaleReport.
	stale bool

	want      Phase
	wantWipe  bool
	wantOut   reinstall.Outcome // the last report tried, OutcomeNone if none
	wantBoot  reinstall.BootTarget
	wantError string // in State.Halt or State.Failure
}

func reinstallOrder() reinstall.Order {
	return reinstall.Order{Kind: reinstall.OrderReinstall, Machine: "m1", Generation: 1, Image: "ubuntu-24.04",
		PrimaryDisk: reinstalltest.Inventory().Disks[0].Ref(), Attempt: 1, DiskIntact: true}
}

var scenarios = []scenario{
	{name: "success", want: PhaseBooted, wantWipe: true, wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "lookup-retried", fail: map[CommandKind]int{CmdLookup: 2}, want: PhaseBooted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "lookup-fails", fail: map[CommandKind]int{CmdLookup: 3}, want: PhaseHalted, wantError: "allocation lookup failed 3 times"},
	{name: "not-allocated", order: func(o *reinstall.Order) { *o = reinstall.Order{Kind: reinstall.OrderNotAllocated, Machine: "m1"} },
		want: PhaseHandedOff},
	{name: "boot-local", order: func(o *reinstall.Order) { *o = reinstall.Order{Kind: reinstall.OrderBootLocal, Machine: "m1"} },
		want: PhaseBooted, wantBoot: reinstall.TargetLocalOS},
	{name: "halt-order", order: func(o *reinstall.Order) {
		*o = reinstall.Order{Kind: reinstall.OrderHalt, Machine: "m1", Reason: "the reinstall failed: write failed"}
	}, want: PhaseHalted, wantError: "stays in reinstall"},
	{name: "order-for-another-machine", order: func(o *reinstall.Order) { o.Machine = "m2" }, want: PhaseHalted, wantError: "answered for machine \"m2\""},
	{name: "order-malformed", order: func(o *reinstall.Order) { o.PrimaryDisk = reinstall.DiskRef{} },
		want: PhaseBooted, wantOut: reinstall.OutcomeFailed, wantBoot: reinstall.TargetLocalOS, wantError: "malformed order"},
	{name: "inventory-fails", fail: map[CommandKind]int{CmdReadInventory: 1},
		want: PhaseBooted, wantOut: reinstall.OutcomeFailed, wantBoot: reinstall.TargetLocalOS, wantError: "reading the disk inventory"},
	{name: "inventory-fails-disk-maybe-wiped", order: func(o *reinstall.Order) { o.DiskIntact = false; o.Attempt = 2 },
		fail: map[CommandKind]int{CmdReadInventory: 1}, want: PhaseHalted, wantOut: reinstall.OutcomeFailed, wantError: "reading the disk inventory"},
	{name: "plan-refused-ambiguous", inv: func(inv *reinstall.Inventory) { inv.Disks[1].EtcMetal = true },
		want: PhaseBooted, wantOut: reinstall.OutcomeFailed, wantBoot: reinstall.TargetLocalOS, wantError: "ambiguous primary disk"},
	{name: "plan-refused-serial-changed", inv: func(inv *reinstall.Inventory) { inv.Disks[0].Serial = "OS-9" },
		want: PhaseBooted, wantOut: reinstall.OutcomeFailed, wantBoot: reinstall.TargetLocalOS, wantError: "does not match"},
	{name: "second-attempt-wiped-disk-by-serial", order: func(o *reinstall.Order) { o.DiskIntact = false; o.Attempt = 2 },
		inv: func(inv *reinstall.Inventory) {
			// Renamed at this boot, and wiped by the first attempt.
			inv.Disks[0].Name, inv.Disks[1].Name = "sdb", "sda"
			inv.Disks[0].Partitions = nil
		}, want: PhaseBooted, wantWipe: true, wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "wipe-fails", fail: map[CommandKind]int{CmdWipe: 1}, want: PhaseHalted, wantWipe: true, wantOut: reinstall.OutcomeFailed, wantError: "wiping"},
	{name: "write-fails", fail: map[CommandKind]int{CmdWriteImage: 1}, want: PhaseHalted, wantWipe: true, wantOut: reinstall.OutcomeFailed, wantError: "writing image"},
	{name: "install-fails", fail: map[CommandKind]int{CmdRunInstall: 1}, want: PhaseHalted, wantWipe: true, wantOut: reinstall.OutcomeFailed, wantError: "/install.sh"},
	{name: "success-report-retried", fail: map[CommandKind]int{CmdReport: 4}, want: PhaseBooted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "success-report-lost", fail: map[CommandKind]int{CmdReport: 5}, want: PhaseHalted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantError: "success report was lost"},
	{name: "success-report-stale", stale: true, want: PhaseHalted, wantWipe: true, wantOut: reinstall.OutcomeSucceeded, wantError: "stale"},
	{name: "failure-report-lost-before-wipe", fail: map[CommandKind]int{CmdReadInventory: 1, CmdReport: 5},
		want: PhaseBooted, wantOut: reinstall.OutcomeFailed, wantBoot: reinstall.TargetLocalOS, wantError: "reading the disk inventory"},
	{name: "failure-report-lost-after-wipe", fail: map[CommandKind]int{CmdWriteImage: 1, CmdReport: 5},
		want: PhaseHalted, wantWipe: true, wantOut: reinstall.OutcomeFailed, wantError: "writing image"},
	{name: "boot-order-fails", fail: map[CommandKind]int{CmdSetBootOrder: 3}, want: PhaseBooted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "network-fails", fail: map[CommandKind]int{CmdSetNetwork: 3}, want: PhaseBooted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "kexec-retried", fail: map[CommandKind]int{CmdKexec: 1}, want: PhaseBooted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantBoot: reinstall.TargetNewOS},
	{name: "kexec-fails", fail: map[CommandKind]int{CmdKexec: 2}, want: PhaseHalted, wantWipe: true,
		wantOut: reinstall.OutcomeSucceeded, wantError: "kexec into the new-os failed"},
}

// run drives Step with scripted ports and returns the transcript.
func (sc scenario) run(t *testing.T) (State, []string, []Command) {
	order := reinstallOrder()
	if sc.order != nil {
		sc.order(&order)
	}
	inv := reinstalltest.Inventory()
	if sc.inv != nil {
		sc.inv(&inv)
	}
	calls := map[CommandKind]int{}
	s := NewState("m1", Limits{Backoff: time.Second, MaxBackoff: 4 * time.Second})
	ev := Event{Kind: EventBoot}
	var out []string
	var io []Command
	for i := 0; ; i++ {
		require.Less(t, i, 100, "the run does not end")
		before := s
		next, cmds, err := Step(s, ev)
		require.NoError(t, err)
		assert.Equal(t, before, s, "Step must not change its input")
		out = append(out, fmt.Sprintf("%s -> %s", describe(ev), next.Summary()))
		s = next
		var c *Command
		for j := range cmds {
			out = append(out, "  "+cmds[j].String())
			if cmds[j].Kind == CmdWait {
				require.Less(t, j, len(cmds)-1, "a wait is never last")
				continue
			}
			require.Nil(t, c, "at most one I/O command")
			c = &cmds[j]
		}
		if c == nil {
			require.True(t, s.Phase.Terminal(), "no command in phase %v", s.Phase)
			return s, out, io
		}
		require.False(t, s.Phase.Terminal())
		io = append(io, *c)
		ev = Event{Kind: c.Kind.Event()}
		calls[c.Kind]++
		switch {
		case calls[c.Kind] <= sc.fail[c.Kind]:
			ev.Err = errFault
		case c.Kind == CmdReport && sc.stale:
			ev.Err = fmt.Errorf("%w: not the current attempt", reinstall.ErrStaleReport)
		case c.Kind == CmdLookup:
			ev.Order = order
		case c.Kind == CmdReadInventory:
			ev.Inventory = inv
		}
	}
}

func describe(e Event) string {
	s := "event " + e.Kind.String()
	switch {
	case e.Err != nil:
		s += " error: " + e.Err.Error()
	case e.Kind == EventLookup:
		o := e.Order
		s += " " + o.Kind.String()
		if o.Kind == reinstall.OrderReinstall {
			s += fmt.Sprintf(" generation %d attempt %d image %s disk %v intact=%v", o.Generation, o.Attempt, o.Image, o.PrimaryDisk, o.DiskIntact)
		}
	case e.Kind == EventInventory:
		var names []string
		for _, d := range e.Inventory.Disks {
			n := d.Name
			if d.HoldsEtcMetal() {
				n += "(/etc/metal)"
			}
			names = append(names, n)
		}
		s += " " + strings.Join(names, " ")
	}
	return s
}

func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, out, _ := sc.run(t)
			text := "# " + sc.name + "\n" + strings.Join(out, "\n") + "\n"
			file := filepath.Join("testdata", sc.name+".txt")
			if *rewrite {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
				return
			}
			want, err := os.ReadFile(file)
			require.NoError(t, err, "run with -rewrite to create it")
			assert.Equal(t, string(want), text)
		})
	}
}

// TestFailurePoints checks, for every scenario, what matters: which disk
// was wiped, what was reported, what was booted.
func TestFailurePoints(t *testing.T) {
	primary := reinstalltest.Inventory().Disks[0]
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s, _, io := sc.run(t)
			assert.Equal(t, sc.want, s.Phase)
			var wipes, reports []Command
			for _, c := range io {
				switch c.Kind {
				case CmdWipe, CmdWriteImage, CmdRunInstall:
					// Only ever the pinned primary disk, by serial.
					assert.Equal(t, primary.Serial, c.Disk.Serial)
					assert.Equal(t, primary.Size, c.Disk.Size)
					if c.Kind == CmdWipe {
						wipes = append(wipes, c)
					}
				case CmdReport:
					reports = append(reports, c)
				case CmdKexec:
					assert.Equal(t, sc.wantBoot != reinstall.TargetNone || sc.want == PhaseHalted, true)
				}
			}
			assert.Equal(t, sc.wantWipe, len(wipes) == 1)
			assert.LessOrEqual(t, len(wipes), 1)
			assert.Equal(t, sc.wantWipe, s.Wiped)
			if sc.wantOut == reinstall.OutcomeNone {
				assert.Empty(t, reports)
			} else {
				require.NotEmpty(t, reports)
				last := reports[len(reports)-1].Report
				assert.Equal(t, sc.wantOut, last.Outcome)
				assert.Equal(t, s.Wiped, last.Wiped)
				assert.Equal(t, "m1", last.Machine)
			}
			if sc.want == PhaseBooted {
				assert.Equal(t, sc.wantBoot, s.Target)
			}
			if sc.wantError != "" {
				assert.Contains(t, s.Halt+" "+s.Failure, sc.wantError)
			}
			// A reinstall that booted the old OS never wiped; one that
			// wiped and failed never boots anything.
			if s.Target == reinstall.TargetLocalOS {
				assert.False(t, s.Wiped)
			}
			if s.Wiped && s.Failure != "" {
				assert.Equal(t, PhaseHalted, s.Phase)
			}
		})
	}
}

func TestStepRefusesUnexpectedEvents(t *testing.T) {
	s := NewState("m1", Limits{})
	_, _, err := Step(s, Event{Kind: EventWipe})
	require.ErrorIs(t, err, ErrUnexpectedEvent)
	s, _, err = Step(s, Event{Kind: EventBoot})
	require.NoError(t, err)
	got, cmds, err := Step(s, Event{Kind: EventBoot})
	require.ErrorIs(t, err, ErrUnexpectedEvent)
	assert.Equal(t, s, got)
	assert.Nil(t, cmds)

	halted := halt(s, "x")
	_, _, err = Step(halted, Event{Kind: EventLookup})
	require.ErrorIs(t, err, ErrUnexpectedEvent)
}

func TestStepNeverAliasesWarnings(t *testing.T) {
	s := NewState("m1", Limits{PortTries: 1, Backoff: -1})
	s.Phase = PhaseBootOrder
	s.Warnings = make([]string, 1, 10)
	a, _, err := Step(s, Event{Kind: EventBootOrder, Err: errFault})
	require.NoError(t, err)
	b, _, err := Step(s, Event{Kind: EventBootOrder, Err: errors.New("other")})
	require.NoError(t, err)
	assert.Contains(t, a.Warnings[1], "injected fault")
	assert.Contains(t, b.Warnings[1], "other")
}

func TestBackoff(t *testing.T) {
	l := Limits{Backoff: time.Second, MaxBackoff: 5 * time.Second}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, retry(l, n, Command{Kind: CmdLookup})[0].Delay)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	assert.Len(t, retry(Limits{Backoff: -1}, 3, Command{Kind: CmdLookup}), 1)
	d := Limits{}.withDefaults()
	assert.Equal(t, Limits{LookupTries: 3, ReportTries: 5, PortTries: 3, KexecTries: 2, Backoff: time.Second, MaxBackoff: 30 * time.Second}, d)
}
