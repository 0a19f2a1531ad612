package brocadesim

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fencekit/fencekit/internal/brocadesim/fos"
)

// Serve runs the emulated switch in this process, with x/crypto/ssh's
// server instead of sshd, on a free TCP port of Host: it needs neither
// root nor openssh-server, for examples and quick tests. The login, host
// key, client key, known_hosts file, state directory and fault modes are
// those of Start; sessions run the same emulator (package fos), in a
// goroutine each. A session with a pseudo-terminal gets "\r\n" line ends,
// as from a terminal, and no echo. Stop stops the server and removes the
// state directory.
func Serve(o Options) (*Switch, error) {
	if o.Ports <= 0 {
		o.Ports = 16
	}
	dir, err := os.MkdirTemp("", "fencekit-fcsim-inproc-")
	if err != nil {
		return nil, err
	}
	s := &Switch{Dir: dir, User: User, Password: Password, Ports: o.Ports, director: o.Director}
	fail := func(err error) (*Switch, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.prepare(o, nil, false); err != nil {
		return fail(err)
	}
	hostKey, err := readSigner(filepath.Join(dir, "ssh_host_ed25519_key"))
	if err != nil {
		return fail(err)
	}
	client, err := readSigner(s.ClientKey)
	if err != nil {
		return fail(err)
	}
	authorized := client.PublicKey().Marshal()
	srv := &inproc{dir: dir, conns: map[net.Conn]bool{}}
	srv.cfg = &ssh.ServerConfig{
		PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if c.User() == User && string(pw) == Password {
				return nil, nil
			}
			return nil, errors.New("wrong user name or password")
		},
		PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if c.User() == User && bytes.Equal(k.Marshal(), authorized) {
				return nil, nil
			}
			return nil, errors.New("key not authorized")
		},
	}
	if o.SSHBanner != "" {
		srv.cfg.BannerCallback = func(ssh.ConnMetadata) string { return o.SSHBanner }
	}
	srv.cfg.AddHostKey(hostKey)
	l, err := net.Listen("tcp4", net.JoinHostPort(Host, "0"))
	if err != nil {
		return fail(err)
	}
	srv.l = l
	s.Port = l.Addr().(*net.TCPAddr).Port
	s.srv = srv
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(s.KnownHosts, []byte(knownHostsLine(s)+"\n"), 0o644); err != nil {
		l.Close()
		return fail(err)
	}
	srv.wg.Add(1)
	go srv.accept()
	return s, nil
}

func readSigner(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(b)
}

// inproc is Serve's SSH server.
type inproc struct {
	dir    string
	cfg    *ssh.ServerConfig
	l      net.Listener
	wg     sync.WaitGroup
	logins atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func (s *inproc) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *inproc) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	s.logins.Add(1)
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.session(ch, creqs, sc.User())
		}()
	}
	wg.Wait()
}

// session serves one session channel: a shell or one exec request.
func (s *inproc) session(ch ssh.Channel, reqs <-chan *ssh.Request, user string) {
	defer ch.Close()
	pty := false
	for req := range reqs {
		switch req.Type {
		case "pty-req":
			pty = true
			req.Reply(true, nil)
		case "shell", "exec":
			var cmd struct{ Command string }
			if req.Type == "exec" {
				if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
					req.Reply(false, nil)
					continue
				}
			}
			req.Reply(true, nil)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for r := range reqs {
					r.Reply(false, nil)
				}
			}()
			var out io.Writer = ch
			if pty {
				out = crlf{ch}
			}
			env := map[string]string{"USER": user, "SSH_ORIGINAL_COMMAND": cmd.Command}
			code := fos.MainDone([]string{s.dir}, func(k string) string { return env[k] }, ch, out, done)
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
			return
		default:
			req.Reply(false, nil)
		}
	}
}

// crlf writes "\n" as "\r\n", as a terminal's line discipline does.
type crlf struct{ w io.Writer }

// Write writes p with its line ends translated.
func (c crlf) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// dropAll closes every connection.
func (s *inproc) dropAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// close stops the server and waits (at most stopTimeout) for its
// connections to end.
func (s *inproc) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.l.Close()
	s.dropAll()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
	}
}
