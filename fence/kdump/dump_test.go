package kdump_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/fence/kdump"
)

func TestDumpHolds(t *testing.T) {
	const stale, timeout = 30 * time.Second, 10 * time.Minute
	d := kdump.Dump{Node: "node-2", From: addr("192.0.2.7"), First: t0, Last: t0.Add(20 * time.Second), Count: 3}
	for _, tc := range []struct {
		name   string
		d      kdump.Dump
		now    time.Time
		want   bool
		detail string
	}{
		{"no message", kdump.Dump{Node: "node-2"}, t0, false, `no kdump message from node "node-2"`},
		{"first message", kdump.Dump{Node: "node-2", From: addr("192.0.2.7"), First: t0, Last: t0, Count: 1}, t0, true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 0s ago (1 message, hold ends at 12:10:01)"},
		{"fresh", d, t0.Add(23 * time.Second), true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 3s ago (3 messages, hold ends at 12:10:01)"},
		{"sub-second", d, t0.Add(20*time.Second + 250*time.Millisecond), true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 250ms ago (3 messages, hold ends at 12:10:01)"},
		{"just before stale", d, t0.Add(50*time.Second - time.Nanosecond), true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 30s ago (3 messages, hold ends at 12:10:01)"},
		{"stale", d, t0.Add(50 * time.Second), false,
			"kdump messages from 192.0.2.7 stopped: last 30s ago, stale after 30s (3 messages)"},
		{"now before the messages", d, t0.Add(-time.Hour), true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 0s ago (3 messages, hold ends at 12:10:01)"},
		{"just before expiry", kdump.Dump{Node: "n", From: addr("192.0.2.7"), First: t0, Last: t0.Add(timeout - time.Second), Count: 60},
			t0.Add(timeout - time.Nanosecond), true,
			"kdump messages from 192.0.2.7 since 12:00:01, last 1s ago (60 messages, hold ends at 12:10:01)"},
		{"expired while sending", kdump.Dump{Node: "n", From: addr("192.0.2.7"), First: t0, Last: t0.Add(timeout - time.Second), Count: 60},
			t0.Add(timeout), false,
			"kdump hold expired after 10m0s (messages from 192.0.2.7 since 12:00:01, last 1s ago, 60 messages)"},
		{"stale and expired", d, t0.Add(time.Hour), false,
			"kdump messages from 192.0.2.7 stopped: last 59m40s ago, stale after 30s (3 messages)"},
		{"ipv6", kdump.Dump{Node: "n", From: addr("2001:db8::7"), First: t0, Last: t0, Count: 1}, t0.Add(time.Second), true,
			"kdump messages from 2001:db8::7 since 12:00:01, last 1s ago (1 message, hold ends at 12:10:01)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail := tc.d.Holds(tc.now, stale, timeout)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.detail, detail)
		})
	}
}
