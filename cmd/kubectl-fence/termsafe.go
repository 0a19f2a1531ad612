package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe writes to a terminal only what prints as itself: every control
// character but the newline and the tab (ESC, BEL, backspace, carriage
// return, C1 controls, DEL), every Unicode format character (the
// right-to-left override, zero-width joiners and marks) and every byte that
// is not UTF-8 is written as an escape (\x1b, \u202e, \xff). A record's
// text (a device's error, a person's reason) can then neither retitle the
// window, clear the screen nor print over what the command says. A rune
// split across two writes is held until its end arrives; Close writes what
// is left.
type termSafe struct {
	w    io.Writer
	rest []byte // the start of a rune split across writes
}

func (t *termSafe) Write(p []byte) (int, error) {
	data := p
	if len(t.rest) > 0 {
		data = append(t.rest, p...)
		t.rest = nil
	}
	// Hold an incomplete rune at the end for the next write.
	if n := len(data); n > 0 {
		start := max(0, n-utf8.UTFMax+1)
		for i := n - 1; i >= start; i-- {
			if utf8.RuneStart(data[i]) {
				if !utf8.FullRune(data[i:]) {
					t.rest = append([]byte(nil), data[i:]...)
					data = data[:i]
				}
				break
			}
		}
	}
	if _, err := io.WriteString(t.w, escapeTerm(string(data), "\n\t")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what is left of a rune never completed, escaped.
func (t *termSafe) Close() error {
	if len(t.rest) == 0 {
		return nil
	}
	rest := t.rest
	t.rest = nil
	_, err := io.WriteString(t.w, escapeTerm(string(rest), ""))
	return err
}

// escapeTerm escapes in s what a terminal would act on rather than print,
// but for the characters in keep.
func escapeTerm(s, keep string) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError && !validAt(s, i) || needsEscape(r) && !strings.ContainsRune(keep, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r) && !strings.ContainsRune(keep, r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// validAt reports whether the U+FFFD at s[i:] is written as such, not a
// byte that is not UTF-8.
func validAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}

// needsEscape: C0 and C1 controls, DEL, and the format characters (Cf:
// bidirectional overrides and isolates, zero-width characters), and the
// line and paragraph separators.
func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
