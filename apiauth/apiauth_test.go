package apiauth_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/apiauth"
)

const token = "s3cret-token-0123456789"

var key = []byte("0123456789abcdef0123456789abcdef-key")

// server runs h behind Require over TLS and counts the requests that got
// through.
func server(t *testing.T, v apiauth.Verifier) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	})
	s := httptest.NewTLSServer(apiauth.Require(v, h, nil))
	t.Cleanup(s.Close)
	return s, &n
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// client returns a client of s (a copy: s.Client() is shared) that signs
// with sg.
func client(s *httptest.Server, sg apiauth.Signer) *http.Client {
	c := *s.Client()
	if sg != nil {
		c.Transport = &apiauth.Transport{Signer: sg, Base: c.Transport}
	}
	return &c
}

func TestTokens(t *testing.T) {
	v, err := apiauth.NewTokens(token)
	require.NoError(t, err)
	s, n := server(t, v)
	code, body := do(t, client(s, apiauth.Bearer(token)), "POST", s.URL+"/nodes/n1/drain", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "POST /nodes/n1/drain ", body)
	for _, sg := range []apiauth.Signer{nil, apiauth.Bearer("s3cret-token-012345678X"), apiauth.Bearer("")} {
		code, body := do(t, client(s, sg), "POST", s.URL+"/nodes/n1/drain", "")
		assert.Equal(t, http.StatusUnauthorized, code, "%v", sg)
		assert.NotContains(t, body, token)
	}
	assert.EqualValues(t, 1, n.Load(), "nothing else reached the handler")
	_, err = apiauth.NewTokens("short")
	assert.Error(t, err)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", v, v, v), token)
	assert.NotContains(t, fmt.Sprint(apiauth.Bearer(token)), token)
}

func TestHMAC(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	v := &apiauth.HMAC{Key: key, Now: clock}
	s, n := server(t, v)
	signer := &apiauth.HMAC{Key: key, Now: clock}
	c := client(s, signer)

	code, body := do(t, c, "POST", s.URL+"/v1/machine/m1/reinstall?x=1", `{"image":"ubuntu"}`)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, `POST /v1/machine/m1/reinstall {"image":"ubuntu"}`, body)

	// A replay of the same signed request: refused.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL+"/v1/machine/m1/reinstall", strings.NewReader(`{"image":"a"}`))
	require.NoError(t, signer.Sign(req))
	saved := req.Clone(t.Context())
	saved.Body = io.NopCloser(strings.NewReader(`{"image":"a"}`))
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = s.Client().Do(saved)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "replayed")
	assert.Contains(t, string(b), "replayed")

	// Tampered: another body, another target, another key, an old date.
	tamper := func(mod func(r *http.Request)) int {
		r, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL+"/v1/machine/m2/reinstall", strings.NewReader(`{"image":"b"}`))
		require.NoError(t, signer.Sign(r))
		mod(r)
		resp, err := s.Client().Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 401, tamper(func(r *http.Request) {
		r.Body, r.GetBody, r.ContentLength = io.NopCloser(strings.NewReader(`{"image":"evil"}`)), nil, 16
	}))
	assert.Equal(t, 401, tamper(func(r *http.Request) { r.URL.Path = "/v1/machine/m3/reinstall" }))
	assert.Equal(t, 401, tamper(func(r *http.Request) { r.Header.Set(apiauth.HeaderDate, now.Add(-time.Hour).Format(time.RFC3339Nano)) }))
	other := &apiauth.HMAC{Key: bytes.Repeat([]byte("k"), 32), Now: clock}
	assert.Equal(t, 401, tamper(func(r *http.Request) { require.NoError(t, other.Sign(r)) }))
	assert.Equal(t, 200, tamper(func(*http.Request) {}), "an untampered one passes")

	// Too old or too new a request.
	late := &apiauth.HMAC{Key: key, Now: func() time.Time { return now.Add(6 * time.Minute) }}
	code, body = do(t, client(s, late), "GET", s.URL+"/x", "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.EqualValues(t, 3, n.Load())
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", v, v, v), string(key))
}

// Without a Verifier, every request is refused.
func TestRequireWithoutVerifier(t *testing.T) {
	s, n := server(t, nil)
	code, _ := do(t, s.Client(), "GET", s.URL+"/", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Zero(t, n.Load())
}

// AnyOf takes a token or a signature; a request with neither is refused
// with both reasons, and a replayed signature still is.
func TestAnyOf(t *testing.T) {
	tokens, err := apiauth.NewTokens(token)
	require.NoError(t, err)
	h := &apiauth.HMAC{Key: key}
	s, n := server(t, apiauth.AnyOf{tokens, h})
	code, _ := do(t, client(s, apiauth.Bearer(token)), "POST", s.URL+"/a", "x")
	assert.Equal(t, http.StatusOK, code)
	code, _ = do(t, client(s, h), "POST", s.URL+"/a", "x")
	assert.Equal(t, http.StatusOK, code)
	code, body := do(t, client(s, nil), "POST", s.URL+"/a", "x")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, 1, strings.Count(body, "unauthenticated"), body)
	assert.Contains(t, body, ";")

	req, err := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/b", nil)
	require.NoError(t, err)
	require.NoError(t, h.Sign(req))
	hdr := req.Header.Clone()
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	again, err := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/b", nil)
	require.NoError(t, err)
	again.Header = hdr
	resp, err = s.Client().Do(again)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "replayed")
	assert.EqualValues(t, 3, n.Load())
	code, _ = do(t, client(s, apiauth.Bearer(token)), "GET", s.URL+"/c", "")
	assert.Equal(t, http.StatusOK, code)
	_, err = http.NewRequest("GET", "/", nil)
	require.NoError(t, err)
	assert.ErrorIs(t, apiauth.AnyOf{}.Verify(req), apiauth.ErrUnauthenticated)
}

// A redirect to another host gets no credential; a redirect on the same
// host is signed again.
func TestTransportRedirectToAnotherHost(t *testing.T) {
	var got atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)
	var same atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/landed", http.StatusFound) })
	mux.HandleFunc("/landed", func(w http.ResponseWriter, r *http.Request) { same.Store(r.Header.Get("Authorization")) })
	home := httptest.NewServer(mux)
	t.Cleanup(home.Close)
	c := &http.Client{Transport: &apiauth.Transport{Signer: apiauth.Bearer(token)}}

	code, _ := do(t, c, http.MethodGet, home.URL+"/away", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "", got.Load(), "no credential to another host")
	code, _ = do(t, c, http.MethodGet, home.URL+"/here", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Bearer "+token, same.Load())
}
