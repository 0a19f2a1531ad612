package ipmi

import (
	"bytes"
	"crypto/subtle"
	"net"
	"sync"
	"sync/atomic"

	"github.com/bougou/go-ipmi/pkg/crypto"
	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"
)

// This file keeps replies that do not belong to the session away from
// go-ipmi. go-ipmi v0.9.1 matches a reply to a request by its IPMI sequence
// number and command only: it checks neither the RMCP+ session ID, nor the
// session sequence number, nor the integrity code of an authenticated
// cipher suite, so any datagram that reaches the client's port with a
// plausible sequence number (a spoofed "power is off") would be taken as
// the BMC's answer. It also sends Chassis Control again, byte for byte,
// when no reply came in time, so a power cycle could run twice.
//
// go-ipmi offers one hook for this: the UDP connection it talks through
// (client.WithUDPProxy). The guard is that connection. It reads the
// session's parameters from the session setup as it passes (the console's
// session ID from Open Session Request, the console's random number, role
// and user name from RAKP Message 1, the BMC's session ID and algorithms
// from Open Session Response, the BMC's random number from RAKP Message 2,
// whose key exchange code it verifies with the password), derives the
// session integrity key with go-ipmi's own exported crypto, and from then
// on passes a datagram up only when it carries the session's ID, a session
// sequence number not seen before, the encryption the cipher suite asks
// for, and a valid integrity code. A Chassis Control is never sent twice:
// while one is under way, a second write of the same datagram is dropped
// (the engine reads the state again instead).
//
// Not covered: IPMI v1.5 sessions (Session15), whose replies the guard
// passes as go-ipmi takes them (v1.5 is warned about as insecure); cipher
// suites without integrity (0, or 1 and 2 without confidentiality), whose
// replies carry nothing to verify beyond the session ID and sequence.

// guard is the UDP connection of one go-ipmi client.
type guard struct {
	net.Conn
	password string

	mu          sync.Mutex
	consoleSID  uint32 // ours, from Open Session Request; the BMC's replies carry it
	haveConsole bool
	bmcSID      uint32
	authAlg     types.AuthAlg
	integrity   types.IntegrityAlg
	crypt       types.CryptAlg
	opened      bool // Open Session Response seen
	rm          [16]byte
	role        uint8
	user        string
	k1          []byte // the integrity key, once RAKP Message 2 is verified
	highSeq     uint32
	seen        map[uint32]bool // sequence numbers accepted in the window
	controlling bool            // a Chassis Control is under way
	lastSent    []byte

	dropped    atomic.Int64 // datagrams not passed up
	suppressed atomic.Int64 // writes not sent again
}

// keyed reports whether the session's integrity key was derived.
func (g *guard) keyed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.k1 != nil
}

// seqWindow is how far below the highest session sequence number seen a
// reply may still come (out of order); anything older is a replay.
const seqWindow = 32

func newGuard(c net.Conn, password string) *guard {
	return &guard{Conn: c, password: password, seen: map[uint32]bool{}}
}

// Read passes up the next datagram that belongs to the session; the others
// are dropped, and the read goes on until the connection's read deadline.
func (g *guard) Read(p []byte) (int, error) {
	buf := make([]byte, max(len(p), 2048))
	for {
		n, err := g.Conn.Read(buf)
		if err != nil {
			return 0, err
		}
		if g.accept(buf[:n]) {
			return copy(p, buf[:n]), nil
		}
		g.dropped.Add(1)
	}
}

// Write learns the session's parameters from the requests, and drops a
// second write of a Chassis Control.
func (g *guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	if g.controlling && g.lastSent != nil && bytes.Equal(p, g.lastSent) {
		g.mu.Unlock()
		g.suppressed.Add(1)
		return len(p), nil
	}
	g.lastSent = append(g.lastSent[:0], p...)
	g.learnSent(p)
	g.mu.Unlock()
	return g.Conn.Write(p)
}

// control marks a Chassis Control under way (on) or over (off).
func (g *guard) control(on bool) {
	g.mu.Lock()
	g.controlling = on
	g.lastSent = nil
	g.mu.Unlock()
}

// learnSent reads the console's side of the session setup. g.mu is held.
func (g *guard) learnSent(p []byte) {
	r := &types.Rmcp{}
	if r.Unpack(p) != nil || r.Session20 == nil || r.Session20.SessionHeader20 == nil {
		return
	}
	switch r.Session20.SessionHeader20.PayloadType {
	case types.PayloadTypeRmcpOpenSessionRequest:
		req := &rmcpplus.OpenSessionRequest{}
		if req.Unpack(r.Session20.SessionPayload) == nil {
			// A new session: forget the last one's parameters.
			g.consoleSID, g.haveConsole = req.RemoteConsoleSessionID, true
			g.bmcSID, g.opened, g.k1, g.highSeq = 0, false, nil, 0
			g.authAlg, g.integrity, g.crypt = 0, 0, 0
			g.seen = map[uint32]bool{}
		}
	case types.PayloadTypeRAKPMessage1:
		m := &rmcpplus.RAKPMessage1{}
		if m.Unpack(r.Session20.SessionPayload) == nil {
			g.rm, g.role, g.user = m.RemoteConsoleRandomNumber, m.Role(), string(m.Username)
		}
	}
}

// accept reports whether a datagram belongs to the session.
func (g *guard) accept(b []byte) bool {
	r := &types.Rmcp{}
	if r.Unpack(b) != nil {
		return false
	}
	if r.Session20 == nil || r.Session20.SessionHeader20 == nil {
		return true // ASF (presence pong) and IPMI v1.5: not covered
	}
	h := r.Session20.SessionHeader20
	g.mu.Lock()
	defer g.mu.Unlock()
	switch h.PayloadType {
	case types.PayloadTypeRmcpOpenSessionResponse:
		pl := r.Session20.SessionPayload
		if len(pl) >= 2 && pl[1] != 0 {
			// An error (a cipher suite or role refused): passed up, the
			// setup fails, surely before any command.
			return g.haveConsole
		}
		res := &rmcpplus.OpenSessionResponse{}
		if res.Unpack(pl) != nil || !g.haveConsole || res.RemoteConsoleSessionID != g.consoleSID {
			return false
		}
		g.bmcSID, g.opened = res.ManagedSystemSessionID, true
		g.authAlg = types.AuthAlg(res.AuthAlg)
		g.integrity = types.IntegrityAlg(res.IntegrityAlg)
		g.crypt = types.CryptAlg(res.CryptAlg)
		return true
	case types.PayloadTypeRAKPMessage2:
		return g.rakp2(r.Session20.SessionPayload)
	case types.PayloadTypeRAKPMessage4:
		return g.opened
	case types.PayloadTypeIPMI, types.PayloadTypeSOL:
	default:
		return false
	}
	if !g.haveConsole {
		// Before any session setup (Get Channel Authentication
		// Capabilities): nothing to check yet.
		return h.SessionID == 0
	}
	if h.SessionID != g.consoleSID || !g.opened {
		return false
	}
	if g.crypt != types.CryptAlg_None && !h.PayloadEncrypted {
		return false
	}
	if g.integrity != types.IntegrityAlg_None {
		n, ok := crypto.IntegrityAuthCodeLen(g.integrity)
		if !ok || !h.PayloadAuthenticated || g.k1 == nil || len(b) < 4+n {
			return false
		}
		want, err := crypto.SessionIntegrityAuthCode(g.integrity, b[4:len(b)-n], g.k1, g.password)
		if err != nil || len(want) < n || subtle.ConstantTimeCompare(want[:n], b[len(b)-n:]) != 1 {
			return false
		}
	}
	return g.fresh(h.Sequence)
}

// fresh reports whether a session sequence number was not seen before and
// is within the window, and records it. g.mu is held.
func (g *guard) fresh(seq uint32) bool {
	if g.seen[seq] || seq+seqWindow <= g.highSeq {
		return false
	}
	g.seen[seq] = true
	if seq > g.highSeq {
		g.highSeq = seq
		for s := range g.seen {
			if s+seqWindow <= g.highSeq {
				delete(g.seen, s)
			}
		}
	}
	return true
}

// rakp2 checks RAKP Message 2: addressed to the console's session; when
// its key exchange code is computed with the password (so it is the BMC's,
// not a stranger's), the integrity key is derived from it. One that reports
// an error, or whose code does not verify (a wrong password, or a forgery),
// is passed up without a key: go-ipmi then fails the setup, or, had it
// taken a forgery, no reply of the session verifies. Either way the setup
// can only fail, surely before any command. g.mu is held.
func (g *guard) rakp2(payload []byte) bool {
	if !g.opened {
		return false
	}
	m := &rmcpplus.RAKPMessage2{AuthAlg: g.authAlg}
	if m.Unpack(payload) != nil || m.RemoteConsoleSessionID != g.consoleSID {
		return false
	}
	if m.RmcpStatusCode != 0 {
		return true
	}
	if g.authAlg == types.AuthAlg_None {
		return true
	}
	kuid := crypto.PadPassword20([]byte(g.password))
	want, err := crypto.RAKP2AuthCode(g.authAlg, g.consoleSID, g.bmcSID, g.rm[:], m.ManagedSystemRandomNumber[:],
		m.ManagedSystemGUID[:], g.role, g.user, kuid)
	if err != nil || subtle.ConstantTimeCompare(want, m.KeyExchangeAuthenticationCode) != 1 {
		return true
	}
	_, k1, _, err := crypto.DeriveSessionKeys(g.authAlg, g.rm[:], m.ManagedSystemRandomNumber[:], g.role, g.user, kuid)
	if err != nil {
		return false
	}
	g.k1 = k1
	return true
}

// guardDialer makes the UDP connections of a device's go-ipmi clients, each
// behind a guard (client.WithUDPProxy).
type guardDialer struct {
	password string
	mu       sync.Mutex
	last     *guard
	dropped  atomic.Int64 // datagrams dropped by the guards of earlier connections
}

// Dial dials the BMC and returns the connection behind a new guard.
func (d *guardDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	g := newGuard(c, d.password)
	d.mu.Lock()
	if d.last != nil {
		d.dropped.Add(d.last.dropped.Load())
	}
	d.last = g
	d.mu.Unlock()
	return g, nil
}

// droppedTotal returns the datagrams the device's guards dropped, all
// sessions together.
func (d *guardDialer) droppedTotal() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.dropped.Load()
	if d.last != nil {
		n += d.last.dropped.Load()
	}
	return n
}

// current returns the guard of the last connection dialled.
func (d *guardDialer) current() *guard {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}
