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
// credential into, before it goes into an error or a log. The longest value
// is replaced first; a value shorter than 3 characters is left, as
// replacing it would mangle any text.
func Scrub(text string, secrets ...Secret) string {
	vals := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if v := s.Reveal(); len(v) >= 3 {
			vals = append(vals, v)
		}
	}
	// The longest first: a secret that holds another (a passphrase that
	// begins with the community) must not be cut by the shorter one's
	// replacement, leaving the rest of it in the text.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	for _, v := range vals {
		text = strings.ReplaceAll(text, v, RedactedText)
	}
	return text
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
