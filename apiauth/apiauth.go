// Package apiauth authenticates the callers of fencekit's HTTP APIs (the
// teardown API, the reinstall API), whose requests switch off, wipe and
// reinstall machines: an anonymous or badly signed request is refused with
// 401 before anything is done. Two schemes, each compared in constant time:
//
//   - Bearer tokens (Tokens): "Authorization: Bearer <token>". A token is a
//     password: send it over TLS only (a replayed request is indistinguishable
//     from the original).
//
//   - Signed requests (HMAC), as metal-stack's API signs its admin requests:
//     the caller and the server share a key; the caller sends the time
//     ("X-Fencekit-Date", RFC 3339) and "Authorization: FENCEKIT-HMAC-SHA256
//     <base64 signature>", the HMAC-SHA256 under the key of
//
//     METHOD "\n" PATH[?QUERY] "\n" DATE "\n" hex(SHA-256(body))
//
//     A request older or newer than Window (5 min) is refused, and so is a
//     signature seen before within the window: a captured request cannot be
//     replayed, nor its body or target changed.
//
// Require wraps a handler; Bearer and (*HMAC).Sign prepare a client's
// requests (Transport does it for every request of an http.Client, and
// never sends a credential to another host or over a downgrade from https
// to http after a redirect).
//
// What a server of these APIs must set: a verifier checks everything that
// needs no body first and then reads at most MaxBody, but a client that
// sends its headers or body slowly still holds a connection, so bound both
// with http.Server's ReadHeaderTimeout and ReadTimeout (10 s and 30 s are
// ample for these small requests), and serve over TLS (a bearer token is a
// password).
package apiauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ErrUnauthenticated is wrapped by every refusal.
var ErrUnauthenticated = errors.New("unauthenticated")

// Verifier authenticates one request. It returns nil for a request it
// accepts, an error wrapping ErrUnauthenticated otherwise; it may read the
// body, and leaves it readable again.
type Verifier interface {
	Verify(r *http.Request) error
}

// MaxBody bounds the body a signature covers, and so the body of every
// signed request: fencekit's requests are small JSON documents, and a
// verifier reads a body only after every check that needs no body passed.
const MaxBody = 64 << 10

// Tokens accepts requests that bear one of its tokens.
type Tokens struct {
	tokens [][]byte
}

// NewTokens returns the Verifier of tokens. An empty token is refused.
func NewTokens(tokens ...string) (*Tokens, error) {
	t := &Tokens{}
	for _, s := range tokens {
		if len(s) < 16 {
			return nil, errors.New("apiauth: a token of fewer than 16 characters is too easy to guess")
		}
		t.tokens = append(t.tokens, []byte(s))
	}
	if len(t.tokens) == 0 {
		return nil, errors.New("apiauth: no token")
	}
	return t, nil
}

// Verify accepts "Authorization: Bearer <token>" with one of the tokens,
// compared in constant time (every token is compared, so that the time
// does not tell which one nearly matched).
func (t *Tokens) Verify(r *http.Request) error {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	match := 0
	for _, tok := range t.tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), tok)
	}
	if match != 1 {
		return fmt.Errorf("%w: the token is not accepted", ErrUnauthenticated)
	}
	return nil
}

// The headers of a signed request.
const (
	HeaderDate    = "X-Fencekit-Date"
	SchemeHMAC    = "FENCEKIT-HMAC-SHA256"
	DefaultWindow = 5 * time.Minute
)

// HMAC signs and verifies requests with a shared key. The signature covers
// the method, the path and query, the time and the body, not the host; a
// signature is accepted once per HMAC value within the window, so a
// request cannot be replayed against the same server, but it can against
// another server sharing the key (a second replica): give each server its
// own key, or run one replica.
type HMAC struct {
	// Key is the shared key: 32 random bytes or more.
	Key []byte
	// Window is how far a request's time may be from the verifier's
	// (DefaultWindow when zero).
	Window time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu   sync.Mutex
	seen map[string]seenSig // signatures seen
}

// seenSig is a signature seen: when (this process's monotonic clock), and
// the request's time.
type seenSig struct{ seen, at time.Time }

func (h *HMAC) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *HMAC) window() time.Duration {
	if h.Window > 0 {
		return h.Window
	}
	return DefaultWindow
}

// body reads a request's body (at most MaxBody) and makes it readable
// again.
func body(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("a body of more than %d bytes", MaxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return b, nil
}

// mac computes a request's signature.
func (h *HMAC) mac(method, target, date string, body []byte) []byte {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, h.Key)
	fmt.Fprintf(m, "%s\n%s\n%s\n%s", method, target, date, hex.EncodeToString(sum[:]))
	return m.Sum(nil)
}

// target is the signed part of the URL: path and query.
func target(r *http.Request) string {
	t := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		t += "?" + r.URL.RawQuery
	}
	return t
}

// Sign signs a client's request: it sets the date header and the
// signature (reading the body, and leaving it readable).
func (h *HMAC) Sign(r *http.Request) error {
	if len(h.Key) < 32 {
		return errors.New("apiauth: an HMAC key of fewer than 32 bytes")
	}
	b, err := body(r)
	if err != nil {
		return fmt.Errorf("apiauth: %w", err)
	}
	date := h.now().UTC().Format(time.RFC3339Nano)
	r.Header.Set(HeaderDate, date)
	r.Header.Set("Authorization", SchemeHMAC+" "+base64.StdEncoding.EncodeToString(h.mac(r.Method, target(r), date, b)))
	return nil
}

// Verify accepts a request signed with the key within the window, whose
// signature it has not seen before. What needs no body is checked before
// the body is read: the scheme, the signature's encoding and length, the
// time, a replay and the declared length; only then is the body (at most
// MaxBody) read and the signature compared. A seen signature is kept for
// twice the window of this process's monotonic time and until the wall clock
// has passed its request's time by the window: a clock stepped forward does
// not forget it, and a clock stepped back keeps it, so neither accepts it
// twice.
func (h *HMAC) Verify(r *http.Request) error {
	if len(h.Key) < 32 {
		return fmt.Errorf("%w: no key to verify signatures", ErrUnauthenticated)
	}
	sig, ok := strings.CutPrefix(r.Header.Get("Authorization"), SchemeHMAC+" ")
	if !ok {
		return fmt.Errorf("%w: not a signed request", ErrUnauthenticated)
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: the signature is not %d bytes in base64", ErrUnauthenticated, sha256.Size)
	}
	date := r.Header.Get(HeaderDate)
	at, err := time.Parse(time.RFC3339Nano, date)
	if err != nil {
		return fmt.Errorf("%w: %s is not an RFC 3339 time", ErrUnauthenticated, HeaderDate)
	}
	now, win := h.now(), h.window()
	if d := now.Sub(at); d > win || d < -win {
		return fmt.Errorf("%w: the request's time is %v from the server's (at most %v)", ErrUnauthenticated, d.Round(time.Second), win)
	}
	key := string(got)
	if h.replayed(key, win) {
		return fmt.Errorf("%w: a replayed request (its signature was seen before)", ErrUnauthenticated)
	}
	if r.ContentLength > MaxBody {
		return fmt.Errorf("%w: a body of more than %d bytes", ErrUnauthenticated, MaxBody)
	}
	b, err := body(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	if !hmac.Equal(got, h.mac(r.Method, target(r), date, b)) {
		return fmt.Errorf("%w: the signature does not match the request", ErrUnauthenticated)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, seen := h.seen[key]; seen {
		return fmt.Errorf("%w: a replayed request (its signature was seen before)", ErrUnauthenticated)
	}
	h.seen[key] = seenSig{seen: time.Now(), at: at}
	return nil
}

// replayed drops the signatures that can no longer be accepted (kept twice
// the window of monotonic time, and the wall clock past their request's
// time by the window), and reports whether key is one of those left.
func (h *HMAC) replayed(key string, win time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]seenSig{}
	}
	now := h.now()
	for k, e := range h.seen {
		// Dropped only once both clocks agree it cannot be accepted again:
		// twice the window of this process's monotonic time, and the wall
		// clock past the request's time and the window (a clock stepped
		// back keeps it).
		if time.Since(e.seen) > 2*win && now.After(e.at.Add(win)) {
			delete(h.seen, k)
		}
	}
	_, seen := h.seen[key]
	return seen
}

// Require wraps next: a request v refuses is answered by deny (or a plain
// 401) and never reaches next. deny writes the refusal in the API's own
// shape; it must set the status 401.
func Require(v Verifier, next http.Handler, deny func(w http.ResponseWriter, r *http.Request, err error)) http.Handler {
	if deny == nil {
		deny = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v == nil {
			deny(w, r, fmt.Errorf("%w: the API has no authentication configured", ErrUnauthenticated))
			return
		}
		if err := v.Verify(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fencekit", `+SchemeHMAC)
			deny(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Signer prepares a client's request.
type Signer interface {
	Sign(r *http.Request) error
}

// Bearer signs requests with a bearer token.
type Bearer string

// Sign sets "Authorization: Bearer <token>".
func (b Bearer) Sign(r *http.Request) error {
	r.Header.Set("Authorization", "Bearer "+string(b))
	return nil
}

// String hides the token.
func (b Bearer) String() string { return "Bearer <redacted>" }

// Transport signs every request with Signer before Base (or
// http.DefaultTransport) sends it; but a request an http.Client follows
// after a redirect to another host, or from https to http, is sent unsigned
// and without an Authorization header: a credential goes only to the host
// it was meant for, and never in clear over a downgrade.
type Transport struct {
	Signer Signer
	Base   http.RoundTripper
}

// RoundTrip signs a copy of the request and sends it.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	first := r
	for n := 0; first.Response != nil && first.Response.Request != nil && n < 100; n++ {
		first = first.Response.Request
	}
	if first != r && (!strings.EqualFold(first.URL.Host, r.URL.Host) ||
		(strings.EqualFold(first.URL.Scheme, "https") && !strings.EqualFold(r.URL.Scheme, "https"))) {
		r = r.Clone(r.Context())
		r.Header.Del("Authorization")
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	if r.Body != nil && r.GetBody != nil {
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	if err := t.Signer.Sign(r); err != nil {
		return nil, err
	}
	return base.RoundTrip(r)
}

// String hides the key.
func (h *HMAC) String() string { return "HMAC(key redacted)" }

// GoString hides the key from %#v too.
func (h *HMAC) GoString() string { return h.String() }

// String hides the tokens.
func (t *Tokens) String() string { return fmt.Sprintf("Tokens(%d, redacted)", len(t.tokens)) }

// GoString hides the tokens from %#v too.
func (t *Tokens) GoString() string { return t.String() }

// AnyOf accepts a request that one of its verifiers accepts: a server that
// takes both bearer tokens (for operators' scripts) and signed requests
// (for programs). A request none accepts is refused with every reason.
type AnyOf []Verifier

// Verify tries each verifier in turn.
func (a AnyOf) Verify(r *http.Request) error {
	var why []string
	for _, v := range a {
		err := v.Verify(r)
		if err == nil {
			return nil
		}
		why = append(why, strings.TrimPrefix(err.Error(), ErrUnauthenticated.Error()+": "))
	}
	if len(why) == 0 {
		return fmt.Errorf("%w: no verifier configured", ErrUnauthenticated)
	}
	return fmt.Errorf("%w: %s", ErrUnauthenticated, strings.Join(why, "; "))
}
