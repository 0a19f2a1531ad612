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
// POST of /heartbeat?from=NODE&nonce=N&mac=M, M being the HMAC-SHA256,
// under the agents' shared secret, of "hb", the sender, the peer and the
// nonce; the peer acknowledges it with the HMAC of "ack", the sender, the
// peer and the nonce. A heartbeat counts as acknowledged only with that
// answer, so that nobody without the secret can keep a cut-off node from
// fencing itself by answering for its peers; and a peer counts a node
// heard only from a heartbeat with its proof, so that nobody can make a
// peer say it hears a node it does not (what it says of the nodes it has
// not heard is what a controller counts a node off on).
type Heartbeats struct {
	// Node is this node's name.
	Node string
	// Secret is the agents' shared secret (at least 16 bytes); it prints
	// itself redacted, so a Heartbeats in %v or a log shows none of it.
	Secret fence.Secret
	// Client sends the heartbeats; nil means a client whose requests
	// time out after a second.
	Client *http.Client

	mu    sync.Mutex
	heard map[string]time.Time // peer -> when its last heartbeat came
}

// ErrWeakSecret means the shared secret is shorter than 16 bytes.
var ErrWeakSecret = errors.New("nodeagent: the agents' shared secret must have at least 16 bytes")

func (h *Heartbeats) mac(kind, from, to, nonce string) string {
	m := hmac.New(sha256.New, []byte(h.Secret.Reveal()))
	io.WriteString(m, kind+"\x00"+from+"\x00"+to+"\x00"+nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// ServeHTTP answers a peer's heartbeat.
func (h *Heartbeats) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/heartbeat" {
		http.Error(w, "POST /heartbeat", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	from, nonce := q.Get("from"), q.Get("nonce")
	if from == "" || len(nonce) != 32 || len(h.Secret.Reveal()) < 16 {
		http.Error(w, "bad heartbeat", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(q.Get("mac")), []byte(h.mac("hb", from, h.Node, nonce))) {
		http.Error(w, "heartbeat without the agents' proof", http.StatusForbidden)
		return
	}
	h.mu.Lock()
	if h.heard == nil {
		h.heard = map[string]time.Time{}
	}
	h.heard[from] = time.Now()
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
	u := url.URL{Scheme: "http", Host: p.Addr, Path: "/heartbeat", RawQuery: url.Values{"from": {h.Node}, "nonce": {nonce}, "mac": {h.mac("hb", h.Node, p.Name, nonce)}}.Encode()}
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
