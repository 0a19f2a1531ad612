package testtool

import (
	"io"
	"net"
	"sync"
)

// Relay passes TCP connections from its loopback address to another
// address until it is cut: a network link a test can break (Cut) and mend
// (Join). Its methods are safe for concurrent use.
type Relay struct {
	l  net.Listener
	to string

	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

// NewRelay listens on a free port of 127.0.0.1 and relays to to until
// Close.
func NewRelay(to string) (*Relay, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{l: l, to: to}
	go r.accept()
	return r, nil
}

// Addr returns the address it listens on (host:port).
func (r *Relay) Addr() string { return r.l.Addr().String() }

func (r *Relay) accept() {
	for {
		in, err := r.l.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.cut {
			r.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.to)
		if err != nil {
			r.mu.Unlock()
			in.Close()
			continue
		}
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// Cut closes every connection it relays and refuses new ones until Join.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// Join relays new connections again.
func (r *Relay) Join() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = false
}

// Close cuts it for good and stops listening.
func (r *Relay) Close() {
	r.Cut()
	r.l.Close()
}
