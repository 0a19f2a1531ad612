package agent

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/procgroup"
)

// baseEnv is the whole environment of an agent, before Options.Env: a
// fixed PATH (the agents run ipmitool, ssh, snmpget... by absolute path or
// from these), the C locale so that the messages this package reads are
// English, and Python's warnings off (they would clutter standard error).
// Nothing is inherited from the host process: its environment may hold
// credentials, and PCMK_service=pacemaker-fenced would lift the agents'
// own time limits.
var baseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C",
	"LC_ALL=C",
	"PYTHONWARNINGS=ignore",
	"PYTHONDONTWRITEBYTECODE=1",
}

// waitDelay bounds the wait for an agent's output pipes once the agent has
// exited or been killed: a process that left the group (setsid) and holds
// them open does not hold the call.
const waitDelay = 2 * time.Second

// runSpec is one run of an agent.
type runSpec struct {
	path    string
	args    []string // empty for every action: options go on standard input
	stdin   string
	env     []string // added to baseEnv
	timeout time.Duration
	limit   int             // bytes kept of each of stdout and stderr
	closed  <-chan struct{} // the device's Close; nil when none
}

// runOutput is what a run left.
type runOutput struct {
	stdout, stderr []byte
	// exit is the exit status, -1 when the agent did not exit by itself
	// (never started, killed).
	exit int
	// err is set when the run did not complete: it never started (wrapped
	// with fence.NotDone), or it was killed (the context ended, the
	// timeout passed, the output was too large, the device closed), or a
	// signal ended it.
	err     error
	elapsed time.Duration
}

// errOutputTooLarge is the cause of a run killed for printing too much.
var errOutputTooLarge = errors.New("printed more output than allowed")

// errTimeout is the cause of a run killed by its own timeout (Options.Timeout).
type errTimeout struct{ d time.Duration }

// Error says how long the run was allowed.
func (e *errTimeout) Error() string {
	return fmt.Sprintf("did not finish within its timeout of %v", e.d)
}

// Unwrap returns context.DeadlineExceeded.
func (e *errTimeout) Unwrap() error { return context.DeadlineExceeded }

// Timeout reports true.
func (e *errTimeout) Timeout() bool { return true }

// run runs the agent and waits for it, bounded by ctx, the timeout and the
// device's Close: when any of them ends first, the agent's whole process
// group is killed.
func (r *runSpec) run(ctx context.Context) runOutput {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return runOutput{exit: -1, err: fence.NotDone(fmt.Errorf("not started: %w", context.Cause(ctx)))}
	}
	if r.closed != nil {
		select {
		case <-r.closed:
			return runOutput{exit: -1, err: fence.NotDone(ErrClosed)}
		default:
		}
	}
	base, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rctx, stop := context.WithTimeoutCause(base, r.timeout, &errTimeout{r.timeout})
	defer stop()
	if r.closed != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-r.closed:
				cancel(ErrClosed)
			case <-done:
			}
		}()
	}

	stdout := &capped{limit: r.limit, over: func() { cancel(errOutputTooLarge) }}
	stderr := &capped{limit: r.limit, over: func() { cancel(errOutputTooLarge) }}
	cmd := exec.CommandContext(rctx, r.path, r.args...)
	cmd.Env = append(append([]string(nil), baseEnv...), r.env...)
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(r.stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	procgroup.KillGroup(cmd)
	err := cmd.Run()
	out := runOutput{stdout: stdout.bytes(), stderr: stderr.bytes(), exit: -1, elapsed: time.Since(start)}
	ps := cmd.ProcessState
	switch {
	case ps == nil:
		// Never started: a missing or unexecutable file, or the context
		// ended at the very start.
		if cerr := rctx.Err(); cerr != nil {
			err = fmt.Errorf("not started: %w", context.Cause(rctx))
		}
		out.err = fence.NotDone(fmt.Errorf("could not run %s: %w", r.path, err))
	case stdout.overflow() || stderr.overflow():
		out.err = fmt.Errorf("killed: %w (more than %d bytes on standard output or error)", errOutputTooLarge, r.limit)
	case ps.Exited():
		// The agent exited by itself: its status stands, even if the
		// context ended right after.
		out.exit = ps.ExitCode()
	case rctx.Err() != nil:
		out.err = fmt.Errorf("killed after %v: %w", out.elapsed.Round(time.Millisecond), context.Cause(rctx))
	default:
		out.err = fmt.Errorf("ended by a signal: %v", ps)
	}
	return out
}

// capped keeps the first limit bytes written to it and calls over once when
// more come.
type capped struct {
	mu    sync.Mutex
	buf   []byte
	limit int
	over  func()
	full  bool
}

// Write keeps what fits and never fails, so that the agent is never
// blocked on a full pipe: past the limit, over kills it.
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room >= len(p) {
		c.buf = append(c.buf, p...)
		return len(p), nil
	} else if room > 0 {
		c.buf = append(c.buf, p[:room]...)
	}
	if !c.full {
		c.full = true
		c.over()
	}
	return len(p), nil
}

func (c *capped) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

func (c *capped) overflow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full
}

// agentName is the name errors use for the agent at path.
func agentName(path string) string { return filepath.Base(path) }
