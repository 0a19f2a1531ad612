package fencegroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/errfmt"
	"github.com/fencekit/fencekit/internal/procgroup"
)

// PlacementSource says where CLI reads the OSD placement from.
type PlacementSource int8

// The placement sources.
const (
	// PlacementTree reads ceph osd tree --format json: CRUSH host buckets
	// and OSD states. The default.
	PlacementTree PlacementSource = iota
	// PlacementMetadata reads ceph osd metadata --format json: the
	// hostname each OSD reported, no states. For clusters whose CRUSH
	// hosts are not named after the machines (such as OSDs on PVCs).
	PlacementMetadata
	// PlacementNone reads no placement: the status serves the budget only,
	// and labels are left as they are.
	PlacementNone
)

// Defaults of CLI.
const (
	// DefaultCLITimeout bounds each ceph command.
	DefaultCLITimeout = 30 * time.Second
	// DefaultCLIMaxOutput bounds what is kept of a command's output.
	DefaultCLIMaxOutput = 64 << 20
	// maxStderr bounds what an error quotes of standard error.
	maxStderr = 512
)

// cliWaitDelay bounds the wait for a command's output pipes once it has
// exited or been killed.
const cliWaitDelay = 2 * time.Second

// CLI is the Source that runs the ceph command-line tool: ceph status
// --format json, then (unless Placement is PlacementNone) ceph osd tree
// --format json or ceph osd metadata --format json. Each command is bounded
// by Timeout and by the caller's context; on either, the command's whole
// process group is killed. Standard error is quoted in the error, clipped,
// with anything that looks like a Ceph key removed; the global arguments
// (keyring, configuration paths) are never quoted.
type CLI struct {
	// Path is the ceph binary. Empty means "ceph", found in PATH.
	Path string
	// Cluster is passed as --cluster (the cluster's configuration name, as
	// in /etc/ceph/<cluster>.conf), when not empty.
	Cluster string
	// Conf is passed as --conf, when not empty.
	Conf string
	// ID is passed as --id (the client's name without "client."), when not
	// empty.
	ID string
	// Keyring is passed as --keyring, when not empty.
	Keyring string
	// Args are more global arguments, put before the subcommand.
	Args []string
	// Env is added to the inherited environment (after LC_ALL=C).
	Env []string
	// Timeout bounds each command; half of it (in whole seconds, at least
	// one) is passed to ceph as --connect-timeout, so that a monitor that
	// cannot be reached is reported by ceph itself ("RADOS timed out")
	// rather than by the kill. Zero means DefaultCLITimeout.
	Timeout time.Duration
	// Placement says where the OSD placement is read from.
	Placement PlacementSource
	// MaxOutput bounds the standard output kept of a command; a command
	// printing more fails. Zero means DefaultCLIMaxOutput.
	MaxOutput int
}

// CommandError is the error of one ceph command that did not print a
// usable answer: it names the subcommand (never the global arguments),
// gives the exit status (-1 when the command did not exit by itself) and
// what it printed on standard error, clipped and with keys removed.
type CommandError struct {
	// Command is the subcommand run: "ceph status --format json".
	Command string
	// Exit is the exit status, -1 when the command was killed or did not
	// start.
	Exit int
	// Stderr is the end of its standard error, redacted.
	Stderr string
	// Err is the cause.
	Err error
}

// Error returns "fencegroup: ceph status --format json: cause: stderr".
func (e *CommandError) Error() string {
	var b errfmt.Labels
	b.Start("fencegroup: " + e.Command).End(e.Err)
	return b.Part(e.Stderr).String()
}

// Unwrap returns the cause.
func (e *CommandError) Unwrap() error { return e.Err }

// Fetch runs the commands and returns the status, with its placement.
func (c *CLI) Fetch(ctx context.Context) (*Status, error) {
	out, err := c.run(ctx, "status", "--format", "json")
	if err != nil {
		return nil, err
	}
	st, err := ParseStatus(out)
	if err != nil {
		return nil, err
	}
	if st.NumPGs == 0 && len(st.PGs) == 0 && st.NumPools == 0 {
		// No PGs and no pools is also what the monitors report before the
		// manager's first statistics (a manager just started or failed
		// over), when pools with data exist: the pools are counted from
		// the OSD map, so that "no pools" is never taken on the manager's
		// word alone.
		out, err = c.run(ctx, "osd", "pool", "ls", "--format", "json")
		if err != nil {
			return nil, err
		}
		if st.NumPools, err = ParsePoolList(out); err != nil {
			return nil, err
		}
	}
	switch c.Placement {
	case PlacementTree:
		out, err = c.run(ctx, "osd", "tree", "--format", "json")
		if err == nil {
			st.Placement, err = ParseOSDTree(out)
		}
	case PlacementMetadata:
		out, err = c.run(ctx, "osd", "metadata", "--format", "json")
		if err == nil {
			st.Placement, err = ParseOSDMetadata(out)
		}
	case PlacementNone:
	default:
		err = fmt.Errorf("fencegroup: unknown placement source %d", c.Placement)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// CommandLine returns the arguments (after the binary) that run sub: the
// global arguments, then sub.
func (c *CLI) CommandLine(sub ...string) []string {
	var args []string
	for _, a := range []struct{ flag, v string }{
		{"--cluster", c.Cluster}, {"--conf", c.Conf}, {"--id", c.ID}, {"--keyring", c.Keyring},
	} {
		if a.v != "" {
			args = append(args, a.flag, a.v)
		}
	}
	args = append(args, "--connect-timeout", strconv.Itoa(max(1, int(c.timeout()/2/time.Second))))
	args = append(args, c.Args...)
	return append(args, sub...)
}

func (c *CLI) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultCLITimeout
}

// Command runs one ceph subcommand (such as "osd", "blocklist", "ls",
// "--format", "json") with the CLI's global arguments, bounds and error
// redaction, and returns its standard output, which may be empty. Other
// packages that drive Ceph (the blocklist fence driver) run their commands
// through it.
func (c *CLI) Command(ctx context.Context, sub ...string) ([]byte, error) {
	return c.exec(ctx, true, sub...)
}

// run runs one subcommand and returns its standard output, which must not
// be empty.
func (c *CLI) run(ctx context.Context, sub ...string) ([]byte, error) {
	return c.exec(ctx, false, sub...)
}

// exec runs one subcommand and returns its standard output; empty output
// is an error unless allowEmpty.
func (c *CLI) exec(ctx context.Context, allowEmpty bool, sub ...string) ([]byte, error) {
	path := c.Path
	if path == "" {
		path = "ceph"
	}
	name := "ceph " + strings.Join(sub, " ")
	fail := func(exit int, stderr []byte, err error) ([]byte, error) {
		return nil, &CommandError{Command: name, Exit: exit, Stderr: redact(stderr), Err: err}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, path, c.CommandLine(sub...)...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), c.Env...)
	cmd.Stdin = nil
	limit := c.MaxOutput
	if limit <= 0 {
		limit = DefaultCLIMaxOutput
	}
	stdout := &capped{limit: limit}
	stderr := &capped{limit: 64 << 10, keepTail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = cliWaitDelay
	procgroup.KillGroup(cmd)
	err := cmd.Run()
	switch {
	case parent.Err() != nil:
		return fail(-1, stderr.Bytes(), parent.Err())
	case ctx.Err() != nil:
		return fail(-1, stderr.Bytes(), fmt.Errorf("no answer within %v: %w", c.timeout(), context.DeadlineExceeded))
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			return fail(ee.ExitCode(), stderr.Bytes(), fmt.Errorf("exit status %d", ee.ExitCode()))
		}
		return fail(-1, stderr.Bytes(), err)
	case stdout.over:
		return fail(0, stderr.Bytes(), fmt.Errorf("printed more than %d bytes", limit))
	case !allowEmpty && len(bytes.TrimSpace(stdout.Bytes())) == 0:
		return fail(0, stderr.Bytes(), errors.New("printed nothing"))
	}
	return stdout.Bytes(), nil
}

// capped is a writer that keeps at most limit bytes: the first ones, or
// with keepTail the last ones. It never fails, so the command is never cut
// off by a full pipe.
type capped struct {
	buf      bytes.Buffer
	limit    int
	keepTail bool
	over     bool
}

func (w *capped) Write(p []byte) (int, error) {
	n := len(p)
	if w.keepTail {
		w.buf.Write(p)
		if extra := w.buf.Len() - w.limit; extra > 0 {
			w.over = true
			w.buf.Next(extra)
			rest := append([]byte(nil), w.buf.Bytes()...)
			w.buf.Reset()
			w.buf.Write(rest)
		}
		return n, nil
	}
	if room := w.limit - w.buf.Len(); room < len(p) {
		w.over = true
		p = p[:max(room, 0)]
	}
	w.buf.Write(p)
	return n, nil
}

func (w *capped) Bytes() []byte { return w.buf.Bytes() }

var (
	// cephKey is a Ceph secret: base64 of 28 bytes, beginning "AQ".
	cephKey = regexp.MustCompile(`AQ[A-Za-z0-9+/]{36,38}={0,2}`)
	// keyAssignment is a "key = ..." or "secret: ..." pair.
	keyAssignment = regexp.MustCompile(`(?i)\b(key|secret|password)(\s*[=:]\s*)\S+`)
)

// redact returns the end of standard error as one line, at most maxStderr
// bytes, with keys and secrets replaced by "[redacted]".
func redact(stderr []byte) string {
	s := strings.ToValidUTF8(string(stderr), "")
	s = cephKey.ReplaceAllString(s, "[redacted]")
	s = keyAssignment.ReplaceAllString(s, "${1}${2}[redacted]")
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	s = strings.Join(lines, " | ")
	if len(s) > maxStderr {
		s = "..." + strings.ToValidUTF8(s[len(s)-maxStderr:], "")
	}
	return s
}
