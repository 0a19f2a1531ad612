package ipmi

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// relay is a UDP relay on loopback between the device and its BMC: what
// the device sends goes to the BMC and back, and the test can send the
// device datagrams of its own from the relay's address, as an attacker on
// the path (or one who spoofs the BMC's address) would.
type relay struct {
	t       *testing.T
	front   *net.UDPConn // the device talks to this
	back    *net.UDPConn // connected to the BMC
	mu      sync.Mutex
	client  *net.UDPAddr
	toBMC   atomic.Int64 // datagrams relayed to the BMC
	fresh   atomic.Int64 // of those, the ones whose bytes were not relayed before
	sent    map[string]bool
	sid     atomic.Uint32 // the session ID the BMC's replies carry, as seen on the wire
	stopped chan struct{}
}

func startRelay(t *testing.T, bmcPort int) *relay {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	back, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: bmcPort})
	require.NoError(t, err)
	r := &relay{t: t, front: front, back: back, stopped: make(chan struct{}), sent: map[string]bool{}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // device -> BMC
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.client = from
			// A message is known by its payload: go-ipmi resends a request
			// with the next session sequence number and the same
			// (encrypted) payload, after the 16 bytes of the RMCP and
			// RMCP+ session headers.
			k := string(buf[:n])
			if n > 16 && buf[4] == 0x06 {
				k = string(buf[16:n])
			}
			if !r.sent[k] {
				r.sent[k] = true
				r.fresh.Add(1)
			}
			r.mu.Unlock()
			r.toBMC.Add(1)
			_, _ = back.Write(buf[:n])
		}
	}()
	go func() { // BMC -> device
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			if m := (&types.Rmcp{}); m.Unpack(buf[:n]) == nil && m.Session20 != nil && m.Session20.SessionHeader20.SessionID != 0 {
				r.sid.Store(m.Session20.SessionHeader20.SessionID)
			}
			r.inject(buf[:n])
		}
	}()
	t.Cleanup(func() { front.Close(); back.Close(); wg.Wait() })
	return r
}

func (r *relay) port() int { return r.front.LocalAddr().(*net.UDPAddr).Port }

// inject sends b to the device from the relay's address.
func (r *relay) inject(b []byte) {
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	if c != nil {
		_, _ = r.front.WriteToUDP(b, c)
	}
}

// forgedOff returns 64 replies "the chassis is off" to Get Chassis Status,
// one per IPMI sequence number, in the session sid (as an attacker who has
// seen the session's packets knows it): not encrypted, with authenticated
// set and a bogus integrity code when withCode, else not authenticated.
func forgedOff(sid uint32, withCode bool) [][]byte {
	var out [][]byte
	for seq := range uint8(64) {
		msg := []byte{0x81, 0x01 << 2, 0, 0x20, seq << 2, 0x01, 0x00, 0x00, 0x00, 0x00, 0}
		msg[2] = -(msg[0] + msg[1])
		var sum uint8
		for _, b := range msg[3 : len(msg)-1] {
			sum += b
		}
		msg[len(msg)-1] = -sum
		h := &types.SessionHeader20{AuthType: types.AuthTypeRMCPPlus, PayloadType: types.PayloadTypeIPMI,
			SessionID: sid, Sequence: 1000 + uint32(seq), PayloadLength: uint16(len(msg)), PayloadAuthenticated: withCode}
		s := &types.Session20{SessionHeader20: h, SessionPayload: msg}
		if withCode {
			s.SessionTrailer = &types.SessionTrailer{IntegrityPAD: []byte{0xff}, PadLength: 1, NextHeader: 0x07,
				AuthCode: []byte("0123456789ab")}
		}
		out = append(out, (&types.Rmcp{RmcpHeader: types.NewRmcpHeader(), Session20: s}).Pack())
	}
	return out
}

// spoofRun sets a session up with the BMC through a relay, silences the
// BMC, sends forged "off" replies, and reads the state.
func spoofRun(t *testing.T, unguarded, withCode bool) (fence.State, error, *Device) {
	bmc, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	rl := startRelay(t, p.port)
	p.port = rl.port()
	d := p.open(t, func(o *Options) { o.Timeout = 300 * time.Millisecond; o.Retries = 1 })
	d.unguarded = unguarded
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	require.Equal(t, fence.StateOn, st)
	if !unguarded {
		require.True(t, d.dialer.current().keyed(), "the session's integrity key was derived from a verified RAKP Message 2")
	}
	sid := rl.sid.Load() // learnt from the wire, as an attacker on the path would
	require.NotZero(t, sid)
	bmc.SetFault(ipmisim.FaultSilent)
	for _, b := range forgedOff(sid, withCode) {
		rl.inject(b)
	}
	st, err = d.Status(ctx(t), "")
	return st, err, d
}

// A spoofed "the chassis is off" is taken for the BMC's answer by go-ipmi
// alone; through the guard it is dropped: no reply of the session comes,
// and the read fails instead of reporting off.
func TestSpoofedRepliesIgnored(t *testing.T) {
	t.Run("without the guard (go-ipmi alone)", func(t *testing.T) {
		st, err, _ := spoofRun(t, true, false)
		require.NoError(t, err, "go-ipmi took a forged reply")
		assert.Equal(t, fence.StateOff, st, "a forged reply, taken for the BMC's: this is the hole the guard closes")
	})
	for _, withCode := range []bool{false, true} {
		name := "unauthenticated forgeries"
		if withCode {
			name = "forgeries with a bogus integrity code"
		}
		t.Run(name, func(t *testing.T) {
			st, err, d := spoofRun(t, false, withCode)
			require.Error(t, err, "no genuine reply: the read fails")
			assert.NotEqual(t, fence.StateOff, st)
			assert.GreaterOrEqual(t, d.dialer.droppedTotal(), int64(64), "every forgery dropped")
		})
	}
}

// A Chassis Control that gets no reply is not sent again by go-ipmi's
// retry: the BMC receives it once, and the outcome is unknown (the engine
// reads the state again).
func TestChassisControlNotResent(t *testing.T) {
	for _, unguarded := range []bool{true, false} {
		bmc, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
		rl := startRelay(t, p.port)
		p.port = rl.port()
		d := p.open(t, func(o *Options) { o.Timeout = 300 * time.Millisecond; o.Retries = 2 })
		d.unguarded = unguarded
		_, err := d.Status(ctx(t), "")
		require.NoError(t, err)
		bmc.SetFault(ipmisim.FaultSilent)
		before, freshBefore := rl.toBMC.Load(), rl.fresh.Load()
		err = d.Set(ctx(t), "", fence.StateOff)
		require.Error(t, err)
		assert.True(t, fence.IsOutcomeUnknown(err), "%v", err)
		sent := rl.toBMC.Load() - before
		if unguarded {
			// At least 1+Retries times; under load a late datagram of the
			// session (a resend of the read before) can fall in the window.
			assert.GreaterOrEqual(t, sent, int64(3), "go-ipmi alone sends it 1+Retries times")
		} else {
			// The guard held back both of go-ipmi's resends of the
			// Chassis Control: they never reached the socket.
			assert.Equal(t, int64(2), d.dialer.current().suppressed.Load())
			// Under load a resend of the read before can still go out
			// (its retry timer fired as its reply came), usually with
			// the same payload (not counted) but not always: one more
			// datagram at most, never the Control's two resends. (The
			// relay counts a datagram as new before it forwards it, so
			// the two counts, read one after the other, may differ by
			// that late one.)
			fresh := rl.fresh.Load() - freshBefore
			assert.True(t, fresh >= 1 && fresh <= 2 && sent <= 2, "sent once (%d new datagrams, %d in all)", fresh, sent)
		}
	}
}
