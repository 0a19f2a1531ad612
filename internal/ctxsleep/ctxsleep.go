// Package ctxsleep is the wait of the library's packages that sleep
// between polls or retries, the engine's included (an example keeps its
// own, to stand alone): it ends early, with the
// context's error, when the context ends. Like internal/errfmt, it is a
// leaf that imports the standard library only, so that package fence may
// import it.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d and returns nil, or returns ctx's error as soon as ctx
// ends. A d of zero or less waits nothing and returns ctx's error, nil
// while ctx is live.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
