package brocade

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/fencekit/fencekit/fence"
)

// This file reads the switch's answers: switchshow's port table, and
// portshow's flags.
//
// switchshow prints the switch's attributes, then a header line, a line
// of '=', and one line per port:
//
//	Index Port Address  Media Speed   State       Proto
//	==================================================
//	    0    0   010000   id    N16   Online      FC  F-Port  10:00:00:00:c9:00:00:00
//	    3    3   010300   id    N16   No_Light    FC  Disabled (Persistent)
//
// A director has a Slot column (Index Slot Port Address ...). The
// reference agent reads a port as off when the line's eighth word is
// "Disabled" and as on otherwise, and names ports by their Index. This
// parser finds the columns by the header instead: the port's comment
// starts after its Proto column (after State when there is no Proto), and
// the port is off when the comment starts with "Disabled", on when it does
// not. A line too short to have a State column, or with "Disabled"
// elsewhere in its comment, has no usable state: it is reported unknown,
// never off.

// swPort is one port of switchshow's table.
type swPort struct {
	Index  int         // the Index column (or Port, when there is no Index)
	Slot   int         // the Slot column; -1 when there is none
	Number int         // the Port column (the port within its slot); Index when there is none
	State  fence.State // StateUnknown when the line does not tell
	Why    string      // why the state is unknown
	Line   string      // the line, spacing collapsed
}

// ID returns the port's plug: its index, as the reference agent names
// it; slot/port on a director, as FOS names it there.
func (p swPort) ID() string {
	if p.Slot >= 0 {
		return p.Arg()
	}
	return strconv.Itoa(p.Index)
}

// Arg returns the port as FOS port commands take it: slot/port on a
// director, the port number on a switch.
func (p swPort) Arg() string {
	if p.Slot >= 0 {
		return strconv.Itoa(p.Slot) + "/" + strconv.Itoa(p.Number)
	}
	return strconv.Itoa(p.Number)
}

// swTable is switchshow's port table.
type swTable struct {
	Ports    []swPort // in the table's order
	Director bool     // the table has a Slot column
	Bad      int      // lines starting with a digit that are not port lines
}

// find returns the port a plug names: an index, or slot/port on a
// director.
func (t *swTable) find(plug string) (swPort, bool) {
	slot, num, isSlot, ok := parsePlug(plug)
	if !ok {
		return swPort{}, false
	}
	for _, p := range t.Ports {
		if isSlot {
			if p.Slot == slot && p.Number == num {
				return p, true
			}
		} else if p.Index == num {
			return p, true
		}
	}
	return swPort{}, false
}

// maxDigits bounds the digits of a port, slot or index number.
const maxDigits = 6

// parsePlug reads a plug: "N" (a port index) or "S/N" (slot/port).
func parsePlug(plug string) (slot, num int, isSlot, ok bool) {
	plug = strings.TrimSpace(plug)
	digits := func(s string) (int, bool) {
		if s == "" || len(s) > maxDigits {
			return 0, false
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	if s, n, cut := strings.Cut(plug, "/"); cut {
		sl, ok1 := digits(s)
		pn, ok2 := digits(n)
		return sl, pn, true, ok1 && ok2
	}
	n, ok := digits(plug)
	return 0, n, false, ok
}

// ansi matches terminal escape sequences (CSI and OSC) and other escapes.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// splitLines splits text into lines at "\n", "\r\n" and lone "\r", with
// escape sequences removed and trailing blanks trimmed.
func splitLines(s string) []string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansi.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\v\f\x00")
	}
	return lines
}

// isRule reports whether a line is switchshow's "=====" rule.
func isRule(l string) bool {
	l = strings.TrimSpace(l)
	return len(l) >= 5 && strings.Trim(l, "=") == ""
}

// parseSwitchShow reads switchshow's output. Errors wrap ErrMalformed.
func parseSwitchShow(out string) (*swTable, error) {
	lines := splitLines(out)
	rule := -1
	header := ""
	for i, l := range lines {
		if isRule(l) {
			rule = i
			for j := i - 1; j >= 0; j-- {
				if strings.TrimSpace(lines[j]) != "" {
					header = lines[j]
					break
				}
			}
			break
		}
	}
	if rule < 0 {
		return nil, fmt.Errorf("%w: switchshow has no port table (no ===== line)", ErrMalformed)
	}
	cols := strings.Fields(header)
	col := func(name string) int {
		for i, c := range cols {
			if strings.EqualFold(c, name) {
				return i
			}
		}
		return -1
	}
	idxCol, slotCol, portCol, stateCol, protoCol := col("Index"), col("Slot"), col("Port"), col("State"), col("Proto")
	if idxCol < 0 {
		idxCol = portCol
	}
	if idxCol < 0 || stateCol < 0 || stateCol <= idxCol || (protoCol >= 0 && protoCol < stateCol) {
		return nil, fmt.Errorf("%w: switchshow's port table header %q is not Index Port ... State Proto", ErrMalformed, clip(header, 120))
	}
	t := &swTable{Director: slotCol >= 0}
	seen := map[int]bool{}
	for _, l := range lines[rule+1:] {
		tl := strings.TrimSpace(l)
		if tl == "" || tl[0] < '0' || tl[0] > '9' {
			continue
		}
		f := strings.Fields(tl)
		p, ok := portLine(f, idxCol, slotCol, portCol, stateCol, protoCol)
		if !ok {
			t.Bad++
			continue
		}
		if seen[p.Index] {
			return nil, fmt.Errorf("%w: switchshow lists port %d twice", ErrMalformed, p.Index)
		}
		seen[p.Index] = true
		p.Line = clip(tl, 160)
		t.Ports = append(t.Ports, p)
	}
	if len(t.Ports) == 0 {
		return nil, fmt.Errorf("%w: switchshow's port table has no port line", ErrMalformed)
	}
	return t, nil
}

// portLine reads one port line, split into words.
func portLine(f []string, idxCol, slotCol, portCol, stateCol, protoCol int) (swPort, bool) {
	num := func(i int) (int, bool) {
		if i < 0 || i >= len(f) {
			return 0, false
		}
		if len(f[i]) > maxDigits {
			return 0, false
		}
		n, err := strconv.Atoi(f[i])
		return n, err == nil && n >= 0 && !strings.HasPrefix(f[i], "+")
	}
	p := swPort{Slot: -1}
	var ok bool
	if p.Index, ok = num(idxCol); !ok {
		return p, false
	}
	p.Number = p.Index
	if slotCol >= 0 {
		if p.Slot, ok = num(slotCol); !ok {
			return p, false
		}
	}
	if portCol >= 0 && portCol != idxCol {
		if p.Number, ok = num(portCol); !ok {
			return p, false
		}
	}
	if len(f) <= stateCol {
		p.Why = "the port's line has no State column"
		return p, true
	}
	if st := f[stateCol]; !(st[0] >= 'A' && st[0] <= 'Z' || st[0] >= 'a' && st[0] <= 'z') {
		p.Why = fmt.Sprintf("the port's State column holds %q", clip(st, 40))
		return p, true
	}
	start := stateCol + 1
	if protoCol > stateCol {
		start = protoCol + 1
	}
	var comment []string
	if start < len(f) {
		comment = f[start:]
	}
	p.State = fence.StateOn
	if len(comment) > 0 && strings.EqualFold(comment[0], "Disabled") {
		// Only a persistent disable fences: a port disabled by portdisable
		// comes back with a switch reboot or a portenable. FOS writes
		// "Disabled (Persistent)" for it; any other disable is left to
		// portshow's flags.
		if len(comment) > 1 && strings.EqualFold(comment[1], "(Persistent)") {
			p.State = fence.StateOff
		} else {
			p.State = fence.StateUnknown
			p.Why = "the port is disabled, and switchshow does not say persistently"
		}
	}
	// "Disabled" anywhere else in the comment, outside a quoted name: the
	// line does not read as FOS writes it.
	quoted := false
	for i, w := range comment {
		if strings.Count(w, `"`)%2 == 1 {
			quoted = !quoted
		}
		if i > 0 && !quoted && strings.EqualFold(strings.Trim(w, "()[],."), "Disabled") {
			p.State = fence.StateUnknown
			p.Why = "the port's comment holds \"Disabled\" where FOS does not write it"
		}
	}
	return p, true
}

// psPort is what portshow says of a port.
type psPort struct {
	Index int         // portIndex; -1 when not shown
	State fence.State // StateUnknown when portshow does not tell
	Why   string      // why the state is unknown
}

// parsePortShow reads portshow's output: portFlags (PERSISTENT_DISABLE)
// and portDisableReason (None when enabled, "Persistently disabled" for a
// persistent disable). A port is off only when persistently disabled; one
// disabled for now (DISABLED alone, "User disabled") is on. The state is
// known only when what is shown agrees. Errors wrap ErrMalformed.
func parsePortShow(out string) (psPort, error) {
	p := psPort{Index: -1}
	var flags, reason string
	var haveFlags, haveReason bool
	for _, l := range splitLines(out) {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "portIndex":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				p.Index = n
			}
		case "portFlags":
			flags, haveFlags = v, true
		case "portDisableReason":
			reason, haveReason = v, true
		}
	}
	if !haveFlags && !haveReason {
		return p, fmt.Errorf("%w: portshow has neither portFlags nor portDisableReason", ErrMalformed)
	}
	votes := map[fence.State]bool{}
	// Off means persistently disabled: a port disabled only for now
	// (portdisable) is on for fencing purposes, since a switch reboot or a
	// portenable reconnects the node to its storage.
	if haveFlags {
		persistent := slices.Contains(strings.Fields(flags), "PERSISTENT_DISABLE")
		if persistent {
			votes[fence.StateOff] = true
		} else {
			votes[fence.StateOn] = true
		}
	}
	if haveReason {
		switch {
		case reason == "":
		case strings.Contains(strings.ToLower(reason), "persistent"):
			votes[fence.StateOff] = true
		default:
			// None, or a disable that is not persistent.
			votes[fence.StateOn] = true
		}
	}
	switch {
	case votes[fence.StateOn] && votes[fence.StateOff]:
		p.Why = fmt.Sprintf("portshow contradicts itself: portFlags %q, portDisableReason %q", clip(flags, 80), clip(reason, 60))
	case votes[fence.StateOff]:
		p.State = fence.StateOff
	case votes[fence.StateOn]:
		p.State = fence.StateOn
	default:
		p.Why = "portshow shows no flags"
	}
	return p, nil
}

// replyKind is what the answer to a port command says.
type replyKind uint8

const (
	replyOK         replyKind = iota // nothing: FOS's answer when the command worked
	replyRefused                     // an error message: the switch did not act
	replyNoSuchPort                  // the switch has no such port
	replyUnexpected                  // anything else: the outcome is unknown
)

// refusals are phrases (lower case) of FOS's and its shell's error
// messages.
var refusals = []string{
	"command not found", "permission denied", "rbac", "not permitted", "not allowed",
	"error", "usage:", "failed", "denied", "unable to", "cannot", "can not",
	"not supported", "unknown command", "invalid",
}

// noSuchPort are phrases (lower case) of FOS's answer for a port it lacks.
var noSuchPort = []string{
	"invalid port", "invalid slot", "not a valid port", "no such port", "port number out of range",
	"port index out of range", "invalid [slot/]port",
}

// blank reports whether r is white space or NUL, which terminals pad with.
func blank(r rune) bool { return r == 0 || unicode.IsSpace(r) }

// classifyReply reads the answer to a port command.
func classifyReply(out string) (replyKind, string) {
	var kept []string
	for _, l := range splitLines(out) {
		if l = strings.TrimFunc(l, blank); l != "" {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		return replyOK, ""
	}
	text := strings.Join(kept, " / ")
	low := strings.ToLower(text)
	for _, s := range noSuchPort {
		if strings.Contains(low, s) {
			return replyNoSuchPort, text
		}
	}
	for _, s := range refusals {
		if strings.Contains(low, s) {
			return replyRefused, text
		}
	}
	return replyUnexpected, text
}
