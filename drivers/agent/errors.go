package agent

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
)

// Sentinels of this package, checked with errors.Is.
var (
	// ErrAgentFailed means the agent failed in a way this package does not
	// recognise: an exit status and messages outside the table of doc.go,
	// or a crash (a Python traceback). The outcome of a Set is unknown.
	ErrAgentFailed = errors.New("agent failed")
	// ErrGarbage means the agent's output makes no sense for the action: a
	// status with no "Status: ON|OFF" line or one that contradicts the exit
	// status, a set that exits 0 without a "Success:" line, a plug list
	// line without a separator. Errors wrapping it from Status also wrap
	// fence.ErrBadState.
	ErrGarbage = errors.New("agent output makes no sense")
	// ErrClosed means the device was closed.
	ErrClosed = errors.New("device closed")
)

// Error is the error of one run of an agent. It names the agent, the
// device's host (the ip parameter, when the agent has one), the action,
// the plug and the exit status, and quotes the agent's last error lines,
// with every secret parameter's value taken out. It never holds the
// agent's standard input.
type Error struct {
	// Agent is the agent's file name, such as "fence_ipmilan".
	Agent string
	// Host is the device's address as the parameters give it (ip, with
	// ipport when set), or empty.
	Host string
	// Action is what the agent was asked: "status", "on", "off", "reboot"
	// (a native cycle), "list", "list-status", "monitor" or "metadata".
	Action string
	// Plug is the plug acted on, if any.
	Plug string
	// Exit is the agent's exit status, -1 when it did not exit by itself
	// (never started, killed).
	Exit int
	// Output is the agent's last error lines (at most three, each at most
	// 200 characters), secrets replaced by REDACTED.
	Output string
	// Err is the cause; it wraps fence's sentinels (see doc.go).
	Err error
}

// Error returns "agent AGENT (HOST): ACTION plug "PLUG": exit status N:
// CAUSE; agent said: OUTPUT", leaving out the parts that are not known.
func (e *Error) Error() string {
	who, what := "agent "+e.Agent, e.Action
	if e.Host != "" {
		who += " (" + e.Host + ")"
	}
	if e.Plug != "" {
		what += " plug " + strconv.Quote(e.Plug)
	}
	var b errfmt.Labels
	b.Start(who).Part(what)
	if e.Exit >= 0 {
		b.Part("exit status " + strconv.Itoa(e.Exit))
	}
	msg := b.Cause(e.Err, "failed")
	if e.Output != "" {
		msg += "; agent said: " + e.Output
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the agent was killed for running out of time, or
// timed out waiting for the device.
func (e *Error) Timeout() bool {
	return errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, fence.ErrTimeout)
}

// rule recognises an agent failure by the words of its messages.
type rule struct {
	words    []string // any of them, in the lower-cased error lines
	sentinel error
	what     string
	notDone  bool // the agent surely did not act
}

// rules are tried in order against the agent's error lines (standard error
// without its WARNING lines; standard output when that is empty). The
// messages are fencing.py's (fail and fail_usage) and those of common
// agents and libraries; see doc.go.
var rules = []rule{
	{[]string{"unable to connect/login to fencing device"}, fence.ErrLoginDenied, "the agent could not connect or log in", true},
	{[]string{"does not have the correct privileges"}, fence.ErrLoginDenied, "the user lacks the privileges for the action", true},
	{[]string{"connection refused", "failed to establish a new connection", "name or service not known",
		"no route to host", "temporary failure in name resolution", "network is unreachable", "could not resolve host"},
		fence.ErrUnreachable, "connection refused or host unknown", true},
	{[]string{"timed out waiting to power"}, fence.ErrTimeout, "as the agent reports", false},
	{[]string{"connection timed out", "read timed out", "timed out", "timeout: no response"}, fence.ErrUnreachable, "no answer in time", false},
	{[]string{"connection lost"}, fence.ErrUnreachable, "the connection dropped", false},
	{[]string{"can not find vm uuid", "you have to enter existing machine", "can't find port", "cannot find port"}, fence.ErrUnknownPlug, "as the agent reports", true},
	{[]string{"unable to obtain correct plug status", "unable to get powerstate", "couldn't get power information"},
		fence.ErrBadState, "as the agent reports", false},
	{[]string{"you have to ", "parse error", "unrecognised action", "is not a valid", "not a valid choice",
		"unable to run ", "validate-all failed", "unable to create file", "identity file"},
		fence.ErrConfig, "the agent refused its options", true},
}

// exitCodes are the meanings of the exit statuses of fencing.py's EC_
// constants, for agents that exit with them (fencing.py 4.x exits 1 for
// every failure; older agents and others exit with the code itself). They
// apply when no rule matches the messages.
var exitCodes = map[int]rule{
	2:  {nil, fence.ErrConfig, "bad arguments (EC_BAD_ARGS)", true},
	3:  {nil, fence.ErrLoginDenied, "login denied (EC_LOGIN_DENIED)", true},
	4:  {nil, fence.ErrUnreachable, "connection lost (EC_CONNECTION_LOST)", false},
	5:  {nil, fence.ErrUnreachable, "connection timed out (EC_TIMED_OUT)", false},
	6:  {nil, fence.ErrTimeout, "timed out waiting to power on (EC_WAITING_ON)", false},
	7:  {nil, fence.ErrTimeout, "timed out waiting to power off (EC_WAITING_OFF)", false},
	8:  {nil, fence.ErrBadState, "unable to obtain the plug's status (EC_STATUS)", false},
	9:  {nil, fence.ErrBadState, "unable to obtain the plug's status (EC_STATUS_HMC)", false},
	10: {nil, fence.ErrConfig, "password missing (EC_PASSWORD_MISSING)", true},
	11: {nil, fence.ErrLoginDenied, "insufficient privileges (EC_INVALID_PRIVILEGES)", true},
	12: {nil, fence.ErrUnknownPlug, "no such VM (EC_FETCH_VM_UUID)", true},
}

// classify explains a run that exited with a status other than success:
// the cause, wrapping fence's sentinels, and whether the agent surely did
// not act. A crash (a Python traceback) never counts as "not done".
func classify(out runOutput) (error, bool) {
	msg := strings.ToLower(errorText(out))
	crashed := strings.Contains(msg, "traceback (most recent call last)")
	for _, r := range rules {
		for _, w := range r.words {
			if strings.Contains(msg, w) {
				return fmt.Errorf("%w: %s", r.sentinel, r.what), r.notDone && !crashed
			}
		}
	}
	if r, ok := exitCodes[out.exit]; ok {
		return fmt.Errorf("%w: %s", r.sentinel, r.what), r.notDone && !crashed
	}
	if crashed {
		return fmt.Errorf("%w: it crashed", ErrAgentFailed), false
	}
	return ErrAgentFailed, false
}

// errorText is what classify reads: standard error without its WARNING
// lines, or standard output when nothing is left.
func errorText(out runOutput) string {
	var keep []string
	for _, l := range strings.Split(string(out.stderr), "\n") {
		if !strings.Contains(l, "WARNING") && strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return string(out.stdout)
	}
	return strings.Join(keep, "\n")
}

// Bounds of Error.Output.
const (
	maxOutputLines = 3
	maxLineLength  = 200
	// minScrub is the shortest secret value that is scrubbed from an
	// agent's output; with a shorter one set, the output is withheld.
	minScrub = 4
)

// logPrefix matches the prefixes of Python's logging in the agents: a
// timestamp and level ("2026-11-22 11:00:35,197 ERROR: "), or the root
// logger's "ERROR:root:".
var logPrefix = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ )?(ERROR|CRITICAL|WARNING|INFO|DEBUG)(:root)?: ?`)

// errorLines returns the agent's last error lines for Error.Output: the
// last ERROR lines of standard error (or, when it has none, its last
// lines; when empty, standard output's), at most three, distinct, each
// shortened, secrets scrubbed. With a secret too short to scrub, it
// returns a note instead of the output.
func errorLines(out runOutput, secrets []string) string {
	if len(out.stderr) == 0 && len(out.stdout) == 0 {
		return ""
	}
	for _, s := range secrets {
		if len(s) < minScrub {
			return "(output withheld: a secret parameter is too short to be scrubbed from it)"
		}
	}
	pick := func(text string, errorsOnly bool) []string {
		var lines []string
		for _, l := range strings.Split(scrub(text, secrets), "\n") {
			l = strings.TrimSpace(l)
			m := logPrefix.FindStringSubmatch(l)
			if errorsOnly && (m == nil || (m[2] != "ERROR" && m[2] != "CRITICAL")) {
				continue
			}
			if m != nil {
				l = strings.TrimSpace(l[len(m[0]):])
			}
			if l == "" || l == "Please use '-h' for usage" {
				continue
			}
			if strings.Trim(l, "~^ ") == "" {
				continue // a traceback's underline of the failing expression
			}
			l = printable(l)
			if i := slices.Index(lines, l); i >= 0 {
				lines = slices.Delete(lines, i, i+1)
			}
			lines = append(lines, l)
		}
		if len(lines) > maxOutputLines {
			lines = lines[len(lines)-maxOutputLines:]
		}
		return lines
	}
	lines := pick(string(out.stderr), true)
	if len(lines) == 0 {
		lines = pick(string(out.stderr), false)
	}
	if len(lines) == 0 {
		lines = pick(string(out.stdout), false)
	}
	return scrub(strings.Join(lines, " | "), secrets)
}

// printable makes a line safe to print: invalid UTF-8 and control
// characters become '?', and a line longer than maxLineLength characters
// keeps its start and its end.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxLineLength {
		// The start says what failed, the end often why.
		s = string(r[:maxLineLength*3/5]) + " ... " + string(r[len(r)-maxLineLength*2/5:])
	}
	return s
}

// scrub replaces every occurrence of every secret value in s by REDACTED,
// with fence.Scrub (errorLines withholds the output when a value is too
// short for that).
func scrub(s string, secrets []string) string {
	ss := make([]fence.Secret, len(secrets))
	for i, v := range secrets {
		ss[i] = fence.NewSecret(v)
	}
	return fence.Scrub(s, ss...)
}
