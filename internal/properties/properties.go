// Package properties reads and writes Java-style .properties bodies, as the
// fence ConfigMaps of the node fencing design hold them (config.properties,
// method.properties, template.properties).
//
// The syntax is that of java.util.Properties.load:
//
//   - a logical line holds one entry: key=value, key: value or key value;
//   - lines whose first non-blank character is '#' or '!' are comments, and
//     blank lines are skipped;
//   - leading white space (space, tab, form feed) of every line is ignored,
//     so indented bodies read as plain ones;
//   - a line ending with an odd number of backslashes continues on the next
//     line, whose leading white space is dropped;
//   - lines end with "\n", "\r\n" or "\r";
//   - the escapes \t \n \r \f \\ \= \: \# \! "\ " (space) and \uXXXX (UTF-16,
//     surrogate pairs joined) are decoded in keys and values.
//
// Parse is stricter than Java, because a fence configuration that reads
// differently from what its author meant may fence the wrong plug or none:
//
//   - a key defined twice is an error naming the key and both lines;
//   - an escape other than those above is an error (Java silently drops the
//     backslash, so that "pass\word" would read as "password");
//   - a malformed \uXXXX escape, or a lone UTF-16 surrogate, is an error;
//   - a continuation backslash on the last line is an error (Java drops it);
//   - a continuation line that reads as an entry of its own (name=value)
//     after the key has ended is an error: a stray trailing backslash would
//     otherwise join it to the value before and lose its key;
//   - the body must be valid UTF-8 (a leading byte order mark is skipped).
//
// Values keep their trailing white space, as in Java. Error messages never
// quote values, which may be secrets.
package properties

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Entry is one key and value of a body.
type Entry struct {
	Key   string
	Value string
	// Line is the 1-based line on which the entry starts.
	Line int
}

// Sentinels wrapped by the Err field of Error, for errors.Is.
var (
	// ErrDuplicate means a key is defined twice.
	ErrDuplicate = errors.New("duplicate key")
	// ErrEscape means a backslash escape is malformed or unknown.
	ErrEscape = errors.New("invalid escape")
	// ErrEncoding means the body is not valid UTF-8.
	ErrEncoding = errors.New("invalid UTF-8")
	// ErrSwallowed means a continuation line reads as an entry of its own
	// (name=value): the backslash that ends the line before would make it
	// part of that line's value, and its key would be lost. Escape the
	// backslash (\\) if it belongs to the value, or remove it.
	ErrSwallowed = errors.New("a line that reads as an entry continues the value of the line before (a trailing backslash joined them)")
	// ErrContinuation means the last line ends with a continuation
	// backslash.
	ErrContinuation = errors.New("line continues past the end of the body")
)

// Error is one error of a body. Parse returns every error of a body, joined
// with errors.Join; use errors.As to get the first, or the Unwrap() []error
// method of the joined error to get all.
type Error struct {
	// Line is the 1-based line at fault; for a duplicate key, the line of
	// the second definition.
	Line int
	// Key is the key concerned, when known.
	Key string
	// PrevLine is, for a duplicate key, the line of the first definition;
	// else 0.
	PrevLine int
	// Err is ErrDuplicate, ErrEscape, ErrEncoding or ErrContinuation,
	// possibly wrapped with detail.
	Err error
}

// Error returns "line N: ..." naming the key when known. It never quotes a
// value.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d: ", e.Line)
	if e.PrevLine > 0 {
		fmt.Fprintf(&b, "key %q defined again (first on line %d)", e.Key, e.PrevLine)
		return b.String()
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// segment maps an offset of a logical line back to its natural line.
type segment struct {
	off  int // offset in the logical line where this natural line's text begins
	line int
}

type logical struct {
	text string
	segs []segment
}

// lineAt returns the natural line of offset off of l.
func (l *logical) lineAt(off int) int {
	n := l.segs[0].line
	for _, s := range l.segs {
		if s.off > off {
			break
		}
		n = s.line
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

// trailingBackslashes counts the backslashes that end s.
func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// Parse parses a .properties body and returns its entries in order. On error
// it returns no entries and every error found, each an *Error, joined.
func Parse(body string) ([]Entry, error) {
	body = strings.TrimPrefix(body, "\uFEFF")
	var (
		entries []Entry
		errs    []error
		seen    = map[string]int{}
		cur     *logical
		line    int
	)
	emit := func(l *logical) {
		e, lerrs := parseLogical(l)
		if len(lerrs) > 0 {
			errs = append(errs, lerrs...)
			return
		}
		if first, dup := seen[e.Key]; dup {
			errs = append(errs, &Error{Line: e.Line, Key: e.Key, PrevLine: first, Err: ErrDuplicate})
			return
		}
		seen[e.Key] = e.Line
		entries = append(entries, e)
	}
	for rest := body; rest != ""; {
		line++
		text := rest
		end := strings.IndexAny(rest, "\r\n")
		if end < 0 {
			rest = ""
		} else {
			text = rest[:end]
			if rest[end] == '\r' && end+1 < len(rest) && rest[end+1] == '\n' {
				end++
			}
			rest = rest[end+1:]
		}
		if !utf8.ValidString(text) {
			errs = append(errs, &Error{Line: line, Err: ErrEncoding})
			cur = nil // drop the logical line: its key or value is unreadable
			continue
		}
		t := trimLeftSpace(text)
		if cur == nil {
			if t == "" || t[0] == '#' || t[0] == '!' {
				continue
			}
			cur = &logical{segs: []segment{{0, line}}}
		} else {
			cur.segs = append(cur.segs, segment{len(cur.text), line})
			// A continued line that reads as an entry of its own (key=value,
			// key: value) was most likely one that a trailing backslash on
			// the line before joined to that value: the key would be lost,
			// and the configuration validate without it.
			// The key is not named: the line is part of a value, which may
			// be a secret.
			if inValue(cur.text) && readsAsEntry(t) {
				errs = append(errs, &Error{Line: line, Err: ErrSwallowed})
			}
		}
		if trailingBackslashes(t)%2 == 1 {
			cur.text += t[:len(t)-1]
			continue
		}
		cur.text += t
		emit(cur)
		cur = nil
	}
	if cur != nil {
		errs = append(errs, &Error{Line: line, Err: ErrContinuation})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return entries, nil
}

// parseLogical splits a logical line into key and value, as
// java.util.Properties.load does, and decodes their escapes.
func parseLogical(l *logical) (Entry, []error) {
	s := l.text
	keyLen, valueStart := 0, len(s)
	hasSep, bs := false, false
	for keyLen < len(s) {
		c := s[keyLen]
		if (c == '=' || c == ':') && !bs {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if isSpace(c) && !bs {
			valueStart = keyLen + 1
			break
		}
		bs = c == '\\' && !bs
		keyLen++
	}
	for valueStart < len(s) {
		c := s[valueStart]
		if !isSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	e := Entry{Line: l.segs[0].line}
	var errs []error
	key, err := unescape(s[:keyLen], 0, l)
	if err != nil {
		errs = append(errs, err)
	}
	e.Key = key
	value, err := unescape(s[valueStart:], valueStart, l)
	if err != nil {
		if err.Key == "" && len(errs) == 0 {
			err.Key = key
		}
		errs = append(errs, err)
	}
	e.Value = value
	return e, errs
}

// unescape decodes the escapes of raw, which starts at offset base of l.
func unescape(raw string, base int, l *logical) (string, *Error) {
	if !strings.ContainsRune(raw, '\\') {
		return raw, nil
	}
	fail := func(i int, format string, a ...any) (string, *Error) {
		return "", &Error{Line: l.lineAt(base + i), Err: fmt.Errorf("%w: "+format, append([]any{ErrEscape}, a...)...)}
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return fail(i, "backslash at the end of the line")
		}
		switch raw[i+1] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case '\\', '=', ':', '#', '!', ' ':
			b.WriteByte(raw[i+1])
		case 'u':
			r1, ok := hex4(raw, i+2)
			if !ok {
				return fail(i, `\u needs four hexadecimal digits`)
			}
			n := 6
			r := r1
			switch {
			case utf16.IsSurrogate(r1) && r1 < 0xDC00:
				r2, ok := rune(0), false
				if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					r2, ok = hex4(raw, i+8)
				}
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return fail(i, `\u escape of a high surrogate without a low surrogate after it`)
				}
				r = utf16.DecodeRune(r1, r2)
				n = 12
			case utf16.IsSurrogate(r1):
				return fail(i, `\u escape of a low surrogate without a high surrogate before it`)
			}
			b.WriteRune(r)
			i += n
			continue
		default:
			return fail(i, `unknown escape (a backslash may only come before t, n, r, f, u, \, =, :, #, ! or a space; write \\ for a backslash)`)
		}
		i += 2
	}
	return b.String(), nil
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// Format writes entries as a body that Parse reads back to the same keys and
// values: one key=value line per entry, in order, with the characters that
// need it escaped (in keys: white space, '=', ':', a leading '#' or '!'; in
// values: a leading space; everywhere: backslashes, control and other
// non-printable characters, as \t \n \r \f or \uXXXX). The entries' Line
// fields are ignored. A key or value that is not valid UTF-8 is an error.
func Format(w io.Writer, entries []Entry) error {
	var b strings.Builder
	for i, e := range entries {
		if !utf8.ValidString(e.Key) || !utf8.ValidString(e.Value) {
			return fmt.Errorf("properties: entry %d (key %q): %w", i+1, strings.ToValidUTF8(e.Key, "\uFFFD"), ErrEncoding)
		}
		escape(&b, e.Key, true)
		b.WriteByte('=')
		escape(&b, e.Value, false)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func escape(b *strings.Builder, s string, key bool) {
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			if key || i == 0 {
				b.WriteString(`\ `)
			} else {
				b.WriteByte(' ')
			}
		case '=', ':':
			if key {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '#', '!':
			if key && i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			if unicode.IsPrint(r) {
				b.WriteRune(r)
				continue
			}
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				fmt.Fprintf(b, `\u%04X\u%04X`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04X`, r)
			}
		}
	}
}

// inValue reports whether a logical line read so far has passed its key:
// it holds an unescaped separator ('=', ':' or white space).
func inValue(s string) bool {
	bs := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !bs && (c == '=' || c == ':' || isSpace(c)) {
			return true
		}
		bs = c == '\\' && !bs
	}
	return false
}

// readsAsEntry reports whether a line reads as an entry of its own: a key
// of letters, digits, '_', '-' and '.' (starting with a letter) followed by
// '='.
func readsAsEntry(t string) bool {
	i := 0
	for i < len(t) {
		c := t[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	// Only '=': "word:" begins too many values (a fingerprint
	// SHA256:..., a URL, a host:port list) to be taken for an entry.
	rest := strings.TrimLeft(t[i:], " \t\f")
	return rest != "" && rest[0] == '='
}
