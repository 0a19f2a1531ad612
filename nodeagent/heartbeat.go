package nodeagent

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Peer is another node's agent: its node's name and the address its
// heartbeats are served at (host:port).
type Peer struct {
	Name, Addr string
}

// Heartbeats are the agents' heartbeats to each other. A heartbeat is a
// POST of /heartbeat?from=NODE&at=T&nonce=N&mac=M, T being the sender's
// time (Unix nanoseconds) and M the HMAC-SHA256, under the agents' shared
// secret, of "hb", the sender, the peer, the nonce and the time; the peer
// acknowledges it with the HMAC of "ack", the sender, the peer and the
// nonce. A heartbeat counts as acknowledged only with that answer, so that
// nobody without the secret can keep a cut-off node from fencing itself by
// answering for its peers; and a peer counts a node heard only from a
// heartbeat with its proof, whose time is within Window of its own clock
// and whose nonce it has not seen in that time, so that nobody can make a
// peer say it hears a node it does not, neither by forging a heartbeat nor
// by replaying a recorded one (what it says of the nodes it has not heard
// is what a controller counts a node off on). The agents' clocks must
// agree within Window (NTP keeps them within milliseconds).
type Heartbeats struct {
	// Node is this node's name.
	Node string
	// Secret is the agents' shared secret (at least 16 bytes); it prints
	// itself redacted, so a Heartbeats in %v or a log shows none of it.
	Secret fence.Secret
	// Client sends the heartbeats; nil means a client whose requests
	// time out after a second.
	Client *http.Client
	// Window bounds how far a heartbeat's time may be from this agent's
	// clock, either way; zero means DefaultWindow.
	Window time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	heard  map[string]time.Time // peer -> when its last heartbeat came
	seen   map[string]time.Time // sender and nonce -> when it came, for twice Window
	purged time.Time
}

// DefaultWindow is Heartbeats.Window's default.
const DefaultWindow = 30 * time.Second

// maxSeen bounds the nonces remembered: past it (a flood), heartbeats are
// refused, never let through unchecked.
const maxSeen = 1 << 16

func (h *Heartbeats) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Heartbeats) window() time.Duration {
	if h.Window > 0 {
		return h.Window
	}
	return DefaultWindow
}

// ErrWeakSecret means the shared secret is shorter than 16 bytes.
var ErrWeakSecret = errors.New("nodeagent: the agents' shared secret must have at least 16 bytes")

func (h *Heartbeats) mac(kind, from, to, nonce string, at ...string) string {
	m := hmac.New(sha256.New, []byte(h.Secret.Reveal()))
	io.WriteString(m, kind+"\x00"+from+"\x00"+to+"\x00"+nonce)
	for _, a := range at {
		io.WriteString(m, "\x00"+a)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// ServeHTTP answers a peer's heartbeat.
func (h *Heartbeats) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/heartbeat" {
		http.Error(w, "POST /heartbeat", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	from, nonce, at := q.Get("from"), q.Get("nonce"), q.Get("at")
	sent, err := strconv.ParseInt(at, 10, 64)
	if from == "" || len(nonce) != 32 || err != nil || len(h.Secret.Reveal()) < 16 {
		http.Error(w, "bad heartbeat", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(q.Get("mac")), []byte(h.mac("hb", from, h.Node, nonce, at))) {
		http.Error(w, "heartbeat without the agents' proof", http.StatusForbidden)
		return
	}
	now, win := h.now(), h.window()
	if d := now.Sub(time.Unix(0, sent)); d > win || d < -win {
		http.Error(w, "heartbeat out of its time window (are the agents' clocks apart?)", http.StatusForbidden)
		return
	}
	h.mu.Lock()
	if now.Sub(h.purged) > win || len(h.seen) >= maxSeen {
		for k, t := range h.seen {
			if now.Sub(t) > 2*win {
				delete(h.seen, k)
			}
		}
		h.purged = now
	}
	key := from + "\x00" + nonce
	_, replayed := h.seen[key]
	if replayed || len(h.seen) >= maxSeen {
		h.mu.Unlock()
		http.Error(w, "heartbeat seen before (a replay)", http.StatusForbidden)
		return
	}
	if h.seen == nil {
		h.seen = map[string]time.Time{}
		h.heard = map[string]time.Time{}
	}
	h.seen[key] = now
	h.heard[from] = now
	h.mu.Unlock()
	_, _ = io.WriteString(w, h.mac("ack", from, h.Node, nonce))
}

// Heard returns when each peer's last heartbeat came.
func (h *Heartbeats) Heard() map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]time.Time, len(h.heard))
	for k, v := range h.heard {
		out[k] = v
	}
	return out
}

// Send sends this node's heartbeat to every peer at once, within ctx, and
// returns the names of those that acknowledged it.
func (h *Heartbeats) Send(ctx context.Context, peers []Peer) map[string]bool {
	acked := map[string]bool{}
	if len(h.Secret.Reveal()) < 16 {
		return acked
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: time.Second}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.send(ctx, c, p) {
				mu.Lock()
				acked[p.Name] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked
}

func (h *Heartbeats) send(ctx context.Context, c *http.Client, p Peer) bool {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false
	}
	nonce := hex.EncodeToString(b[:])
	at := strconv.FormatInt(h.now().UnixNano(), 10)
	u := url.URL{Scheme: "http", Host: p.Addr, Path: "/heartbeat", RawQuery: url.Values{"from": {h.Node}, "at": {at}, "nonce": {nonce},
		"mac": {h.mac("hb", h.Node, p.Name, nonce, at)}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 128))
	if err != nil || resp.StatusCode != http.StatusOK {
		return false
	}
	return hmac.Equal(body, []byte(h.mac("ack", h.Node, p.Name, nonce)))
}
