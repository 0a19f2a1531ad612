package nodeagent_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/nodeagent"
)

// What an agent's Lease says is read strictly: the timings a proof counts
// on, in range; no peer named twice or empty.
func TestParsePublished(t *testing.T) {
	p, err := nodeagent.ParsePublished(`{"boot":"b","incarnation":"i","state":"running","selfFenceTimeout":60,"watchdogTimeout":15,"interval":1,"peers":["x","y"]}`)
	require.NoError(t, err)
	tt, w, i := p.Timings()
	assert.Equal(t, "1m0s 15s 1s", tt.String()+" "+w.String()+" "+i.String())
	for in, want := range map[string]string{
		``:  "no fencekit.io/agent annotation",
		`{`: "unexpected end",
		`{"boot":"b","incarnation":"i","selfFenceTimeout":60,"watchdogTimeout":15,"interval":6}`:                   "timings out of range",
		`{"boot":"b","incarnation":"i","selfFenceTimeout":60,"watchdogTimeout":15,"interval":1,"peers":["x","x"]}`: "a peer named twice",
		`{"boot":"b","incarnation":"i","selfFenceTimeout":60,"watchdogTimeout":15,"interval":1,"peers":[""]}`:      "an empty peer name",
		`{"incarnation":"i","selfFenceTimeout":60,"watchdogTimeout":15,"interval":1}`:                              "no boot",
		`{"boot":"b","incarnation":"i","selfFenceTimeout":1e300,"watchdogTimeout":15,"interval":1}`:                "timings out of range",
	} {
		_, err := nodeagent.ParsePublished(in)
		assert.ErrorContains(t, err, want, in)
	}
	assert.Equal(t, "abc", nodeagent.RequestID("abc proven 12 boot"))
	assert.Equal(t, "abc", nodeagent.RequestID("abc"))
}

// Whatever a Lease holds, the parsers never panic, and what they accept
// keeps the rules a proof counts on.
func FuzzParsePublished(f *testing.F) {
	f.Add(`{"boot":"b","incarnation":"i","state":"running","selfFenceTimeout":60,"watchdogTimeout":15,"interval":1,"peers":["x","y"]}`)
	f.Add(`{"n":{"request":"r","seenFor":1.5,"unheardFor":2}}`)
	f.Add(`{"n":{"request":"r","seenFor":1e300,"unheardFor":1e300}}`)
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := nodeagent.ParsePublished(s); err == nil {
			tt, w, i := p.Timings()
			if tt <= 0 || w <= 0 || i <= 0 || 3*i > w+time.Nanosecond || tt > 24*time.Hour || w > 24*time.Hour {
				t.Fatalf("accepted timings out of range: %+v", p)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(p.Peers)))) != len(p.Peers) || slices.Contains(p.Peers, "") {
				t.Fatalf("accepted peers %q", p.Peers)
			}
		}
		if rs, err := nodeagent.ParseReports(s); err == nil {
			for _, r := range rs {
				if time.Duration(r.SeenFor*float64(time.Second)) < 0 || time.Duration(r.UnheardFor*float64(time.Second)) < 0 {
					t.Fatalf("accepted a report whose durations do not convert: %+v", r)
				}
			}
		}
		_ = nodeagent.RequestID(s)
	})
}
