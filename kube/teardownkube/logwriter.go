package teardownkube

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// maxLine bounds a line the logWriter holds while waiting for its end.
const maxLine = 64 << 10

// logWriter is the io.Writer the drain prints to: every line becomes one
// record of log at level. It is safe for concurrent use.
type logWriter struct {
	log   *slog.Logger
	level slog.Level

	mu  sync.Mutex
	buf []byte
}

// Write logs every complete line of p and keeps the rest for the next
// write. It never fails.
func (w *logWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		if len(w.buf) > 0 {
			w.buf = append(w.buf, p[:i]...)
			w.emit(w.buf)
			w.buf = w.buf[:0]
		} else {
			w.emit(p[:i])
		}
		p = p[i+1:]
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > maxLine {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return n, nil
}

// Flush logs what is left of an unfinished line.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit(w.buf)
	w.buf = w.buf[:0]
}

func (w *logWriter) emit(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 {
		w.log.Log(context.Background(), w.level, string(line))
	}
}
