package etcdv3

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
)

// The etcd client logs through zap; Options.Logger's handler receives
// them, with their fields and level.
func TestLoggerBridge(t *testing.T) {
	var buf bytes.Buffer
	cfg := Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}.config([]string{"http://127.0.0.1:1"})
	cfg.Logger.Warn("retrying of unary invoker failed", zap.String("target", "etcd-endpoints://0x1/127.0.0.1:1"), zap.Int("attempt", 2))
	assert.Contains(t, buf.String(), "level=WARN")
	assert.Contains(t, buf.String(), `msg="retrying of unary invoker failed"`)
	assert.Contains(t, buf.String(), "attempt=2")

	quiet := Options{}.config([]string{"http://127.0.0.1:1"})
	quiet.Logger.Error("dropped") // a no-op logger
}
