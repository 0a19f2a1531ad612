package reboot

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The annotations of the reboot interface.
const (
	// Annotation is the plain reboot annotation: set and forget. The
	// controller removes it once the host is off and may be powered on.
	Annotation = "reboot.metal3.io"
	// KeyedAnnotationPrefix starts the keyed reboot annotations
	// (reboot.metal3.io/{key}): the host is held off until every one of them
	// is removed by the client that owns it.
	KeyedAnnotationPrefix = Annotation + "/"
)

// misspeltAnnotation is the spelling of one of the design's examples
// ("reboot.metal.io"): it is not a reboot annotation, and Decide says so.
const misspeltAnnotation = "reboot.metal.io"

// commonPrefix is what the reboot annotations and the misspelling share; a
// key without it is skipped after one comparison.
const commonPrefix = "reboot.metal"

// KeyedAnnotation returns the keyed reboot annotation of a client's key:
// KeyedAnnotationPrefix + key.
func KeyedAnnotation(key string) string { return KeyedAnnotationPrefix + key }

// IsAnnotation reports whether an annotation's key is a reboot annotation,
// plain or keyed.
func IsAnnotation(key string) bool {
	return key == Annotation || strings.HasPrefix(key, KeyedAnnotationPrefix)
}

// Mode is how a host is switched off for a reboot.
type Mode uint8

const (
	// Soft, the default, asks the operating system to shut down first (the
	// device's graceful off) and switches the host off hard when that is
	// refused or does not finish in time.
	Soft Mode = iota
	// Hard switches the host off at once.
	Hard
)

// String returns "soft" or "hard".
func (m Mode) String() string {
	if m == Hard {
		return "hard"
	}
	return "soft"
}

// Request is one reboot annotation, parsed.
type Request struct {
	// Annotation is the annotation's exact key, as RemoveAnnotations would
	// name it.
	Annotation string
	// Key is the client's key of a keyed annotation; "" for the plain one.
	Key string
	// Mode is the mode the value asks for: Soft unless the value is a JSON
	// object whose "mode" is "hard".
	Mode Mode
	// Force is true when the value is a JSON object whose "force" is true:
	// the request also applies to a host that is not provisioned.
	Force bool
	// Value is the annotation's value, unchanged.
	Value string
	// Problem tells what is wrong with the value and how it was read; ""
	// when the value is well-formed.
	Problem string
}

// Keyed reports whether the request is a keyed annotation
// (reboot.metal3.io/{key}); even one with an empty key is.
func (r Request) Keyed() bool { return r.Annotation != Annotation }

// Problem is something wrong that Decide or ParseAnnotations noticed: a
// malformed annotation value, a misspelt annotation, a clock that runs
// behind the status. A problem never stops a decision; it says how the
// input was read, so that the caller can report it (an event, a log).
type Problem struct {
	// Annotation is the annotation at fault; "" for a problem that is not
	// about one annotation.
	Annotation string
	// Message says what is wrong and what was done about it.
	Message string
}

// String returns "annotation: message", or the message alone.
func (p Problem) String() string {
	if p.Annotation == "" {
		return p.Message
	}
	return p.Annotation + ": " + p.Message
}

func compareProblems(a, b Problem) int {
	if c := strings.Compare(a.Annotation, b.Annotation); c != 0 {
		return c
	}
	return strings.Compare(a.Message, b.Message)
}

// ParseRequest parses one annotation. ok is false when the key is not a
// reboot annotation.
func ParseRequest(annotation, value string) (r Request, ok bool) {
	if !IsAnnotation(annotation) {
		return Request{}, false
	}
	r = Request{Annotation: annotation, Value: value}
	if annotation != Annotation {
		r.Key = annotation[len(KeyedAnnotationPrefix):]
	}
	r.Mode, r.Force, r.Problem = ParseValue(value)
	if r.Keyed() && r.Key == "" {
		r.Problem = joinProblem(problemEmptyKey, r.Problem)
	}
	return r, true
}

const (
	problemEmptyKey  = "keyed annotation with an empty key: taken as a keyed request"
	problemMisspelt  = "not a reboot annotation (the reboot annotation is " + Annotation + "): ignored"
	problemNotObject = "value is not a JSON object but mentions a mode: read as mode soft, not forced (write {\"mode\":\"hard\"} for a hard reboot)"
)

func joinProblem(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// ParseAnnotations returns the reboot requests among annotations, sorted by
// annotation key, and every problem found: those of the requests' values
// and misspelt reboot annotations. It allocates nothing when there is no
// reboot annotation and no problem.
func ParseAnnotations(annotations map[string]string) (requests []Request, problems []Problem) {
	for k, v := range annotations {
		if !strings.HasPrefix(k, commonPrefix) {
			continue
		}
		if r, ok := ParseRequest(k, v); ok {
			requests = append(requests, r)
			if r.Problem != "" {
				problems = append(problems, Problem{Annotation: k, Message: r.Problem})
			}
		} else if isMisspelt(k) {
			problems = append(problems, Problem{Annotation: k, Message: problemMisspelt})
		}
	}
	slices.SortFunc(requests, func(a, b Request) int { return strings.Compare(a.Annotation, b.Annotation) })
	slices.SortFunc(problems, compareProblems)
	return requests, problems
}

func isMisspelt(k string) bool {
	return k == misspeltAnnotation || strings.HasPrefix(k, misspeltAnnotation+"/")
}

// ParseValue reads a reboot annotation's value. The rules, in order:
//
//   - an empty (or all white space) value is a soft request, with no problem;
//   - a value whose first character (after white space) is '{' must be a
//     JSON object (RFC 8259): its members "mode" ("hard" or "soft"; "" is
//     soft) and "force" (true or false) are read, every other member is
//     ignored. Member names match without regard to ASCII case and the last
//     of duplicates counts, as with encoding/json; a non-canonical spelling
//     or a duplicate is reported. A value that is not valid JSON counts as
//     a soft, unforced request, whatever it holds, and is reported;
//   - any other value is an opaque token (such as the UID of a Machine being
//     remediated): a soft, unforced request. It is reported only if it
//     mentions "hard" or "mode", which suggests its writer meant a mode.
//
// So a value never makes a request hard or forced unless it says so in
// valid JSON, and never cancels a request: the annotation's presence is the
// request.
func ParseValue(value string) (mode Mode, force bool, problem string) {
	p := scanner{s: value}
	p.ws()
	if p.i == len(value) {
		return Soft, false, ""
	}
	if value[p.i] != '{' {
		if containsFoldASCII(value, "hard") || containsFoldASCII(value, "mode") {
			return Soft, false, problemNotObject
		}
		return Soft, false, ""
	}
	var m members
	if !p.object(&m) || !p.end() {
		msg := fmt.Sprintf("value is not valid JSON (at byte %d: %s): read as mode soft, not forced", p.i, p.err)
		if strings.IndexByte(value, '\'') >= 0 {
			msg += " (JSON needs double quotes around keys and strings)"
		}
		return Soft, false, msg
	}
	return m.interpret()
}

// members records the members of the top-level object that matter.
type members struct {
	mode, force           string // the raw JSON value of the last such member
	nMode, nForce         int
	modeName, forceName   string // the raw name (escapes kept) of the last such member
	modeFolded, forceFold bool   // a name matched only without regard to case
}

func (m *members) interpret() (mode Mode, force bool, problem string) {
	if m.nMode > 1 {
		problem = joinProblem(problem, fmt.Sprintf("mode given %d times: the last one counts", m.nMode))
	}
	if m.nForce > 1 {
		problem = joinProblem(problem, fmt.Sprintf("force given %d times: the last one counts", m.nForce))
	}
	if m.modeFolded {
		problem = joinProblem(problem, fmt.Sprintf("member \"%s\" read as \"mode\"", clip(m.modeName)))
	}
	if m.forceFold {
		problem = joinProblem(problem, fmt.Sprintf("member \"%s\" read as \"force\"", clip(m.forceName)))
	}
	if m.nMode > 0 {
		switch s, isString := jsonString(m.mode); {
		case isString && s == "hard":
			mode = Hard
		case isString && (s == "soft" || s == ""):
		case isString:
			problem = joinProblem(problem, fmt.Sprintf("mode %s is neither \"hard\" nor \"soft\": read as soft", clip(m.mode)))
		default:
			problem = joinProblem(problem, fmt.Sprintf("mode %s is not a string: read as soft", clip(m.mode)))
		}
	}
	if m.nForce > 0 {
		switch m.force {
		case "true":
			force = true
		case "false":
		default:
			problem = joinProblem(problem, fmt.Sprintf("force %s is neither true nor false: read as false", clip(m.force)))
		}
	}
	return mode, force, problem
}

// clip shortens an excerpt of a value for a problem's message, which stays
// valid UTF-8 whatever the value holds.
func clip(s string) string {
	const limit = 40
	if len(s) > limit {
		i := limit
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// containsFoldASCII reports whether s contains sub (lower-case ASCII)
// without regard to ASCII case.
func containsFoldASCII(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFoldASCII(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether a equals lower (lower-case ASCII) without
// regard to ASCII case.
func equalFoldASCII(a, lower string) bool {
	if len(a) != len(lower) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// maxDepth is the deepest nesting accepted, as encoding/json's.
const maxDepth = 10000

// scanner checks JSON (RFC 8259) without building anything.
type scanner struct {
	s   string
	i   int
	err string
}

func (p *scanner) fail(msg string) bool {
	if p.err == "" {
		p.err = msg
	}
	return false
}

func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) end() bool {
	p.ws()
	if p.i != len(p.s) {
		return p.fail("text after the object")
	}
	return true
}

func (p *scanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// memberName reads an object member's name and the ':' after it, leaving
// p.i at the member's value.
func (p *scanner) memberName() (string, bool) {
	if p.peek() != '"' {
		return "", p.fail("want a member name in double quotes")
	}
	name, ok := p.str()
	if !ok {
		return "", false
	}
	p.ws()
	if p.peek() != ':' {
		return "", p.fail("want ':' after a member name")
	}
	p.i++
	p.ws()
	return name, true
}

// object reads the top-level object at p.i, recording its members in m.
func (p *scanner) object(m *members) bool {
	p.i++ // '{'
	p.ws()
	if p.peek() == '}' {
		p.i++
		return true
	}
	for {
		p.ws()
		name, ok := p.memberName()
		if !ok {
			return false
		}
		start := p.i
		if !p.value(1) {
			return false
		}
		raw := p.s[start:p.i]
		var buf [8]byte
		if key, ok := decodeShort(name, &buf); ok {
			switch {
			case equalFoldASCII(key, "mode"):
				m.mode, m.modeName = raw, name
				m.nMode++
				m.modeFolded = m.modeFolded || key != "mode"
			case equalFoldASCII(key, "force"):
				m.force, m.forceName = raw, name
				m.nForce++
				m.forceFold = m.forceFold || key != "force"
			}
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return p.fail("want ',' or '}' after a member")
		}
	}
}

// value skips one value; depth is the nesting of the value's container.
func (p *scanner) value(depth int) bool {
	switch c := p.peek(); {
	case c == '{':
		return p.skipContainer(depth+1, '}')
	case c == '[':
		return p.skipContainer(depth+1, ']')
	case c == '"':
		_, ok := p.str()
		return ok
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.num()
	case p.i >= len(p.s):
		return p.fail("unexpected end")
	}
	return p.fail("want a value")
}

// skipContainer skips an object (closing '}') or an array (closing ']').
func (p *scanner) skipContainer(depth int, closing byte) bool {
	if depth > maxDepth {
		return p.fail("nested too deep")
	}
	p.i++
	p.ws()
	if p.peek() == closing {
		p.i++
		return true
	}
	for {
		p.ws()
		if closing == '}' {
			if _, ok := p.memberName(); !ok {
				return false
			}
		}
		if !p.value(depth) {
			return false
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case closing:
			p.i++
			return true
		default:
			return p.fail("want ',' or '" + string(closing) + "'")
		}
	}
}

func (p *scanner) lit(word string) bool {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return p.fail("want " + word)
	}
	p.i += len(word)
	return true
}

func (p *scanner) digits() int {
	n := 0
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

func (p *scanner) num() bool {
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return p.fail("want a digit")
	}
	if p.peek() == '.' {
		p.i++
		if p.digits() == 0 {
			return p.fail("want a digit after '.'")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if p.digits() == 0 {
			return p.fail("want a digit in the exponent")
		}
	}
	return true
}

// str reads a string at p.i and returns its raw contents (escapes kept).
func (p *scanner) str() (string, bool) {
	p.i++ // '"'
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.s[start : p.i-1], true
		case c == '\\':
			p.i++
			switch p.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				for range 4 {
					if !isHex(p.peek()) {
						return "", p.fail("bad \\u escape")
					}
					p.i++
				}
			default:
				return "", p.fail("bad escape")
			}
		case c < 0x20:
			return "", p.fail("control character in a string")
		default:
			p.i++
		}
	}
	return "", p.fail("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c-'a') + 10
	}
	return rune(c-'A') + 10
}

// decodeShort decodes the raw contents of a well-formed JSON string into
// buf when it fits (8 bytes). Every character beyond ASCII decodes to 0xff,
// which no word compared against contains. ok is false when it does not
// fit: such a string equals none of the words this package looks for.
func decodeShort(raw string, buf *[8]byte) (string, bool) {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw, len(raw) <= len(buf)
	}
	n := 0
	for i := 0; i < len(raw); i++ {
		if n == len(buf) {
			return "", false
		}
		c := raw[i]
		if c == '\\' {
			i++
			switch raw[i] {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'u':
				r := hexVal(raw[i+1])<<12 | hexVal(raw[i+2])<<8 | hexVal(raw[i+3])<<4 | hexVal(raw[i+4])
				i += 4
				c = 0xff
				if r < 0x80 {
					c = byte(r)
				}
			default: // '"', '\\', '/'
				c = raw[i]
			}
		}
		buf[n] = c
		n++
	}
	return string(buf[:n]), true
}

// jsonString returns the decoded contents of a raw JSON string value when it
// is one and short enough to be one of the words compared against; isString
// is false for any other value. A long string decodes to "\xff", which
// equals no word.
func jsonString(raw string) (s string, isString bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	var buf [8]byte
	s, ok := decodeShort(raw[1:len(raw)-1], &buf)
	if !ok {
		return "\xff", true
	}
	return s, true
}
