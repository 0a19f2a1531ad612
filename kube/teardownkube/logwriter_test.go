package teardownkube

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// lines is a slog handler that keeps the messages and levels it gets.
type lines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func TestLogWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   []string
	}{
		{"one line", []string{"evicting pod a/b\n"}, []string{"WARN evicting pod a/b"}},
		{"split across writes", []string{"evict", "ing pod a/b\npod a/", "b evicted\n"}, []string{"WARN evicting pod a/b", "WARN pod a/b evicted"}},
		{"unfinished line flushed", []string{"a\nb"}, []string{"WARN a", "WARN b"}},
		{"blank lines and spaces dropped", []string{"\n  \n x \r\n"}, []string{"WARN x"}},
		{"nothing", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &lines{}
			w := &logWriter{log: slog.New(h), level: slog.LevelWarn}
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				assert.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			w.Flush()
			assert.Equal(t, tc.want, h.msgs)
		})
	}
}

// A line without an end is cut at maxLine rather than held forever.
func TestLogWriterLongLine(t *testing.T) {
	h := &lines{}
	w := &logWriter{log: slog.New(h), level: slog.LevelInfo}
	_, _ = w.Write([]byte(strings.Repeat("x", maxLine+1)))
	assert.Len(t, h.msgs, 1)
	assert.Empty(t, w.buf)
}

// Whatever the chunks, the logged lines are the input's non-blank lines,
// trimmed, in order.
func FuzzLogWriter(f *testing.F) {
	f.Add("evicting pod a/b\npod a/b evicted\n", uint8(3))
	f.Add("\n\nx\r\ny", uint8(1))
	f.Add("", uint8(0))
	f.Fuzz(func(t *testing.T, s string, chunk uint8) {
		if len(s) > maxLine {
			return
		}
		h := &lines{}
		w := &logWriter{log: slog.New(h), level: slog.LevelInfo}
		size := int(chunk) + 1
		for i := 0; i < len(s); i += size {
			_, _ = w.Write([]byte(s[i:min(i+size, len(s))]))
		}
		w.Flush()
		var want []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				want = append(want, "INFO "+l)
			}
		}
		assert.Equal(t, want, h.msgs)
	})
}
