package fence_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

// A Secret never prints its value: not through any fmt verb, not inside a
// struct fmt prints by reflection (unexported fields too), not through slog
// or JSON.
func TestSecretNeverPrints(t *testing.T) {
	const pw = "hunter2-pw"
	type inner struct {
		password fence.Secret
		Exported fence.Secret
	}
	v := struct {
		S     fence.Secret
		hid   fence.Secret
		In    inner
		InPtr *inner
	}{fence.NewSecret(pw), fence.NewSecret(pw), inner{fence.NewSecret(pw), fence.NewSecret(pw)}, &inner{fence.NewSecret(pw), fence.NewSecret(pw)}}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out = append(out, fmt.Sprintf(verb, v), fmt.Sprintf(verb, &v), fmt.Sprintf(verb, v.S))
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "v", v, "s", v.S)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v, "s", v.S)
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, buf.String(), string(j))
	for _, o := range out {
		if strings.Contains(o, pw) || strings.Contains(o, fmt.Sprintf("%x", pw)) {
			t.Errorf("secret printed: %s", o)
		}
	}
	if v.S.Reveal() != pw || v.S.String() != fence.RedactedText || !fence.NewSecret("").IsZero() || fence.NewSecret("").String() != "" {
		t.Error("Reveal, String or IsZero")
	}
}

// Scrub takes every credential out of a message; one of two characters is
// left, as it would mangle any text.
func TestScrub(t *testing.T) {
	got := fence.Scrub("login s3cret-pw failed for s3cret-pw; community pub, key ab",
		fence.NewSecret("s3cret-pw"), fence.NewSecret("pub"), fence.NewSecret("ab"), fence.Secret{})
	if want := "login REDACTED failed for REDACTED; community REDACTED, key ab"; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
	// A secret that holds another goes whole, whatever the order given.
	got = fence.Scrub("auth abc-def-ghi, community abc", fence.NewSecret("abc"), fence.NewSecret("abc-def-ghi"))
	if want := "auth REDACTED, community REDACTED"; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
	// Two that overlap, neither holding the other, go whole too: no end
	// of either is left.
	for _, order := range [][2]string{{"passXYZ", "XYZword"}, {"XYZword", "passXYZ"}} {
		got = fence.Scrub("sent passXYZword, then XYZword", fence.NewSecret(order[0]), fence.NewSecret(order[1]))
		if want := "sent REDACTED, then REDACTED"; got != want {
			t.Errorf("Scrub(%q) = %q, want %q", order, got, want)
		}
	}
	// A value that overlaps itself.
	if got = fence.Scrub("key aaaa", fence.NewSecret("aaa")); got != "key REDACTED" {
		t.Errorf("Scrub = %q", got)
	}
}
