package policy

import (
	"context"
	"log/slog"
	"time"
)

// Logged returns a gate that asks g and logs its decision to log: a
// refusal at level Info ("fencing refused", with the node, the step, the
// gate, the reason and the retry hint), an admission at level Debug. A nil
// log discards. The records are built only when the level is enabled, so an
// admission logged at a disabled level costs no allocation. The controller
// asks again at every pass, so a refusal that lasts is logged at every pass;
// a controller that wants one event per change keeps the last decision per
// node and compares. Logged panics when g is nil.
func Logged(g Gate, log *slog.Logger) Gate {
	if g == nil {
		panic("policy.Logged: nil gate")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &logged{g: g, log: log}
}

type logged struct {
	g   Gate
	log *slog.Logger
}

func (l *logged) Admit(ctx context.Context, c Candidate, cl Cluster) Decision {
	d := l.g.Admit(ctx, c, cl)
	if d.Admit {
		if l.log.Enabled(ctx, slog.LevelDebug) {
			l.log.LogAttrs(ctx, slog.LevelDebug, "fencing admitted",
				slog.String("node", c.Node.Name), slog.String("step", c.Step))
		}
		return d
	}
	if l.log.Enabled(ctx, slog.LevelInfo) {
		l.log.LogAttrs(ctx, slog.LevelInfo, "fencing refused",
			slog.String("node", c.Node.Name), slog.String("step", c.Step),
			slog.String("gate", d.Gate), slog.String("reason", d.Reason),
			slog.Duration("retryAfter", d.RetryAfter))
	}
	return d
}

// LastStorm and RecordStorm speak for g's storm memory (StormMemory), if
// it has one, so that a logged gate keeps it.
func (l *logged) LastStorm() time.Time {
	if m, ok := l.g.(StormMemory); ok {
		return m.LastStorm()
	}
	return time.Time{}
}

// RecordStorm records t in g's storm memory, if it has one.
func (l *logged) RecordStorm(t time.Time) {
	if m, ok := l.g.(StormMemory); ok {
		m.RecordStorm(t)
	}
}
