package brocade

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fencekit/fencekit/fence"
)

// Defaults of Options.
const (
	// DefaultPort is the SSH port.
	DefaultPort = 22
	// DefaultLoginTimeout bounds connecting, logging in and the first
	// prompt (the agents' --login-timeout).
	DefaultLoginTimeout = 5 * time.Second
	// DefaultCommandTimeout bounds one command's reply.
	DefaultCommandTimeout = 10 * time.Second
)

// Mode says how commands reach the switch.
type Mode uint8

const (
	// ModeShell, the default, runs one interactive CLI session per
	// connection, on a pseudo-terminal, as the reference agent does: each
	// command is a line, and its output ends at the prompt. The switch
	// sees one login per connection however many commands follow.
	ModeShell Mode = iota
	// ModeExec sends each command as an SSH exec request of its own
	// ("ssh switch switchshow"), on the same connection: no prompt to
	// read, but one FOS login per command. For switches whose interactive
	// login asks questions (such as a password change).
	ModeExec
)

// String returns "shell" or "exec".
func (m Mode) String() string {
	if m == ModeExec {
		return "exec"
	}
	return "shell"
}

// ParseMode parses "shell" or "exec" (any case; "" is shell).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "shell":
		return ModeShell, nil
	case "exec":
		return ModeExec, nil
	}
	return ModeShell, fmt.Errorf("%q is not a command mode (want shell or exec)", s)
}

// Options configure a Device.
type Options struct {
	// Host is the switch's host name or IP address; required.
	Host string
	// Port is its SSH port; 0 means DefaultPort.
	Port int
	// Username is the login; required.
	Username string
	// Password is the login's password; with an encrypted IdentityFile,
	// the key's passphrase instead (as the agents take it).
	Password fence.Secret
	// IdentityFile is a private key file (OpenSSH, PKCS#1, PKCS#8 or
	// SEC1 PEM) to log in with.
	IdentityFile string
	// Signers are further keys to log in with, such as an agent's.
	Signers []ssh.Signer

	// KnownHostsFiles are OpenSSH known_hosts files that hold the
	// switch's host key. When no host key option is set at all, the
	// user's ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts are used,
	// those of them that exist; when neither exists, New fails.
	KnownHostsFiles []string
	// HostKeyFingerprints pins the host key: "SHA256:..." as ssh-keygen
	// -l prints it (or "MD5:xx:xx:..."), optionally after the key type
	// ("ssh-ed25519 SHA256:..."), which then is the only host key type
	// asked for. A key that matches a fingerprint, or the known_hosts
	// files, is accepted.
	HostKeyFingerprints []string
	// HostKeyCallback, when set, decides alone: the other host key
	// options must be empty.
	HostKeyCallback ssh.HostKeyCallback
	// InsecureIgnoreHostKey accepts any host key. Only for tests and
	// first contact: anyone on the path can then pose as the switch, read
	// the password and fence or unfence at will. The other host key
	// options must be empty.
	InsecureIgnoreHostKey bool

	// LoginTimeout bounds connecting, the SSH handshake, logging in and
	// the first prompt. Default DefaultLoginTimeout.
	LoginTimeout time.Duration
	// CommandTimeout bounds the reply to one command (output and prompt).
	// Default DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Prompt is a regular expression that the switch's prompt line
	// matches, searched in the line (the agents' --command-prompt, such
	// as "> "). Default: NAME:USER> with any ":"-separated words between
	// (sw0:FID128:admin>).
	Prompt string
	// Mode chooses the interactive shell (default) or exec requests.
	Mode Mode

	// Logger receives debug records of each login and command; nil
	// discards them. Records never hold the password.
	Logger *slog.Logger
}

// Device is a Brocade FC switch reached over SSH. Its plugs are the
// switch's ports: a port index as switchshow's Index column shows it, or
// slot/port on a director. Status reads switchshow; Set(off) sends
// portCfgPersistentDisable and Set(on) portCfgPersistentEnable; List
// lists switchshow's ports with their states; Monitor checks that
// switchshow answers with a port table. A Device is safe for concurrent
// use: its calls take turns on one SSH connection, made on first use and
// kept until Close (or until it breaks, when the next call makes a new
// one).
type Device struct {
	o        Options
	addr     string
	cfg      ssh.ClientConfig
	known    ssh.HostKeyCallback // from the known_hosts files, if any
	pins     []pin
	prompt   *regexp.Regexp
	log      *slog.Logger
	methods  string // the authentication methods offered, for errors
	turn     chan struct{}
	logins   atomic.Int64
	commands atomic.Int64

	mu     sync.Mutex
	c      *conn
	closed bool
	table  *swTable // the last switchshow read
}

// pin is one pinned host key fingerprint.
type pin struct {
	keyType string // "" for any
	fp      string // "SHA256:..." or "MD5:..."
}

// New returns a Device for the switch o describes. It reads the identity
// file and the known_hosts files, and checks the options; it does not
// connect. Errors are *fence.ParamError values naming the parameter at
// fault.
func New(o Options) (*Device, error) {
	bad := func(key, val, reason string) (*Device, error) {
		return nil, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	o.Host = strings.TrimSpace(o.Host)
	if o.Host == "" {
		return bad("ip", "", "required: the switch's host name or address")
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < 1 || o.Port > 65535 {
		return bad("ipport", strconv.Itoa(o.Port), "not a port from 1 to 65535")
	}
	if strings.TrimSpace(o.Username) == "" {
		return bad("username", o.Username, "required")
	}
	if o.LoginTimeout <= 0 {
		o.LoginTimeout = DefaultLoginTimeout
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	d := &Device{o: o, addr: net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), turn: make(chan struct{}, 1), log: o.Logger}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Prompt != "" {
		re, err := regexp.Compile(o.Prompt)
		if err != nil {
			return bad("command_prompt", o.Prompt, "not a regular expression: "+err.Error())
		}
		d.prompt = re
	}

	// Authentication.
	signers := append([]ssh.Signer(nil), o.Signers...)
	passphraseUsed := false
	if f := strings.TrimSpace(o.IdentityFile); f != "" {
		s, usedPassword, err := readIdentity(f, o.Password.Reveal())
		if err != nil {
			return bad("identity_file", f, err.Error())
		}
		signers = append(signers, s)
		passphraseUsed = usedPassword
	}
	var auth []ssh.AuthMethod
	var names []string
	if len(signers) > 0 {
		auth = append(auth, ssh.PublicKeys(signers...))
		names = append(names, "publickey")
	}
	if !o.Password.IsZero() && !passphraseUsed {
		pw := o.Password
		auth = append(auth, ssh.Password(pw.Reveal()), ssh.RetryableAuthMethod(ssh.KeyboardInteractive(
			func(_, _ string, questions []string, echos []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i, q := range questions {
					if !echos[i] && strings.Contains(strings.ToLower(q), "password") {
						answers[i] = pw.Reveal()
					}
				}
				return answers, nil
			}), 2))
		names = append(names, "password", "keyboard-interactive")
	}
	if len(auth) == 0 {
		return bad("password", "", "required: a password or an identity_file to log in with")
	}
	d.methods = strings.Join(names, ", ")

	// Host key.
	explicit := len(o.KnownHostsFiles) > 0 || len(o.HostKeyFingerprints) > 0
	switch {
	case o.HostKeyCallback != nil && (explicit || o.InsecureIgnoreHostKey):
		return bad("known_hosts", strings.Join(o.KnownHostsFiles, ","), "a HostKeyCallback decides alone: leave the other host key options empty")
	case o.InsecureIgnoreHostKey && explicit:
		return bad("ssh_insecure", "yes", "contradicts known_hosts and host_key_fingerprint: verify the host key, or skip the check, not both")
	}
	for _, f := range o.HostKeyFingerprints {
		for _, one := range strings.Split(f, ",") {
			if strings.TrimSpace(one) == "" {
				continue
			}
			p, err := parsePin(one)
			if err != nil {
				return bad("host_key_fingerprint", one, err.Error())
			}
			d.pins = append(d.pins, p)
		}
	}
	files := o.KnownHostsFiles
	if !explicit && o.HostKeyCallback == nil && !o.InsecureIgnoreHostKey {
		files = defaultKnownHosts()
		if len(files) == 0 {
			return bad("known_hosts", "", "no known_hosts file (~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts) and no host_key_fingerprint: "+
				"the switch's host key cannot be verified; set known_hosts or host_key_fingerprint (ssh-keyscan and ssh-keygen -l give them), or ssh_insecure=yes to skip the check")
		}
	}
	if len(files) > 0 {
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				return bad("known_hosts", f, "cannot read: "+err.Error())
			}
		}
		cb, err := knownhosts.New(files...)
		if err != nil {
			return bad("known_hosts", strings.Join(files, ","), "cannot read: "+err.Error())
		}
		d.known = cb
	}
	d.cfg = ssh.ClientConfig{
		User: o.Username,
		Auth: auth,
		BannerCallback: func(msg string) error {
			d.log.Debug("brocade: ssh banner", "host", d.addr, "banner", clip(msg, 200))
			return nil
		},
	}
	return d, nil
}

// readIdentity reads a private key; an encrypted one is decrypted with
// password, and usedPassword says so.
func readIdentity(path, password string) (s ssh.Signer, usedPassword bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("cannot read: %w", err)
	}
	s, err = ssh.ParsePrivateKey(b)
	var pm *ssh.PassphraseMissingError
	if errors.As(err, &pm) {
		if password == "" {
			return nil, false, errors.New("the key is encrypted: give its passphrase as the password")
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(b, []byte(password))
		if err != nil {
			return nil, false, errors.New("the key is encrypted, and the password does not decrypt it")
		}
		return s, true, nil
	}
	if err != nil {
		return nil, false, errors.New("not a private key this driver can read (OpenSSH, PKCS#1, PKCS#8 or SEC1 PEM)")
	}
	return s, false, nil
}

// parsePin reads a pinned fingerprint: [TYPE ]SHA256:BASE64 or
// [TYPE ]MD5:HEX:HEX... (MD5: may be left out).
func parsePin(s string) (pin, error) {
	f := strings.Fields(s)
	var p pin
	switch len(f) {
	case 1:
		p.fp = f[0]
	case 2:
		p.keyType, p.fp = f[0], f[1]
	default:
		return p, errors.New("want SHA256:... (or a key type and SHA256:...)")
	}
	switch {
	case strings.HasPrefix(p.fp, "SHA256:"):
		if len(p.fp) != len("SHA256:")+43 {
			return p, errors.New("a SHA256 fingerprint has 43 base64 characters after SHA256:")
		}
	case strings.HasPrefix(strings.ToUpper(p.fp), "MD5:") || strings.Count(p.fp, ":") == 15:
		h := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(p.fp, "MD5:"), "md5:"))
		if len(h) != 47 {
			return p, errors.New("an MD5 fingerprint is 16 hexadecimal pairs separated by ':'")
		}
		p.fp = "MD5:" + h
	default:
		return p, errors.New("want SHA256:... as ssh-keygen -l prints it")
	}
	return p, nil
}

// defaultKnownHosts returns the OpenSSH known_hosts files that exist.
func defaultKnownHosts() []string {
	var out []string
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, ".ssh", "known_hosts"))
	}
	out = append(out, "/etc/ssh/ssh_known_hosts")
	var have []string
	for _, f := range out {
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			have = append(have, f)
		}
	}
	return have
}

// Addr returns the switch's host:port.
func (d *Device) Addr() string { return d.addr }

// Logins returns how many SSH logins the device has made so far.
func (d *Device) Logins() int { return int(d.logins.Load()) }

// Commands returns how many commands the device has sent so far.
func (d *Device) Commands() int { return int(d.commands.Load()) }

func (d *Device) fail(op string, err error) *Error {
	return &Error{Addr: d.addr, Op: op, Err: err}
}

// take waits for the device's turn; it fails when ctx ends first.
func (d *Device) take(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return contextError(err)
	}
	select {
	case d.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return contextError(ctx.Err())
	}
}

func (d *Device) give() { <-d.turn }

// hostKeyCheck returns the host key callback of one connection, which
// records why it refused a key in *why.
func (d *Device) hostKeyCheck(why *error) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		fp := ssh.FingerprintSHA256(key)
		shown := key.Type() + " " + fp
		switch {
		case d.o.HostKeyCallback != nil:
			if err := d.o.HostKeyCallback(hostname, remote, key); err != nil {
				*why = fmt.Errorf("%w: %s refused: %v", ErrHostKey, shown, err)
				return *why
			}
			return nil
		case d.o.InsecureIgnoreHostKey:
			d.log.Warn("brocade: host key not verified (ssh_insecure)", "host", d.addr, "key", shown)
			return nil
		}
		for _, p := range d.pins {
			if p.keyType != "" && p.keyType != key.Type() {
				continue
			}
			if p.fp == fp || p.fp == "MD5:"+ssh.FingerprintLegacyMD5(key) {
				return nil
			}
		}
		if d.known != nil {
			err := d.known(hostname, remote, key)
			if err == nil {
				return nil
			}
			var ke *knownhosts.KeyError
			var re *knownhosts.RevokedError
			switch {
			case errors.As(err, &re):
				*why = fmt.Errorf("%w: %s is revoked in the known_hosts files", ErrHostKey, shown)
			case errors.As(err, &ke) && len(ke.Want) > 0:
				*why = fmt.Errorf("%w: the switch presented %s, which is not the key the known_hosts files hold for it (%s, line %d): "+
					"the switch was replaced or re-keyed, or someone is posing as it", ErrHostKey, shown, ke.Want[0].Filename, ke.Want[0].Line)
			default:
				*why = fmt.Errorf("%w: %s is not in the known_hosts files; if it is the switch's, add it (ssh-keyscan) or pin it with host_key_fingerprint", ErrHostKey, shown)
			}
			return *why
		}
		*why = fmt.Errorf("%w: %s matches no pinned host_key_fingerprint", ErrHostKey, shown)
		return *why
	}
}

// hostKeyAlgorithms returns the host key algorithms to ask for: those of
// the keys the known_hosts files or the pins hold for the switch, so that
// the switch presents one of them; nil (any) when they hold none, or when
// the check is not this driver's.
func (d *Device) hostKeyAlgorithms(hostname string, remote net.Addr) []string {
	if d.o.HostKeyCallback != nil || d.o.InsecureIgnoreHostKey {
		return nil
	}
	var types []string
	for _, p := range d.pins {
		if p.keyType == "" {
			return nil // a pin of any type: take what the switch offers
		}
		types = append(types, p.keyType)
	}
	if d.known != nil {
		// The known_hosts callback lists the keys it has for the host in
		// the error for any other key.
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		probe, err := ssh.NewPublicKey(pub)
		if err == nil {
			var ke *knownhosts.KeyError
			if errors.As(d.known(hostname, remote, probe), &ke) {
				for _, k := range ke.Want {
					types = append(types, k.Key.Type())
				}
			}
		}
	}
	var algos []string
	add := func(a ...string) {
		for _, x := range a {
			if !contains(algos, x) {
				algos = append(algos, x)
			}
		}
	}
	for _, t := range types {
		switch t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	if len(algos) == 0 {
		return nil
	}
	return algos
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// dial connects, logs in and, in shell mode, starts the CLI and learns its
// prompt, all within the login timeout and ctx. Its errors are causes for
// an *Error of op "connect", "login" or "shell" (returned in op).
func (d *Device) dial(ctx context.Context) (c *conn, op string, err error) {
	start := time.Now()
	deadline := start.Add(d.o.LoginTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	lctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	within := d.o.LoginTimeout.String()
	timedOut := func(what string) error {
		if cerr := ctx.Err(); cerr != nil {
			return contextError(cerr)
		}
		return fmt.Errorf("%w: %w", fence.ErrUnreachable, &timeoutError{what: what, after: within + " (login timeout)", base: context.DeadlineExceeded})
	}

	tcp, err := dialTCP(lctx, d.addr)
	if err != nil {
		switch {
		case lctx.Err() != nil:
			return nil, "connect", timedOut("no TCP connection")
		case strings.Contains(err.Error(), "connection refused"):
			return nil, "connect", fmt.Errorf("%w: nothing listens on TCP port %d (connection refused)", fence.ErrUnreachable, d.o.Port)
		}
		return nil, "connect", fmt.Errorf("%w: %v", fence.ErrUnreachable, err)
	}
	tcp.SetDeadline(deadline)
	stop := context.AfterFunc(lctx, func() { tcp.SetDeadline(time.Unix(1, 0)) })
	abandon := func() {
		stop()
		tcp.Close()
	}

	var hkErr error
	cfg := d.cfg
	cfg.HostKeyCallback = d.hostKeyCheck(&hkErr)
	cfg.HostKeyAlgorithms = d.hostKeyAlgorithms(d.addr, tcp.RemoteAddr())
	sc, chans, reqs, err := ssh.NewClientConn(tcp, d.addr, &cfg)
	if err != nil {
		abandon()
		msg := fence.Scrub(err.Error(), d.o.Password)
		switch {
		case hkErr != nil:
			return nil, "login", hkErr
		case strings.Contains(msg, "unable to authenticate"):
			return nil, "login", fmt.Errorf("%w: the switch refused user %q with %s", fence.ErrLoginDenied, d.o.Username, d.methods)
		case lctx.Err() != nil || isTimeout(err):
			return nil, "login", timedOut("no SSH login")
		}
		return nil, "login", fmt.Errorf("%w: SSH handshake: %s", fence.ErrUnreachable, clip(msg, 200))
	}
	client := ssh.NewClient(sc, chans, answerPromptly(sc, reqs))
	// The goroutine closes its own channel, not c's: a failed login
	// below returns (and so sets c to) nil while it may run.
	dead := make(chan struct{})
	c = &conn{client: client, dead: dead}
	go func() {
		client.Wait()
		close(dead)
	}()
	if d.o.Mode == ModeShell {
		sh, err := startShell(client)
		if err != nil {
			abandon()
			if lctx.Err() != nil || isTimeout(err) {
				return nil, "shell", timedOut("no shell")
			}
			return nil, "shell", fmt.Errorf("%w: cannot start the CLI: %s", fence.ErrUnreachable, clip(fence.Scrub(err.Error(), d.o.Password), 200))
		}
		c.sh = sh
		banner, err := sh.learnPrompt(lctx, nil, d.prompt)
		if err != nil {
			abandon()
			seen := clip(fence.Scrub(banner+string(sh.out.take()), d.o.Password), 160)
			switch {
			case errors.Is(err, ErrMalformed):
				return nil, "shell", err
			case lctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
				if cerr := ctx.Err(); cerr != nil {
					return nil, "shell", contextError(cerr)
				}
				return nil, "shell", fmt.Errorf("%w: no prompt within %v (login timeout); the switch printed %q", ErrMalformed, within, seen)
			}
			return nil, "shell", fmt.Errorf("%w: the CLI ended before its prompt (%v); it printed %q", fence.ErrUnreachable, err, seen)
		}
		if strings.TrimSpace(banner) != "" {
			d.log.Debug("brocade: login banner", "host", d.addr, "banner", clip(fence.Scrub(banner, d.o.Password), 300))
		}
	}
	if !stop() {
		client.Close()
		return nil, "login", timedOut("no login")
	}
	tcp.SetDeadline(time.Time{})
	d.logins.Add(1)
	d.log.Debug("brocade: logged in", "host", d.addr, "user", d.o.Username, "mode", d.o.Mode.String(), "prompt", promptOf(c), "duration", time.Since(start))
	return c, "", nil
}

// answerPromptly passes the switch's global requests on to the client's
// handler, and answers each that wants no reply with a keepalive of its
// own. OpenSSH sends its host keys (hostkeys-00@openssh.com) right after
// the login, just before its answer to the first channel open; without a
// packet back, the client's delayed ACK and the server's Nagle algorithm
// hold that answer for about 40 ms.
func answerPromptly(sc ssh.Conn, reqs <-chan *ssh.Request) <-chan *ssh.Request {
	out := make(chan *ssh.Request)
	go func() {
		defer close(out)
		for r := range reqs {
			if !r.WantReply {
				sc.SendRequest("keepalive@openssh.com", false, nil)
			}
			out <- r
		}
	}()
	return out
}

func promptOf(c *conn) string {
	if c.sh == nil {
		return ""
	}
	return c.sh.prompt
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// ensure returns the connection, made or remade as needed, and whether it
// is new. The caller has the turn.
func (d *Device) ensure(ctx context.Context) (*conn, bool, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, false, d.fail("connect", ErrClosed)
	}
	c := d.c
	if c != nil && (c.isDead() || (c.sh != nil && c.sh.out.ended() != nil)) {
		// The switch ended the session or the connection (an idle
		// timeout, a restart): start again.
		d.c = nil
		d.mu.Unlock()
		c.close()
		d.log.Debug("brocade: connection ended by the switch; reconnecting", "host", d.addr)
		d.mu.Lock()
		c = nil
	}
	d.mu.Unlock()
	if c != nil {
		return c, false, nil
	}
	c, op, err := d.dial(ctx)
	if err != nil {
		return nil, false, d.fail(op, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.close()
		return nil, false, d.fail("connect", ErrClosed)
	}
	d.c = c
	return c, true, nil
}

// drop closes c, if it is still the device's connection.
func (d *Device) drop(c *conn) {
	d.mu.Lock()
	if d.c == c {
		d.c = nil
	}
	d.mu.Unlock()
	c.close()
}

// stale reports whether err says the connection or session ended by
// itself (not a timeout): a command on a reused connection that fails so
// is tried again on a new one, when that is safe.
func stale(err error) bool {
	return errors.Is(err, errShellEnded) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "use of closed network connection") || strings.Contains(err.Error(), "connection reset") ||
		// x/crypto/ssh's answer to a session opened on a connection that
		// closed meanwhile (nothing was sent).
		strings.Contains(err.Error(), "unexpected packet in response to channel open")
}

// command runs cmd on the switch and returns its output. The caller has
// the turn. idempotent says the command may be sent again when the
// connection turns out to have ended under it (a read). sent reports
// whether the command may have reached the switch.
func (d *Device) command(ctx context.Context, cmd string, idempotent bool) (out string, sent bool, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		c, fresh, err := d.ensure(ctx)
		if err != nil {
			return "", false, err
		}
		out, status, sent, err := d.send(ctx, c, cmd)
		if err == nil {
			if status > 0 && strings.TrimSpace(out) == "" {
				out = fmt.Sprintf("exit status %d", status)
			}
			return out, true, nil
		}
		retry := !fresh && stale(err) && (!sent || idempotent) && ctx.Err() == nil
		d.drop(c)
		if !retry {
			return "", sent, d.commandError(ctx, cmd, err)
		}
		d.log.Debug("brocade: connection ended under a command; again on a new one", "host", d.addr, "command", cmd, "error", err)
	}
	return "", false, d.fail(cmd, errShellEnded)
}

// send runs cmd on c, in c's mode, within the command timeout and ctx.
func (d *Device) send(ctx context.Context, c *conn, cmd string) (out string, status int, sent bool, err error) {
	start := time.Now()
	timer := time.NewTimer(d.o.CommandTimeout)
	defer timer.Stop()
	d.commands.Add(1)
	if c.sh != nil {
		out, sent, err = c.sh.run(ctx, timer.C, cmd)
	} else {
		out, status, sent, err = execCmd(ctx, timer.C, c.client, cmd)
	}
	d.log.Debug("brocade: command", "host", d.addr, "command", cmd, "duration", time.Since(start), "bytes", len(out), "error", err)
	return out, status, sent, err
}

// commandError turns the error of a command into the device's *Error.
func (d *Device) commandError(ctx context.Context, cmd string, err error) *Error {
	switch {
	case errors.Is(err, errTimer):
		err = &timeoutError{what: "no complete reply (output and prompt)", after: d.o.CommandTimeout.String() + " (command timeout)", base: ErrCommandTimeout}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if cerr := ctx.Err(); cerr != nil {
			err = contextError(cerr)
		} else {
			err = contextError(err)
		}
	case errors.Is(err, ErrMalformed), errors.Is(err, fence.ErrLoginDenied), errors.Is(err, fence.ErrUnreachable), errors.Is(err, ErrClosed):
	default:
		err = fmt.Errorf("%w: %s", fence.ErrUnreachable, clip(fence.Scrub(err.Error(), d.o.Password), 200))
	}
	if e, ok := err.(*Error); ok {
		return e
	}
	return d.fail(cmd, err)
}

// switchshow reads the port table. The caller has the turn.
func (d *Device) switchshow(ctx context.Context) (*swTable, error) {
	out, _, err := d.command(ctx, "switchshow", true)
	if err != nil {
		return nil, err
	}
	t, err := parseSwitchShow(out)
	if err != nil {
		return nil, d.fail("switchshow", fmt.Errorf("%w; the switch printed %q", err, clip(fence.Scrub(out, d.o.Password), 160)))
	}
	d.mu.Lock()
	d.table = t
	d.mu.Unlock()
	return t, nil
}

// unknownPlug is the error for a plug the switch does not have.
func (d *Device) unknownPlug(op, plug string, t *swTable) *Error {
	if _, _, _, ok := parsePlug(plug); !ok {
		return d.fail(op, fmt.Errorf("%w %q: a port is a number, or slot/port on a director", fence.ErrUnknownPlug, plug))
	}
	n := 0
	if t != nil {
		n = len(t.Ports)
	}
	return d.fail(op, fmt.Errorf("%w %q: switchshow lists no such port (%d ports)", fence.ErrUnknownPlug, plug, n))
}

// Status reads the port's state from switchshow, as the reference agent
// does; when the port's line does not tell (see the parser's rules), from
// portshow. A persistently disabled port is fence.StateOff; an enabled one,
// or one disabled only for now, fence.StateOn. A port switchshow does not list fails with
// fence.ErrUnknownPlug.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if _, _, _, ok := parsePlug(plug); !ok {
		return fence.StateUnknown, d.unknownPlug("status", plug, nil)
	}
	if err := d.take(ctx); err != nil {
		return fence.StateUnknown, d.fail("status", err)
	}
	defer d.give()
	t, err := d.switchshow(ctx)
	if err != nil {
		return fence.StateUnknown, err
	}
	p, ok := t.find(plug)
	if !ok {
		if t.Bad > 0 {
			return fence.StateUnknown, d.fail("switchshow", fmt.Errorf("%w: port %q not found, and %d lines of the port table could not be read", ErrMalformed, plug, t.Bad))
		}
		return fence.StateUnknown, d.unknownPlug("switchshow", plug, t)
	}
	if p.State.Known() {
		return p.State, nil
	}
	// The port's line does not tell: ask portshow.
	cmd := "portshow " + p.Arg()
	out, _, err := d.command(ctx, cmd, true)
	if err != nil {
		return fence.StateUnknown, err
	}
	ps, perr := parsePortShow(out)
	switch {
	case perr != nil:
		return fence.StateUnknown, d.fail(cmd, fmt.Errorf("%w: switchshow: %s (%q); portshow: %w; the switch printed %q",
			fence.ErrBadState, p.Why, p.Line, perr, clip(fence.Scrub(out, d.o.Password), 160)))
	case ps.Index >= 0 && ps.Index != p.Index:
		return fence.StateUnknown, d.fail(cmd, fmt.Errorf("%w: portshow answered for port index %d, not %d", ErrMalformed, ps.Index, p.Index))
	case !ps.State.Known():
		return fence.StateUnknown, d.fail(cmd, fmt.Errorf("%w: switchshow: %s (%q); portshow: %s", fence.ErrBadState, p.Why, p.Line, ps.Why))
	}
	return ps.State, nil
}

// Set disables the port persistently (fence.StateOff:
// portCfgPersistentDisable) or enables it (fence.StateOn:
// portCfgPersistentEnable). The port must be one switchshow lists (the
// last switchshow read is used; the first Set of a device reads one). An
// error is marked fence.NotDone when the command surely did not run: the
// port is unknown, the login failed, the command never left, or the switch
// answered it with an error message.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	var verb string
	switch s {
	case fence.StateOn:
		verb = "portCfgPersistentEnable"
	case fence.StateOff:
		verb = "portCfgPersistentDisable"
	default:
		return fence.NotDone(d.fail("set", fmt.Errorf("state %v is neither on nor off", s)))
	}
	if _, _, _, ok := parsePlug(plug); !ok {
		return fence.NotDone(d.unknownPlug(verb, plug, nil))
	}
	if err := d.take(ctx); err != nil {
		return fence.NotDone(d.fail(verb, err))
	}
	defer d.give()
	d.mu.Lock()
	t := d.table
	d.mu.Unlock()
	p, ok := swPort{}, false
	if t != nil {
		p, ok = t.find(plug)
	}
	if !ok {
		var err error
		if t, err = d.switchshow(ctx); err != nil {
			return fence.NotDone(err)
		}
		if p, ok = t.find(plug); !ok {
			return fence.NotDone(d.unknownPlug(verb, plug, t))
		}
	}
	cmd := verb + " " + p.Arg()
	if err := ctx.Err(); err != nil {
		return fence.NotDone(d.fail(cmd, contextError(err)))
	}
	out, sent, err := d.command(ctx, cmd, false)
	if err != nil {
		if !sent {
			return fence.NotDone(err)
		}
		return fence.OutcomeUnknown(err)
	}
	kind, text := classifyReply(out)
	text = clip(fence.Scrub(text, d.o.Password), 200)
	switch kind {
	case replyOK:
		return nil
	case replyNoSuchPort:
		return fence.NotDone(d.fail(cmd, fmt.Errorf("%w %q: the switch answered %q", fence.ErrUnknownPlug, plug, text)))
	case replyRefused:
		return fence.NotDone(d.fail(cmd, fmt.Errorf("%w: %q", ErrRefused, text)))
	}
	return fence.OutcomeUnknown(d.fail(cmd, fmt.Errorf("%w: %q", ErrUnexpectedReply, text)))
}

// List returns switchshow's ports in its order, with their states
// (fence.StateUnknown for a port whose line does not tell). IDs are port
// indexes, as the reference agent lists them, or slot/port on a director;
// names are empty.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	if err := d.take(ctx); err != nil {
		return nil, d.fail("list", err)
	}
	defer d.give()
	t, err := d.switchshow(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]fence.Plug, 0, len(t.Ports))
	for _, p := range t.Ports {
		out = append(out, fence.Plug{ID: p.ID(), State: p.State})
	}
	return out, nil
}

// Monitor logs in (if not yet) and checks that switchshow answers with a
// port table.
func (d *Device) Monitor(ctx context.Context) error {
	if err := d.take(ctx); err != nil {
		return d.fail("monitor", err)
	}
	defer d.give()
	_, err := d.switchshow(ctx)
	return err
}

// Close ends the connection at once (after an "exit" to the CLI, not
// waited for). Later calls fail with ErrClosed; Close may be called more
// than once.
func (d *Device) Close() error {
	d.mu.Lock()
	c := d.c
	d.c = nil
	d.closed = true
	d.mu.Unlock()
	if c != nil {
		c.close()
	}
	return nil
}

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }

// String returns the device's address, brocade+ssh://host:port; never its
// credentials.
func (d *Device) String() string { return "brocade+ssh://" + d.addr }
