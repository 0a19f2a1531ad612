package properties

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func e(k, v string, line int) Entry { return Entry{Key: k, Value: v, Line: line} }

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Entry
	}{
		{"empty", "", nil},
		{"blank lines and comments", "\n  \n# c\n! c\n\t# indented comment\n", nil},
		{"equals", "a=b", []Entry{e("a", "b", 1)}},
		{"colon", "a: b", []Entry{e("a", "b", 1)}},
		{"space", "a b", []Entry{e("a", "b", 1)}},
		{"tab and spaces around separator", "a \t= \t b", []Entry{e("a", "b", 1)}},
		{"space then colon", "a   :b", []Entry{e("a", "b", 1)}},
		{"only one separator is eaten", "a==b", []Entry{e("a", "=b", 1)}},
		{"separator after space separator", "a = = b", []Entry{e("a", "= b", 1)}},
		{"key only", "a", []Entry{e("a", "", 1)}},
		{"key and separator only", "a=", []Entry{e("a", "", 1)}},
		{"empty key", "=b", []Entry{e("", "b", 1)}},
		{"trailing white space kept", "a=b  ", []Entry{e("a", "b  ", 1)}},
		{"value with separators", "address=ipmi://10.0.0.5:623", []Entry{e("address", "ipmi://10.0.0.5:623", 1)}},
		{"hash inside a value", "a=b # not a comment", []Entry{e("a", "b # not a comment", 1)}},
		{"indented, as in the node-fencing design", "    node_name=host1\n    isolation=fc-off\n", []Entry{e("node_name", "host1", 1), e("isolation", "fc-off", 2)}},
		{"CRLF", "a=b\r\nc=d\r\n", []Entry{e("a", "b", 1), e("c", "d", 2)}},
		{"CR alone ends a line", "a=b\rc=d", []Entry{e("a", "b", 1), e("c", "d", 2)}},
		{"lines counted across blanks and comments", "# x\n\na=1\n\n\nb=2", []Entry{e("a", "1", 3), e("b", "2", 6)}},
		{"continuation", "power_management=eaton-off \\\n      eaton-on\nx=y", []Entry{e("power_management", "eaton-off eaton-on", 1), e("x", "y", 3)}},
		{"continuation CRLF", "a=1\\\r\n  2\r\nb=3", []Entry{e("a", "12", 1), e("b", "3", 3)}},
		{"continuation in the key", "ke\\\n  y=v", []Entry{e("key", "v", 1)}},
		{"continuation onto a blank line", "a=b\\\n\nc=d", []Entry{e("a", "b", 1), e("c", "d", 3)}},
		{"continuation line starting with a hash is not a comment", "a=b\\\n #c", []Entry{e("a", "b#c", 1)}},
		{"comment ending in a backslash does not continue", "# c \\\na=b", []Entry{e("a", "b", 2)}},
		{"even backslashes do not continue", "a=b\\\\\nc=d", []Entry{e("a", "b\\", 1), e("c", "d", 2)}},
		{"escapes", `a=\t\n\r\f\\\=\:\#\!\ x`, []Entry{e("a", "\t\n\r\f\\=:#! x", 1)}},
		{"escaped leading space in value", `a=\  b`, []Entry{e("a", "  b", 1)}},
		{"escaped separators in key", `a\=b\:c\ d=e`, []Entry{e("a=b:c d", "e", 1)}},
		{"escaped hash key", `\#a=b`, []Entry{e("#a", "b", 1)}},
		{"unicode escape", `a=\u00e9\u00C9`, []Entry{e("a", "éÉ", 1)}},
		{"surrogate pair", `a=\uD83D\uDE00`, []Entry{e("a", "😀", 1)}},
		{"NUL escape", `a=\u0000`, []Entry{e("a", "\x00", 1)}},
		{"raw UTF-8", "clé=välue", []Entry{e("clé", "välue", 1)}},
		{"byte order mark skipped", "\uFEFFa=b", []Entry{e("a", "b", 1)}},
		{"form feed is white space", "\fa\f=\fb", []Entry{e("a", "b", 1)}},
		{"vertical tab is not white space", "\va=b", []Entry{e("\va", "b", 1)}},
		{"keys are case sensitive", "A=1\na=2", []Entry{e("A", "1", 1), e("a", "2", 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		sentinel error
		line     int
		key      string
		prev     int
		msg      []string // substrings of the message
	}{
		{"duplicate", "plug=1\naction=off\n\nplug=2", ErrDuplicate, 4, "plug", 1, []string{`"plug"`, "line 4", "line 1"}},
		{"duplicate through escapes", "a\\ b=1\na\\u0020b=2", ErrDuplicate, 2, "a b", 1, []string{`"a b"`}},
		{"duplicate after continuation", "x=1\\\n 2\nx=3", ErrDuplicate, 3, "x", 1, nil},
		{"short unicode escape", "a=1\npassword=ab\\u12", ErrEscape, 2, "password", 0, []string{"line 2", `"password"`, `\u`}},
		{"non-hex unicode escape", "k=\\uZZZZ", ErrEscape, 1, "k", 0, nil},
		{"lone high surrogate", "k=\\uD83Dx", ErrEscape, 1, "k", 0, []string{"surrogate"}},
		{"lone low surrogate", "k=\\uDE00", ErrEscape, 1, "k", 0, []string{"surrogate"}},
		{"unknown escape", `password=pass\word`, ErrEscape, 1, "password", 0, []string{"unknown escape"}},
		{"escape in a continued value", "k=a\\\n  b\\q", ErrEscape, 2, "k", 0, nil},
		{"bad escape in key", `k\q=v`, ErrEscape, 1, "", 0, nil},
		{"continuation at the end", "a=b\nc=d\\", ErrContinuation, 2, "", 0, []string{"line 2"}},
		{"continuation at the end with newline", "a=b\\\n", ErrContinuation, 1, "", 0, nil},
		{"invalid UTF-8", "a=b\nc=\xff", ErrEncoding, 2, "", 0, []string{"line 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, tt.sentinel)
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.line, pe.Line)
			assert.Equal(t, tt.key, pe.Key)
			assert.Equal(t, tt.prev, pe.PrevLine)
			for _, m := range tt.msg {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestParseErrorsNeverQuoteValues(t *testing.T) {
	for _, body := range []string{
		`password=s3cr3t\q`,
		`password=s3cr3t\u12`,
		`password=s3cr3t\uD800`,
		"password=s3cr3t\\",
		"password=s3cr3t\xff",
	} {
		_, err := Parse(body)
		require.Error(t, err, body)
		assert.NotContains(t, err.Error(), "s3cr3t", body)
	}
}

func TestParseCollectsAllErrors(t *testing.T) {
	_, err := Parse("a=1\na=2\nb=\\q\nb=3\nc=\\u1")
	require.Error(t, err)
	j, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok)
	var lines []int
	for _, x := range j.Unwrap() {
		var pe *Error
		require.ErrorAs(t, x, &pe)
		lines = append(lines, pe.Line)
	}
	// b=\q is dropped, so b=3 on line 4 is not a duplicate.
	assert.Equal(t, []int{2, 3, 5}, lines)
}

func TestFormat(t *testing.T) {
	entries := []Entry{
		e("plain", "value", 0),
		e("address", "ipmi://10.0.0.5:623", 0),
		e("key with=sep:s", " leading and trailing ", 0),
		e("#hash", "#not a comment", 0),
		e("!bang", "x", 0),
		e("ctl", "a\tb\nc\rd\fe\\f\x00\u2028", 0),
		e("emoji", "😀 é", 0),
		e("", "", 0),
		e("ends", "with backslash\\", 0),
	}
	var b strings.Builder
	require.NoError(t, Format(&b, entries))
	want := "plain=value\n" +
		"address=ipmi://10.0.0.5:623\n" +
		`key\ with\=sep\:s=\ leading and trailing ` + "\n" +
		`\#hash=#not a comment` + "\n" +
		`\!bang=x` + "\n" +
		`ctl=a\tb\nc\rd\fe\\f\u0000\u2028` + "\n" +
		"emoji=😀 é\n" +
		"=\n" +
		`ends=with backslash\\` + "\n"
	assert.Equal(t, want, b.String())
	got, err := Parse(b.String())
	require.NoError(t, err)
	require.Len(t, got, len(entries))
	for i := range entries {
		assert.Equal(t, entries[i].Key, got[i].Key)
		assert.Equal(t, entries[i].Value, got[i].Value)
	}
}

func TestFormatNonBMPControl(t *testing.T) {
	var b strings.Builder
	// U+E0001 (LANGUAGE TAG) is not printable and needs a surrogate pair.
	require.NoError(t, Format(&b, []Entry{e("k", "\U000E0001", 0)}))
	assert.Equal(t, `k=\uDB40\uDC01`+"\n", b.String())
	got, err := Parse(b.String())
	require.NoError(t, err)
	assert.Equal(t, "\U000E0001", got[0].Value)
}

func TestFormatInvalidUTF8(t *testing.T) {
	var b strings.Builder
	err := Format(&b, []Entry{e("k", "\xff", 0)})
	assert.ErrorIs(t, err, ErrEncoding)
	assert.Empty(t, b.String())
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFormatWriteError(t *testing.T) {
	assert.EqualError(t, Format(failWriter{}, []Entry{e("a", "b", 0)}), "disk full")
}

// A trailing backslash that joins an entry to the value before would lose
// its key (password=s3cret\ then plug=3: the value "s3cretplug=3", no plug):
// refused, naming the line but not the key, which may be part of a secret.
// A continuation that stays in the key, or continues a value with what is
// not an entry, still reads.
func TestSwallowedEntry(t *testing.T) {
	_, err := Parse("password=s3cret\\\nplug=3\nport=1")
	require.ErrorIs(t, err, ErrSwallowed)
	assert.Contains(t, err.Error(), "line 2:")
	assert.NotContains(t, err.Error(), "plug")
	assert.NotContains(t, err.Error(), "s3cret")
	_, err = Parse("address=ipmi://bmc\\\n  :623")
	assert.NoError(t, err, "a value continued with a colon but no key")
	_, err = Parse("ke\\\ny=v")
	assert.NoError(t, err)
	_, err = Parse("power_management=eaton-off \\\n eaton-on")
	assert.NoError(t, err)
	_, err = Parse("host_key_fingerprints=SHA256:aaa,\\\n  SHA256:bbb")
	assert.NoError(t, err, "a value continued with word: is not an entry")
}
