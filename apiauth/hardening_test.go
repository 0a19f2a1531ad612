package apiauth_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/apiauth"
)

// signed returns a request to url with body, signed by s.
func signed(t *testing.T, s *apiauth.HMAC, url, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, s.Sign(r))
	return r
}

// A signature stays seen for twice the window of this process's own
// (monotonic) time: a wall clock stepped forward, which once made the cache
// forget it, and back again does not accept it twice.
func TestReplayAcrossClockSteps(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	step := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := &apiauth.HMAC{Key: key, Now: clock}
	signer := &apiauth.HMAC{Key: key, Now: clock}

	a := signed(t, signer, "http://api/v1/x", `{"a":1}`)
	replay := a.Clone(t.Context())
	replay.Body = io.NopCloser(strings.NewReader(`{"a":1}`))
	require.NoError(t, v.Verify(a))
	step(time.Hour) // forward: another request is verified meanwhile
	require.NoError(t, v.Verify(signed(t, signer, "http://api/v1/y", `{"b":2}`)))
	step(-time.Hour) // and back
	err := v.Verify(replay)
	require.ErrorIs(t, err, apiauth.ErrUnauthenticated)
	assert.Contains(t, err.Error(), "replayed")
}

// countingBody records whether anything read it.
type countingBody struct {
	r    io.Reader
	read int
}

func (c *countingBody) Read(p []byte) (int, error) { n, err := c.r.Read(p); c.read += n; return n, err }
func (c *countingBody) Close() error               { return nil }

// An unauthenticated request with a plausible header (a well-formed
// signature of the right length, a fresh date) is refused before its body
// is read when it declares more than MaxBody, or repeats a seen signature,
// or its signature is of the wrong length.
func TestChecksBeforeTheBody(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	v := &apiauth.HMAC{Key: key, Now: clock}
	signer := &apiauth.HMAC{Key: key, Now: clock}

	big := signed(t, signer, "http://api/v1/x", "{}")
	cb := &countingBody{r: bytes.NewReader(make([]byte, 10<<20))}
	big.Body, big.ContentLength = cb, 10<<20
	require.ErrorIs(t, v.Verify(big), apiauth.ErrUnauthenticated)
	assert.Zero(t, cb.read, "read before refusing a declared oversize body")

	ok := signed(t, signer, "http://api/v1/x", `{"a":1}`)
	again := ok.Clone(t.Context())
	require.NoError(t, v.Verify(ok))
	cb = &countingBody{r: strings.NewReader(`{"a":1}`)}
	again.Body = cb
	require.ErrorIs(t, v.Verify(again), apiauth.ErrUnauthenticated)
	assert.Zero(t, cb.read, "read a replay's body")

	short := signed(t, signer, "http://api/v1/x", `{}`)
	short.Header.Set("Authorization", apiauth.SchemeHMAC+" AAAA")
	cb = &countingBody{r: strings.NewReader(`{}`)}
	short.Body = cb
	require.ErrorIs(t, v.Verify(short), apiauth.ErrUnauthenticated)
	assert.Zero(t, cb.read)
}

// redirector answers the first request with a redirect to to, and records
// the Authorization header of every request it sees.
type redirector struct {
	to   string
	mu   sync.Mutex
	auth []string
}

func (rd *redirector) RoundTrip(r *http.Request) (*http.Response, error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.auth = append(rd.auth, r.Header.Get("Authorization"))
	if len(rd.auth) == 1 {
		return &http.Response{StatusCode: http.StatusTemporaryRedirect, Header: http.Header{"Location": {rd.to}},
			Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

// A redirect from https to http on the same host is followed without the
// credential (it would go in clear), as one to another host is; a redirect
// within https on the same host is signed again.
func TestNoCredentialOverADowngrade(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		signed         bool
	}{
		{"https to http, same host", "https://api.example:8443/v1/x", "http://api.example:8443/v1/y", false},
		{"to another host", "https://api.example/v1/x", "https://other.example/v1/y", false},
		{"within https, same host", "https://api.example/v1/x", "https://api.example/v1/y", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := &redirector{to: tc.to}
			c := &http.Client{Transport: &apiauth.Transport{Signer: apiauth.Bearer(token), Base: rd}}
			req, err := http.NewRequestWithContext(t.Context(), "GET", tc.from, nil)
			require.NoError(t, err)
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Len(t, rd.auth, 2)
			assert.Equal(t, "Bearer "+token, rd.auth[0])
			assert.Equal(t, tc.signed, rd.auth[1] != "", "second request's Authorization: %q", rd.auth[1])
		})
	}
}
