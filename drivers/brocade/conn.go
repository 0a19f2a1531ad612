package brocade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// maxOutput bounds what one command (or the login) may print. A switch
// that prints more is not a switch this driver understands.
const maxOutput = 4 << 20

// errTooMuch is the cause of output beyond maxOutput.
var errTooMuch = fmt.Errorf("%w: more than %d bytes of output", ErrMalformed, maxOutput)

// errShellEnded is the cause of a shell whose session ended.
var errShellEnded = errors.New("the switch ended the session")

// outBuf collects a session's output, from the goroutines of ssh.Session
// that copy its stdout and stderr, for a reader that waits for a prompt.
type outBuf struct {
	mu   sync.Mutex
	buf  []byte
	err  error         // set once the output has ended (or overflowed)
	wake chan struct{} // signalled after every change
}

func newOutBuf() *outBuf { return &outBuf{wake: make(chan struct{}, 1)} }

func (o *outBuf) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Write appends p; beyond maxOutput it records errTooMuch and drops the
// rest, so that the session's copy never blocks.
func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	if o.err == nil {
		if len(o.buf)+len(p) > maxOutput {
			o.err = errTooMuch
		} else {
			o.buf = append(o.buf, p...)
		}
	}
	o.mu.Unlock()
	o.signal()
	return len(p), nil
}

// end records that the output has ended.
func (o *outBuf) end(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.mu.Unlock()
	o.signal()
}

// ended returns the reason the output ended, or nil.
func (o *outBuf) ended() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// take removes and returns what the buffer holds.
func (o *outBuf) take() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.buf
	o.buf = nil
	return b
}

// waitFor waits until match finds its end in the buffer, then removes and
// returns the buffer up to that end. match is given the whole buffer and
// returns the length to take, or -1. It gives up when the output ends, ctx
// ends, or the timer fires.
func (o *outBuf) waitFor(ctx context.Context, timer <-chan time.Time, match func([]byte) int) ([]byte, error) {
	for {
		o.mu.Lock()
		if n := match(o.buf); n >= 0 {
			out := o.buf[:n:n]
			o.buf = append([]byte(nil), o.buf[n:]...)
			o.mu.Unlock()
			return out, nil
		}
		err := o.err
		o.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer:
			return nil, errTimer
		}
	}
}

// errTimer is waitFor's error when its timer fired.
var errTimer = errors.New("timer")

// lastLine returns the start of the buffer's last line (after the last
// '\n' or '\r'), and that line without escape sequences and surrounding
// blanks.
func lastLine(b []byte) (int, string) {
	i := len(b)
	for i > 0 && b[i-1] != '\n' && b[i-1] != '\r' {
		i--
	}
	l := string(b[i:])
	if strings.IndexByte(l, 0x1b) >= 0 {
		l = ansi.ReplaceAllString(l, "")
	}
	return i, l
}

// defaultPrompt matches FOS's prompts, blanks trimmed: "sw0:admin>",
// "sw0:FID128:admin>", "sw0:AD5:admin>".
var defaultPrompt = regexp.MustCompile(`^[A-Za-z0-9_.\-]+(:[A-Za-z0-9_.\-]+)+>$`)

// isPrompt reports whether a last line (as lastLine returns it) is a
// prompt: by re when given (searched in the line as it is, so that the
// agents' "> " works), else by defaultPrompt.
func isPrompt(re *regexp.Regexp, line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || len(t) > 256 {
		return false
	}
	if re != nil {
		return re.MatchString(line)
	}
	return defaultPrompt.MatchString(t)
}

// conn is one SSH connection to the switch, with its interactive shell in
// shell mode.
type conn struct {
	client *ssh.Client
	dead   chan struct{} // closed when the connection has ended
	sh     *shell        // shell mode: the CLI session
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// close ends the connection at once: the shell gets "exit" if it is in a
// state to read it, and the TCP connection is closed without waiting.
func (c *conn) close() {
	if c.sh != nil && c.sh.out.ended() == nil {
		c.sh.stdin.Write([]byte("exit\n"))
	}
	c.client.Close()
}

// shell is the switch's interactive CLI on a pseudo-terminal: commands go
// in one line each, and the output of each ends with the prompt.
type shell struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	out    *outBuf
	prompt string // the prompt line, blanks trimmed, learned at login
}

// startShell opens the CLI session: a pseudo-terminal without echo, and
// the login shell. It does not wait for the prompt.
func startShell(client *ssh.Client) (*shell, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	modes := ssh.TerminalModes{ssh.ECHO: 0, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
	if err := sess.RequestPty("dumb", 200, 511, modes); err != nil {
		sess.Close()
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	out := newOutBuf()
	sess.Stdout, sess.Stderr = out, out
	if err := sess.Shell(); err != nil {
		sess.Close()
		return nil, err
	}
	go func() {
		sess.Wait()
		out.end(errShellEnded)
	}()
	return &shell{sess: sess, stdin: stdin, out: out}, nil
}

// learnPrompt waits for the first prompt, sends an empty line, and waits
// until the same prompt has come twice: once for the login and once for
// the empty line. A banner line that looks like a prompt is thus told
// from the prompt, and the shell is known to be in step. It returns the
// login's output (the banner), escape sequences removed.
func (sh *shell) learnPrompt(ctx context.Context, timer <-chan time.Time, re *regexp.Regexp) (string, error) {
	var transcript []string
	var banner strings.Builder
	candidate := func(b []byte) int {
		if _, l := lastLine(b); isPrompt(re, l) {
			return len(b)
		}
		return -1
	}
	sentNewline := false
	for rounds := 0; rounds < 64; rounds++ {
		b, err := sh.out.waitFor(ctx, timer, candidate)
		if err != nil {
			return banner.String(), err
		}
		_, last := lastLine(b)
		p := strings.TrimSpace(last)
		lines := splitLines(string(b))
		for _, l := range lines {
			transcript = append(transcript, strings.TrimSpace(l))
		}
		if !sentNewline {
			for _, l := range lines[:len(lines)-1] {
				banner.WriteString(l + "\n")
			}
			if _, err := sh.stdin.Write([]byte("\n")); err != nil {
				return banner.String(), err
			}
			sentNewline = true
			continue
		}
		n := 0
		for _, l := range transcript {
			if l == p {
				n++
			}
		}
		if n >= 2 {
			sh.prompt = p
			return banner.String(), nil
		}
	}
	return banner.String(), fmt.Errorf("%w: no steady prompt after 64 prompt-like lines", ErrMalformed)
}

// run sends one command and returns its output, up to the prompt after
// it, without the prompt. sent reports whether the command left: when it
// is false, the switch surely did not run it.
func (sh *shell) run(ctx context.Context, timer <-chan time.Time, cmd string) (out string, sent bool, err error) {
	if err := sh.out.ended(); err != nil {
		return "", false, err
	}
	sh.out.take() // anything the switch printed unasked
	if _, err := sh.stdin.Write([]byte(cmd + "\n")); err != nil {
		return "", false, err
	}
	b, err := sh.out.waitFor(ctx, timer, func(b []byte) int {
		if _, l := lastLine(b); strings.TrimSpace(l) == sh.prompt {
			return len(b)
		}
		return -1
	})
	if err != nil {
		return "", true, err
	}
	start, _ := lastLine(b)
	lines := splitLines(string(b[:start]))
	// Drop the echo of the command, should the terminal echo it.
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.TrimSpace(l) == cmd {
			lines = append(lines[:i:i], lines[i+1:]...)
		}
		break
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == sh.prompt {
			// Two prompts for one command: the shell is out of step.
			return "", true, fmt.Errorf("%w: two prompts for one command: the shell is out of step", ErrMalformed)
		}
	}
	return strings.Join(lines, "\n"), true, nil
}

// execCmd runs one command in an SSH exec request of its own and returns
// its output (stdout and stderr) and exit status (-1 when the switch sent
// none).
func execCmd(ctx context.Context, timer <-chan time.Time, client *ssh.Client, cmd string) (out string, status int, sent bool, err error) {
	sess, err := client.NewSession()
	if err != nil {
		return "", -1, false, err
	}
	defer sess.Close()
	ob := newOutBuf()
	sess.Stdout, sess.Stderr = ob, ob
	if err := sess.Start(cmd); err != nil {
		// The switch answered the request with a refusal: nothing ran.
		return "", -1, !strings.Contains(err.Error(), "failed"), err
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return "", -1, true, ctx.Err()
	case <-timer:
		return "", -1, true, errTimer
	}
	b := ob.take()
	if oe := ob.ended(); oe != nil {
		return "", -1, true, oe
	}
	status = 0
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		status = ee.ExitStatus()
	default:
		var me *ssh.ExitMissingError
		if errors.As(err, &me) {
			status = -1
		} else {
			return string(b), -1, true, err
		}
	}
	return string(b), status, true, nil
}

// dialTCP connects to addr within ctx.
func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
