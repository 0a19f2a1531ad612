package apiauth

import (
	"crypto/hmac"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzHMACVerify: whatever the headers and body of a request, Verify never
// panics, and accepts only a request whose signature is the key's over its
// method, target, date and body, within the window, once.
func FuzzHMACVerify(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef-fuzz")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	signer := &HMAC{Key: key, Now: func() time.Time { return now }}
	r, _ := http.NewRequest("POST", "http://api/v1/machine/m1/reinstall", strings.NewReader(`{"image":"a"}`))
	_ = signer.Sign(r)
	f.Add(r.Header.Get("Authorization"), r.Header.Get(HeaderDate), "/v1/machine/m1/reinstall", []byte(`{"image":"a"}`))
	f.Add(SchemeHMAC+" "+base64.StdEncoding.EncodeToString(make([]byte, 32)), now.Format(time.RFC3339Nano), "/x", []byte(nil))
	f.Add("Bearer x", "yesterday", "/", []byte("{}"))
	f.Fuzz(func(t *testing.T, auth, date, path string, body []byte) {
		v := &HMAC{Key: key, Now: func() time.Time { return now }}
		req, err := http.NewRequest("POST", "http://api/", strings.NewReader(string(body)))
		if err != nil {
			return
		}
		req.URL.Path = path
		req.Header.Set("Authorization", auth)
		req.Header.Set(HeaderDate, date)
		if v.Verify(req) != nil {
			return
		}
		sig, _ := strings.CutPrefix(auth, SchemeHMAC+" ")
		got, _ := base64.StdEncoding.DecodeString(sig)
		if !hmac.Equal(got, v.mac("POST", target(req), date, body)) {
			t.Fatal("accepted a request the key did not sign")
		}
		again, _ := http.NewRequest("POST", "http://api/", strings.NewReader(string(body)))
		again.URL.Path = path
		again.Header = req.Header.Clone()
		if v.Verify(again) == nil {
			t.Fatal("accepted the same signature twice")
		}
	})
}
