package fence

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Params are a method's parameters: the keys of the agents' options and of
// the node-fencing design's .properties files (ipaddr, username, password,
// plug, ...). Keys are canonical: lower case, with '-' written as '_' (so
// --power-wait, power-wait and power_wait are one key). Build Params with
// NewParams or Set, which canonicalise; read them with Get and the typed
// getters.
//
// Secret values (passwords, communities, tokens) are never printed by this
// package: String and Redacted hide them.
type Params map[string]string

// CanonicalKey returns the canonical form of a parameter name.
func CanonicalKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	k = strings.TrimLeft(k, "-")
	return strings.ReplaceAll(k, "-", "_")
}

// NewParams returns Params holding kv, read as key, value pairs.
func NewParams(kv ...string) Params {
	p := make(Params, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	return p
}

// Set stores v under the canonical form of k.
func (p Params) Set(k, v string) { p[CanonicalKey(k)] = v }

// Secret returns the value of the first of keys that is set as a Secret,
// the zero Secret when none is.
func (p Params) Secret(keys ...string) Secret {
	v, _ := p.Get(keys...)
	return NewSecret(v)
}

// Get returns the value of the first of keys that is set, and whether one
// was. Later keys are aliases, such as Get("username", "login").
func (p Params) Get(keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := p[CanonicalKey(k)]; ok {
			return v, true
		}
	}
	return "", false
}

// Clone returns a copy of p.
func (p Params) Clone() Params { return maps.Clone(p) }

// Merge returns a copy of p with every key of over set over it.
func (p Params) Merge(over Params) Params {
	out := make(Params, len(p)+len(over))
	maps.Copy(out, p)
	maps.Copy(out, over)
	return out
}

// IsSecret reports whether a parameter holds a credential that must never be
// printed: passwords, SNMP communities and privacy passphrases, tokens.
func IsSecret(key string) bool {
	k := CanonicalKey(key)
	for _, s := range []string{"passw", "secret", "token", "community", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "key" || k == "private_key"
}

// Redacted returns a copy of p with every secret value replaced by "REDACTED".
func (p Params) Redacted() map[string]string {
	out := make(map[string]string, len(p))
	for k, v := range p {
		if IsSecret(k) {
			v = RedactedText
		}
		out[k] = v
	}
	return out
}

// String lists the parameters sorted by key, secrets redacted.
func (p Params) String() string {
	r := p.Redacted()
	keys := slices.Sorted(maps.Keys(r))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(r[k]))
	}
	return b.String()
}

// ParamError is a parameter with a value this package cannot use. It names
// the key and, unless the key is secret, the value.
type ParamError struct {
	Key    string
	Value  string
	Reason string
}

func (e *ParamError) Error() string {
	if IsSecret(e.Key) {
		return fmt.Sprintf("parameter %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("parameter %s=%q: %s", e.Key, e.Value, e.Reason)
}

// Is makes a ParamError match ErrConfig.
func (e *ParamError) Is(target error) bool { return target == ErrConfig }

// Seconds reads a duration written as the agents write it: seconds, possibly
// fractional ("20", "0.5"), or a Go duration ("1500ms"). ok is false when the
// key is not set.
func (p Params) Seconds(key string) (d time.Duration, ok bool, err error) {
	v, ok := p.Get(key)
	if !ok {
		return 0, false, nil
	}
	d, err = ParseSeconds(v)
	if err != nil {
		return 0, true, &ParamError{Key: CanonicalKey(key), Value: v, Reason: err.Error()}
	}
	return d, true, nil
}

// ParseSeconds parses "20", "0.5" (seconds) or a Go duration such as "1500ms".
// Negative values are refused.
func ParseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f != f || f > 1e9 || f < -1e9 {
			return 0, fmt.Errorf("duration out of range")
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		d, err = time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("not a number of seconds or a duration")
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration")
	}
	return d, nil
}

// Int reads an integer parameter.
func (p Params) Int(key string) (n int, ok bool, err error) {
	v, ok := p.Get(key)
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(strings.TrimSpace(v))
	if errors.Is(err, strconv.ErrRange) {
		return 0, true, &ParamError{Key: CanonicalKey(key), Value: v, Reason: fmt.Sprintf("out of range: an integer from %d to %d", math.MinInt, math.MaxInt)}
	}
	if err != nil {
		return 0, true, &ParamError{Key: CanonicalKey(key), Value: v, Reason: "not an integer"}
	}
	return n, true, nil
}

// Bool reads a flag written as the agents and .properties files write them:
// yes/no, true/false, on/off, 1/0 (any case). A key set to the empty string
// counts as true, as a bare --ssl-insecure does.
func (p Params) Bool(key string) (b bool, ok bool, err error) {
	v, ok := p.Get(key)
	if !ok {
		return false, false, nil
	}
	b, err = ParseBool(v)
	if err != nil {
		return false, true, &ParamError{Key: CanonicalKey(key), Value: v, Reason: err.Error()}
	}
	return b, true, nil
}

// ParseBool parses yes/no, true/false, on/off, 1/0 (any case); "" is true.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "1", "yes", "y", "true", "on":
		return true, nil
	case "0", "no", "n", "false", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a yes/no value")
}
