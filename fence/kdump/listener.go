package kdump

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	// DefaultStale is three times fence_kdump_send's default interval (10
	// s): a dump survives two lost datagrams in a row (UDP, no
	// retransmission) and ends half a minute after the node stops sending.
	// A node whose sender uses a longer interval (-i) needs a longer Stale.
	DefaultStale = 30 * time.Second
	// DefaultTimeout bounds a hold to ten minutes after the first message
	// of a dump. A filtered dump (makedumpfile -d 31, as kdump configures
	// it by default) of a node with a few hundred GiB of memory usually
	// ends well within that; past it, the workloads stuck on the node cost
	// more than the lost dump, and fencing goes ahead. Raise it for nodes
	// with very large memory or slow dump targets.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxNodes bounds the number of nodes a Listener keeps a Dump
	// for.
	DefaultMaxNodes = 10000
)

// ErrTooManyNodes means a valid message from a known node was dropped
// because the Listener already keeps Options.MaxNodes dumps that are not
// stale.
var ErrTooManyNodes = errors.New("kdump: too many nodes with a dump")

// readBuffer is the receive buffer: larger than Size, so that a longer
// datagram reads as longer (a datagram longer than the buffer reads as
// len(readBuffer) bytes) and is refused.
const readBuffer = 64

// Options configure a Listener. Resolve is required; every other zero field
// takes its default.
type Options struct {
	// Resolve maps the source address of a message to the node it comes
	// from; ok false ignores the message (ErrUnknownSource), as fence_kdump
	// ignores a message from any address but the fenced node's. The address
	// is in its plain form (an IPv4 sender on a dual-stack socket is given
	// as IPv4, not ::ffff:a.b.c.d). It is called on the receive goroutine
	// for every valid message: it must be quick and safe for concurrent
	// use. (*AddressBook).Resolve is one.
	Resolve func(netip.Addr) (node string, ok bool)
	// Stale is how long after its last message a node stops dumping.
	// Default DefaultStale (30 s).
	Stale time.Duration
	// Timeout is how long after the first message of a dump the hold ends,
	// even if messages still come. Default DefaultTimeout (10 min).
	Timeout time.Duration
	// MaxNodes bounds the dumps kept (one per node); when it is reached,
	// stale dumps are dropped to make room, and a message from yet another
	// node is dropped (ErrTooManyNodes) and logged as a warning. Default
	// DefaultMaxNodes.
	MaxNodes int
	// Now gives the receive time of messages. It must be the clock the
	// callers of Dumping pass "now" from. Default time.Now.
	Now func() time.Time
	// Logger receives an info record for the first message of a dump,
	// debug records for the others and for every ignored datagram, and
	// warnings for read errors and dropped messages; nil discards them.
	Logger *slog.Logger
	// OnMessage, if set, is called on the receive goroutine with every
	// datagram received, accepted or not, after the Listener has recorded
	// it (so a Dumping call from OnMessage sees it). It must return
	// quickly: reception waits for it.
	OnMessage func(Message)
}

// withDefaults returns o with its zero fields set, or an error naming the
// bad field.
func (o Options) withDefaults() (Options, error) {
	if o.Resolve == nil {
		return o, errors.New("kdump: Options.Resolve is required (an address book's Resolve, for one)")
	}
	switch {
	case o.Stale < 0:
		return o, fmt.Errorf("kdump: Options.Stale is negative (%v)", o.Stale)
	case o.Timeout < 0:
		return o, fmt.Errorf("kdump: Options.Timeout is negative (%v)", o.Timeout)
	case o.MaxNodes < 0:
		return o, fmt.Errorf("kdump: Options.MaxNodes is negative (%d)", o.MaxNodes)
	}
	if o.Stale == 0 {
		o.Stale = DefaultStale
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxNodes == 0 {
		o.MaxNodes = DefaultMaxNodes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Message is one datagram a Listener received, as OnMessage sees it.
type Message struct {
	// At is when it was received (Options.Now).
	At time.Time
	// From is its source, in plain form (IPv4-mapped addresses unmapped).
	From netip.AddrPort
	// Size is its length in bytes (a datagram longer than 64 bytes reads
	// as 64).
	Size int
	// Packet is what Decode read of it (see Decode for bad messages).
	Packet Packet
	// Node is the node Resolve named; empty when the message was not valid
	// or its source is unknown.
	Node string
	// NewDump is true for the first message of a dump.
	NewDump bool
	// Err is nil for a message that was recorded; otherwise why it was
	// ignored: ErrLength, ErrMagic, ErrVersion, ErrUnknownSource or
	// ErrTooManyNodes.
	Err error
}

// Stats counts what a Listener received since it started.
type Stats struct {
	// Received counts datagrams, valid or not.
	Received uint64
	// Accepted counts messages recorded in a node's dump.
	Accepted uint64
	// BadLength, BadMagic and BadVersion count datagrams Decode refused.
	BadLength, BadMagic, BadVersion uint64
	// UnknownSource counts valid messages from an address Resolve did not
	// know.
	UnknownSource uint64
	// TooManyNodes counts valid messages dropped for Options.MaxNodes.
	TooManyNodes uint64
	// ReadErrors counts failed reads from the socket (other than its
	// closing).
	ReadErrors uint64
	// Nodes is the number of nodes the listener keeps a Dump for.
	Nodes int
}

// counters are the Stats a receive updates, without a lock.
type counters struct {
	received, accepted, badLength, badMagic, badVersion, unknown, tooMany, readErrors atomic.Uint64
}

// Listener receives fence_kdump messages on a UDP socket and tells which
// nodes are dumping. It serves from Listen until its context ends or Close
// is called; its methods are safe for concurrent use, and keep answering
// from what was received after it stopped.
type Listener struct {
	conn *net.UDPConn
	opts Options

	mu    sync.Mutex
	dumps map[string]*Dump

	n counters

	stop      chan struct{} // closed to stop serving
	done      chan struct{} // closed when serving has stopped
	closeOnce sync.Once
	closeErr  error
	stopWatch func() bool // releases the context watch
}

// Listen binds a UDP socket on addr (DefaultAddr when empty; "udp" network,
// so a host-less address is dual-stack where the system allows it) and
// serves it on a goroutine until ctx ends or Close is called.
func Listen(ctx context.Context, addr string, opts Options) (*Listener, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = DefaultAddr
	}
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("kdump: listen on %s: %w", addr, err)
	}
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("kdump: listen on %s: not a UDP socket (%T)", addr, pc)
	}
	l := &Listener{
		conn:  conn,
		opts:  o,
		dumps: make(map[string]*Dump),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	l.stopWatch = context.AfterFunc(ctx, l.shutdown)
	o.Logger.LogAttrs(ctx, slog.LevelInfo, "kdump: listening", slog.String("addr", conn.LocalAddr().String()),
		slog.Duration("stale", o.Stale), slog.Duration("timeout", o.Timeout))
	go l.serve()
	return l, nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.conn.LocalAddr() }

// Done returns a channel closed once the listener has stopped receiving
// (its context ended or Close was called).
func (l *Listener) Done() <-chan struct{} { return l.done }

// Close stops receiving, closes the socket and waits for the receive
// goroutine to return. It may be called more than once; every call returns
// the error of closing the socket.
func (l *Listener) Close() error {
	l.stopWatch()
	l.shutdown()
	<-l.done
	return l.closeErr
}

// shutdown stops serving without waiting.
func (l *Listener) shutdown() {
	l.closeOnce.Do(func() {
		close(l.stop)
		l.closeErr = l.conn.Close()
	})
}

// serve receives until the socket is closed. A read error other than the
// closing is counted, logged and followed by a pause (1 ms, doubling up to
// 1 s while errors last), so that a failing socket never spins.
func (l *Listener) serve() {
	defer close(l.done)
	buf := make([]byte, readBuffer)
	var pause time.Duration
	for {
		n, src, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-l.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.n.readErrors.Add(1)
			pause = min(max(2*pause, time.Millisecond), time.Second)
			l.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "kdump: read failed",
				slog.String("addr", l.conn.LocalAddr().String()), slog.String("error", err.Error()),
				slog.Duration("pause", pause))
			t := time.NewTimer(pause)
			select {
			case <-l.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		pause = 0
		l.handle(src, buf[:n], l.opts.Now())
	}
}

// handle decodes, resolves, records, counts, logs and reports one datagram.
// It does not allocate for a message of a node that already has a Dump,
// nor for an ignored datagram when debug records are disabled.
func (l *Listener) handle(src netip.AddrPort, b []byte, at time.Time) {
	l.n.received.Add(1)
	m := Message{At: at, From: netip.AddrPortFrom(src.Addr().Unmap(), src.Port()), Size: len(b)}
	m.Packet, m.Err = Decode(b)
	if m.Err == nil {
		if node, ok := l.opts.Resolve(m.From.Addr()); ok && node != "" {
			m.Node = node
			m.NewDump, m.Err = l.record(node, m.From.Addr(), at)
		} else {
			m.Err = ErrUnknownSource
		}
	}
	l.count(m.Err)
	l.log(&m)
	if l.opts.OnMessage != nil {
		l.opts.OnMessage(m)
	}
}

func (l *Listener) count(err error) {
	switch err {
	case nil:
		l.n.accepted.Add(1)
	case ErrLength:
		l.n.badLength.Add(1)
	case ErrMagic:
		l.n.badMagic.Add(1)
	case ErrVersion:
		l.n.badVersion.Add(1)
	case ErrUnknownSource:
		l.n.unknown.Add(1)
	case ErrTooManyNodes:
		l.n.tooMany.Add(1)
	}
}

func (l *Listener) log(m *Message) {
	level := slog.LevelDebug
	msg := "kdump: message"
	switch {
	case m.Err == ErrTooManyNodes:
		level, msg = slog.LevelWarn, "kdump: message dropped"
	case m.Err != nil:
		msg = "kdump: datagram ignored"
	case m.NewDump:
		level, msg = slog.LevelInfo, "kdump: node is dumping"
	}
	ctx := context.Background()
	if !l.opts.Logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("from", m.From.String()), slog.Int("size", m.Size)}
	if m.Node != "" {
		attrs = append(attrs, slog.String("node", m.Node))
	}
	if m.Err != nil {
		attrs = append(attrs, slog.String("reason", m.Err.Error()))
		if m.Err != ErrLength {
			attrs = append(attrs, slog.String("magic", fmt.Sprintf("%#08x", m.Packet.Magic)),
				slog.Uint64("version", uint64(m.Packet.Version)))
		}
	}
	l.opts.Logger.LogAttrs(ctx, level, msg, attrs...)
}

// record adds an accepted message to node's dump, starting a new dump when
// the node has none or its last message is Stale or more old.
func (l *Listener) record(node string, from netip.Addr, at time.Time) (newDump bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.dumps[node]
	if !ok {
		if len(l.dumps) >= l.opts.MaxNodes {
			l.pruneLocked(at)
			if len(l.dumps) >= l.opts.MaxNodes {
				return false, ErrTooManyNodes
			}
		}
		d = &Dump{Node: node}
		l.dumps[node] = d
	}
	if d.Count == 0 || at.Sub(d.Last) >= l.opts.Stale {
		*d = Dump{Node: node, First: at, Last: at}
		newDump = true
	}
	if at.After(d.Last) {
		d.Last = at
	}
	d.From = from
	d.Count++
	return newDump, nil
}

// pruneLocked drops the dumps that are stale at now.
func (l *Listener) pruneLocked(now time.Time) {
	for node, d := range l.dumps {
		if age(now, d.Last) >= l.opts.Stale {
			delete(l.dumps, node)
		}
	}
}

// Dumping reports whether node is dumping at now (see Dump.Holds for the
// rule), with a detail for logs and events such as "kdump messages from
// 192.0.2.7 since 12:00:01, last 3s ago (4 messages, hold ends at
// 12:10:01)" or "kdump hold expired after 10m0s (...)". now must come from
// the clock of Options.Now.
func (l *Listener) Dumping(node string, now time.Time) (dumping bool, detail string) {
	d, _ := l.Messages(node)
	d.Node = node
	return d.Holds(now, l.opts.Stale, l.opts.Timeout)
}

// Messages returns node's current (or last) dump; ok is false when no
// message of node was recorded since the listener started or the node was
// last forgotten.
func (l *Listener) Messages(node string) (d Dump, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.dumps[node]; p != nil {
		return *p, true
	}
	return Dump{}, false
}

// Dumps returns every dump kept, current or stale, by node name.
func (l *Listener) Dumps() []Dump {
	l.mu.Lock()
	out := make([]Dump, 0, len(l.dumps))
	for _, d := range l.dumps {
		out = append(out, *d)
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b Dump) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// Forget drops node's dump, as after its fencing completed: the next
// message of the node starts a new dump, with a new hold.
func (l *Listener) Forget(node string) {
	l.mu.Lock()
	delete(l.dumps, node)
	l.mu.Unlock()
}

// Stale returns the Stale rule in force (the option or its default).
func (l *Listener) Stale() time.Duration { return l.opts.Stale }

// Timeout returns the Timeout rule in force (the option or its default).
func (l *Listener) Timeout() time.Duration { return l.opts.Timeout }

// Stats returns the listener's counters.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	nodes := len(l.dumps)
	l.mu.Unlock()
	return Stats{
		Received:      l.n.received.Load(),
		Accepted:      l.n.accepted.Load(),
		BadLength:     l.n.badLength.Load(),
		BadMagic:      l.n.badMagic.Load(),
		BadVersion:    l.n.badVersion.Load(),
		UnknownSource: l.n.unknown.Load(),
		TooManyNodes:  l.n.tooMany.Load(),
		ReadErrors:    l.n.readErrors.Load(),
		Nodes:         nodes,
	}
}
