package fence

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// RedactedText is what a Secret prints instead of its value.
const RedactedText = "REDACTED"

// Secret is a credential: a password, an SNMP community or passphrase, a
// token. It prints as REDACTED through every fmt verb (%v, %+v, %#v, %s,
// %q), slog, and JSON or text encoding, and its value sits behind a pointer,
// so that even a struct that fmt prints by reflection, unexported fields
// and all, shows an address and never the credential. Reveal returns the
// value for the one call that sends it to a device.
//
// The zero Secret is no credential; a Secret is compared with IsZero or
// Reveal, never with ==.
type Secret struct{ p *string }

// NewSecret holds s as a Secret; an empty s gives the zero Secret.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{p: &s}
}

// Scrub returns text with every occurrence of the secrets' values replaced
// by REDACTED: for a message that a device or a program may have echoed a
// credential into, before it goes into an error or a log. Every occurrence
// of every value is found in the text as given, and overlapping or
// adjacent ones are replaced together, so that no part of a credential is
// left, whether one value holds another (a passphrase that begins with the
// community) or two overlap. A value shorter than 3 characters is left, as
// replacing it would mangle any text.
func Scrub(text string, secrets ...Secret) string {
	type span struct{ from, to int }
	var spans []span
	for _, s := range secrets {
		v := s.Reveal()
		if len(v) < 3 {
			continue
		}
		for at := 0; ; {
			i := strings.Index(text[at:], v)
			if i < 0 {
				break
			}
			spans = append(spans, span{at + i, at + i + len(v)})
			at += i + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from <= to; i++ {
			to = max(to, spans[i].to)
		}
		b.WriteString(text[last:from])
		b.WriteString(RedactedText)
		last = to
	}
	b.WriteString(text[last:])
	return b.String()
}

// Reveal returns the credential, "" for the zero Secret.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether s holds no credential.
func (s Secret) IsZero() bool { return s.p == nil || *s.p == "" }

// String returns REDACTED, or "" for the zero Secret (so that an unset
// credential can be told from a set one).
func (s Secret) String() string {
	if s.IsZero() {
		return ""
	}
	return RedactedText
}

// Format prints String whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// GoString prints String, for %#v.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// LogValue is String, for slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText encodes String, never the value: a Secret written to JSON,
// YAML or a record stays redacted.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
