package ctxsleep

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep on a live context = %v, want nil", err)
	}
	if err := Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) on a live context = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range []time.Duration{-time.Second, 0, time.Hour} {
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(%v) on an ended context = %v, want context.Canceled", d, err)
		}
	}
}
