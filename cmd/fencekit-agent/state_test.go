package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/nodeagent"
)

func bootID(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func testAgent(t *testing.T, dir string) *agent {
	return &agent{o: &options{stateDir: dir}, log: slog.New(slog.DiscardHandler), boot: bootID(t),
		t: timings{30 * time.Second, 10 * time.Second, time.Second}}
}

// A restarted agent goes on from its state of this boot: the last healthy
// moment, the peers and the lists its Lease may hold, and the smaller of
// its timings and those it ran with; a state of another boot, or the one
// a clean stop left, starts afresh.
func TestStateRestored(t *testing.T) {
	dir := t.TempDir()
	since := bootClock().Add(-20 * time.Second)
	old := stateFile{Boot: bootID(t), Since: since.UnixNano(), SelfFenceTimeout: 20 * time.Second, WatchdogTimeout: 15 * time.Second,
		Interval: time.Second, Peers: []nodeagent.Peer{{Name: "b", Addr: "127.0.0.1:1"}}, Lists: [][]string{{"b"}, {"b", "c"}}}
	b, err := json.Marshal(old)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600))
	a := testAgent(t, dir)
	require.NoError(t, a.restore())
	assert.Equal(t, timings{20 * time.Second, 10 * time.Second, time.Second}, a.t, "the smaller of each")
	assert.Equal(t, since.UnixNano(), a.since.UnixNano())
	assert.Equal(t, old.Peers, a.peers)
	assert.Equal(t, old.Lists, a.lists)

	// What it starts from is on the node before it runs.
	var now stateFile
	b, err = os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &now))
	assert.Equal(t, 20*time.Second, now.SelfFenceTimeout)

	// Another boot's state: afresh.
	old.Boot = "00000000-0000-0000-0000-000000000000"
	b, _ = json.Marshal(old)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600))
	a = testAgent(t, dir)
	require.NoError(t, a.restore())
	assert.Equal(t, timings{30 * time.Second, 10 * time.Second, time.Second}, a.t)
	assert.Empty(t, a.lists)
	assert.Less(t, bootClock().Sub(a.since), time.Second)

	// After a clean stop (since 0): counted from this start.
	old.Boot, old.Since = bootID(t), 0
	b, _ = json.Marshal(old)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600))
	a = testAgent(t, dir)
	require.NoError(t, a.restore())
	assert.Less(t, bootClock().Sub(a.since), time.Second)

	// After a self-fence: no agent of this boot kicks the watchdog again.
	old.Fenced = true
	b, _ = json.Marshal(old)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600))
	a = testAgent(t, dir)
	require.NoError(t, a.restore())
	assert.True(t, a.selfFenced)

	// Past its timeout already, the watchdog open (an earlier agent had it
	// guarding the node): fenced without opening it again. Not open (the
	// earlier agent failed before opening it, or stopped cleanly): not.
	for _, open := range []bool{true, false} {
		old.Fenced, old.Open, old.Since = false, open, bootClock().Add(-time.Minute).UnixNano()
		b, _ = json.Marshal(old)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600))
		a = testAgent(t, dir)
		require.NoError(t, a.restore())
		assert.Equal(t, open, a.selfFenced, "open %v", open)
		assert.Equal(t, open, a.guarded)
		assert.True(t, a.armed, "a state without the field is armed")
	}
	// A fresh agent's state: unarmed until its first write is sent.
	require.NoError(t, os.Remove(filepath.Join(dir, "state.json")))
	a = testAgent(t, dir)
	require.NoError(t, a.restore())
	assert.False(t, a.armed)
	b, err = os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"unarmed":true`)

	// A state it cannot read is refused with what to do (the watchdog the
	// last agent left armed then resets the node).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte("{"), 0o600))
	assert.ErrorContains(t, testAgent(t, dir).restore(), "reboot the node instead")
}
