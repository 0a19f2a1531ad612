package brocade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// agentRule is the reference agent's reading of switchshow (fence_brocade
// 4.12.1, get_power_status): after the ===== line, a line starting with a
// digit is a port named by its first word, off when its eighth word is
// "Disabled", on otherwise.
func agentRule(out string) map[string]fence.State {
	got := map[string]fence.State{}
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "=========") {
			in = true
			continue
		}
		t := strings.TrimLeft(l, " \t\r\n\v\f")
		if !in || t == "" || t[0] < '0' || t[0] > '9' {
			continue
		}
		f := strings.Fields(t)
		st := fence.StateOn
		if len(f) > 7 && f[7] == "Disabled" {
			st = fence.StateOff
		}
		got[f[0]] = st
	}
	return got
}

func states(t *swTable) map[string]fence.State {
	out := map[string]fence.State{}
	for _, p := range t.Ports {
		out[p.ID()] = p.State
	}
	return out
}

const (
	on      = fence.StateOn
	off     = fence.StateOff
	unknown = fence.StateUnknown
)

func TestParseSwitchShowFOS8(t *testing.T) {
	out := fixture(t, "switchshow_fos8.txt")
	tab, err := parseSwitchShow(out)
	require.NoError(t, err)
	assert.False(t, tab.Director)
	assert.Zero(t, tab.Bad)
	// Ports 6 (Disabled) and 24 (Disabled (No POD License)) are disabled,
	// but not persistently: switchshow does not tell whether they are
	// fenced, portshow does.
	want := map[string]fence.State{"0": on, "1": off, "2": on, "3": on, "4": on, "5": on, "6": unknown, "7": off,
		"8": on, "9": on, "10": on, "11": on, "24": unknown}
	assert.Equal(t, want, states(tab))
	// The reference agent reads this layout the same way, except that it
	// takes any disable for a fence.
	agent := agentRule(out)
	assert.Equal(t, off, agent["6"])
	assert.Equal(t, off, agent["24"])
	agent["6"], agent["24"] = unknown, unknown
	assert.Equal(t, agent, states(tab))
	p, ok := tab.find("07")
	require.True(t, ok)
	assert.Equal(t, "7", p.Arg())
	_, ok = tab.find("12")
	assert.False(t, ok)
	// CRLF line ends, as from a terminal, change nothing.
	crlf, err := parseSwitchShow(strings.ReplaceAll(out, "\n", "\r\n"))
	require.NoError(t, err)
	assert.Equal(t, want, states(crlf))
}

func TestParseSwitchShowDirector(t *testing.T) {
	out := fixture(t, "switchshow_director.txt")
	tab, err := parseSwitchShow(out)
	require.NoError(t, err)
	assert.True(t, tab.Director)
	want := map[string]fence.State{"1/0": on, "1/1": off, "1/2": on, "2/0": on, "2/1": on, "2/2": unknown, "8/0": on, "8/1": off}
	assert.Equal(t, want, states(tab))
	for plug, arg := range map[string]string{"18": "2/2", "2/2": "2/2", "193": "8/1", "8/1": "8/1"} {
		p, ok := tab.find(plug)
		require.True(t, ok, plug)
		assert.Equal(t, arg, p.Arg(), plug)
	}
	_, ok := tab.find("3/0")
	assert.False(t, ok)
	// The reference agent reads the eighth word, which is the Proto
	// column here: every port reads as on, and a port is named by its
	// index only.
	for _, st := range agentRule(out) {
		assert.Equal(t, on, st)
	}
}

func TestParseSwitchShowOddLines(t *testing.T) {
	tab, err := parseSwitchShow(fixture(t, "switchshow_odd_lines.txt"))
	require.NoError(t, err)
	assert.Equal(t, map[string]fence.State{"0": on, "1": off, "2": unknown, "3": unknown, "4": unknown, "6": unknown}, states(tab))
	assert.Equal(t, 1, tab.Bad, "the line of port 5x")
	for _, p := range tab.Ports {
		if p.State == unknown {
			assert.NotEmpty(t, p.Why, p.Line)
		} else {
			assert.Empty(t, p.Why, p.Line)
		}
	}
}

func TestParseSwitchShowRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"truncated":   fixture(t, "switchshow_truncated.txt"),
		"empty":       "",
		"garbage":     "\x1b[7m#@!\x1b[0m ~~~~ \xff\xfe 0x7f3a\n   3   3   ::::   Disabled (Persistent)\n",
		"no header":   "=====\n  1 1 010100 id N16 No_Light FC Disabled\n",
		"odd header":  "Port Media Speed\n======\n  1 1 010100 id N16 No_Light FC Disabled\n",
		"no ports":    "Index Port Address Media Speed State Proto\n=====\n",
		"twice":       "Index Port Address Media Speed State Proto\n=====\n 1 1 01 id N8 Online FC\n 1 1 01 id N8 Online FC\n",
		"proto first": "Index Port Proto State\n=====\n 1 1 FC Online\n",
	} {
		_, err := parseSwitchShow(in)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}

func TestParsePortShow(t *testing.T) {
	p, err := parsePortShow(fixture(t, "portshow_enabled.txt"))
	require.NoError(t, err)
	assert.Equal(t, psPort{Index: 3, State: on}, p)
	p, err = parsePortShow(fixture(t, "portshow_disabled.txt"))
	require.NoError(t, err)
	assert.Equal(t, psPort{Index: 1, State: off}, p)
	// Disabled for now, not persistently: not a fence.
	p, err = parsePortShow(fixture(t, "portshow_contradiction.txt"))
	require.NoError(t, err)
	assert.Equal(t, on, p.State, "a disable that is not persistent is on")
	p, err = parsePortShow("portDisableReason: User disabled\nportFlags: 0x4001\tPRESENT U_PORT DISABLED LED\n")
	require.NoError(t, err)
	assert.Equal(t, on, p.State)
	p, err = parsePortShow("portDisableReason: None\nportFlags: 0x4001\tPRESENT U_PORT DISABLED LED PERSISTENT_DISABLE\n")
	require.NoError(t, err)
	assert.Equal(t, unknown, p.State)
	assert.Contains(t, p.Why, "contradicts")
	p, err = parsePortShow("portDisableReason: None\n")
	require.NoError(t, err)
	assert.Equal(t, on, p.State)
	_, err = parsePortShow("portState: 1 Online\n")
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestClassifyReply(t *testing.T) {
	for in, want := range map[string]replyKind{
		"":                                   replyOK,
		"\r\n  \r\n":                         replyOK,
		"RBAC permission denied.":            replyRefused,
		"rbash: portcfgx: command not found": replyRefused,
		"Usage: portCfgPersistentDisable [slot/]port":      replyRefused,
		"Invalid port number 99":                           replyNoSuchPort,
		"Error: port 3 is not a valid port":                replyNoSuchPort,
		"please wait...\nCommitting configuration...done.": replyUnexpected,
		"\xff\xfe ~~~": replyUnexpected,
	} {
		got, text := classifyReply(in)
		assert.Equal(t, want, got, "%q", in)
		if want == replyOK {
			assert.Empty(t, text)
		} else {
			assert.NotEmpty(t, text)
		}
	}
}

func TestPrompt(t *testing.T) {
	for _, l := range []string{"sw0:FID128:admin> ", "sw0:admin>", "  dcx-a:FID10:fencekit-fc>  ", "sw_1.lab:AD5:root>"} {
		assert.True(t, isPrompt(nil, l), "%q", l)
	}
	for _, l := range []string{"", "Welcome> ", "admin>", "sw0:FID128:admin> switchshow", "a > b", "sw0:FID128:ad min>", strings.Repeat("a:", 200) + ">"} {
		assert.False(t, isPrompt(nil, l), "%q", l)
	}
	start, l := lastLine([]byte("banner\r\n\x1b[1msw0:admin> \x1b[0m"))
	assert.Equal(t, 8, start)
	assert.Equal(t, "sw0:admin> ", l)
}

func TestParsePlug(t *testing.T) {
	for in, want := range map[string][4]int{"3": {0, 3, 0, 1}, " 12 ": {0, 12, 0, 1}, "2/15": {2, 15, 1, 1}, "007": {0, 7, 0, 1}} {
		s, n, isSlot, ok := parsePlug(in)
		assert.Equal(t, want, [4]int{s, n, b2i(isSlot), b2i(ok)}, in)
	}
	for _, in := range []string{"", "-1", "+1", "3;portcfgpersistentdisable 4", "1/", "/1", "a", "1/2/3", "1234567", "3 4"} {
		_, _, _, ok := parsePlug(in)
		assert.False(t, ok, "%q", in)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// switchshowSeeds are the fuzzers' seeds: the fixtures and variations.
func switchshowSeeds(f *testing.F) {
	for _, name := range []string{"switchshow_fos8.txt", "switchshow_director.txt", "switchshow_odd_lines.txt", "switchshow_truncated.txt"} {
		f.Add(fixture(f, name))
	}
	f.Add("Index Port Address Media Speed State Proto\n=====\n 1 1 01 id N8 Online FC Disabled Disabled\n")
	f.Add("Area Port Media Speed State\n=====\n  0   0   id    N4   No_Light  Disabled\n")
	f.Add("Index Port Address Media Speed State Proto\r\n=====\r\n\t1\t1\t01\tid\tN8\tOnline\tFC\t\"Dis abled\" Disabled\r\n")
}

func FuzzParseSwitchShow(f *testing.F) {
	switchshowSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := parseSwitchShow(in)
		if err != nil {
			if !strings.Contains(err.Error(), ErrMalformed.Error()) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(tab.Ports) == 0 {
			t.Fatal("no error and no port")
		}
		seen := map[int]bool{}
		for _, p := range tab.Ports {
			if seen[p.Index] {
				t.Fatalf("port %d twice", p.Index)
			}
			seen[p.Index] = true
			// Off only from a "Disabled" in the port's own line.
			if p.State == fence.StateOff && !strings.Contains(strings.ToLower(p.Line), "disabled") {
				t.Fatalf("port %d off without Disabled in %q", p.Index, p.Line)
			}
			if (p.State == fence.StateUnknown) != (p.Why != "") {
				t.Fatalf("port %d: state %v, why %q", p.Index, p.State, p.Why)
			}
			if _, ok := tab.find(p.ID()); !ok {
				t.Fatalf("port %d: its ID %q does not find it", p.Index, p.ID())
			}
		}
		// Line ends as a terminal writes them change nothing.
		again, err := parseSwitchShow(strings.ReplaceAll(in, "\n", "\r\n"))
		if err != nil {
			t.Fatalf("CRLF: %v", err)
		}
		a, b := states(tab), states(again)
		for id, st := range a {
			if b[id] != st {
				t.Fatalf("CRLF: port %s %v, was %v", id, b[id], st)
			}
		}
	})
}

func FuzzParsePortShow(f *testing.F) {
	for _, name := range []string{"portshow_enabled.txt", "portshow_disabled.txt", "portshow_contradiction.txt"} {
		f.Add(fixture(f, name))
	}
	f.Add("portFlags: 0x1 DISABLED\nportDisableReason: None\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := parsePortShow(in)
		if err != nil {
			return
		}
		if p.State == fence.StateOff && !strings.Contains(in, "DISABLE") && !strings.Contains(in, "portDisableReason") {
			t.Fatalf("off without a disable flag or reason: %q", in)
		}
		if (p.State == fence.StateUnknown) != (p.Why != "") {
			t.Fatalf("state %v, why %q", p.State, p.Why)
		}
	})
}

func FuzzClassifyReply(f *testing.F) {
	f.Add("")
	f.Add("RBAC permission denied.")
	f.Add("Invalid port number 99")
	f.Add("please wait...")
	f.Fuzz(func(t *testing.T, in string) {
		k, text := classifyReply(in)
		if (k == replyOK) != (strings.TrimFunc(ansi.ReplaceAllString(in, ""), blank) == "") {
			t.Fatalf("%q: kind %v, text %q", in, k, text)
		}
	})
}
