package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fencekit/fencekit/nodeagent"
)

// stateFile is what the agent keeps on the node (--state-dir, the host's
// /run: it is gone at the next boot) so that a restarted agent goes on
// where the last one stopped rather than start over:
//
//   - Since, the last look at which the node was healthy, by the boot
//     clock: a restart does not start the countdown again;
//   - the timings it ran with: a restarted agent runs with the smaller of
//     these and its flags (a larger one takes effect at the next boot), so
//     that it never runs longer cut off than its Lease says;
//   - the peers (their addresses, to heartbeat them without the API
//     server), and every peer list that may stand in its Lease (the one a
//     renewal succeeded with, and those sent since whose outcome is not
//     known): the node has its quorum only when it has it among each.
type stateFile struct {
	Boot             string           `json:"boot"`
	Since            int64            `json:"since"` // nanoseconds of the boot clock; 0 after a clean stop
	SelfFenceTimeout time.Duration    `json:"selfFenceTimeout"`
	WatchdogTimeout  time.Duration    `json:"watchdogTimeout"`
	Interval         time.Duration    `json:"interval"`
	Peers            []nodeagent.Peer `json:"peers"`
	Lists            [][]string       `json:"lists"`
	// Fenced: an agent of this boot fenced the node; no later one kicks
	// the watchdog again.
	Fenced bool `json:"fenced,omitempty"`
	// Unarmed: no agent of this boot has yet sent its Lease what it runs
	// with (a write that may have reached the API server arms the
	// countdown before it is sent). Said the other way round so that a
	// state without the field, of an earlier agent, counts as armed.
	Unarmed bool `json:"unarmed,omitempty"`
	// Open: an agent of this boot opened the watchdog, and no clean stop
	// disarmed it since: it may be guarding the node.
	Open bool `json:"open,omitempty"`
}

func (a *agent) statePath() string { return filepath.Join(a.o.stateDir, "state.json") }

// restore reads the state a previous run of this boot left, and writes the
// state this run starts from.
func (a *agent) restore() error {
	if err := os.MkdirAll(a.o.stateDir, 0o700); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	a.since = bootClock()
	b, err := os.ReadFile(a.statePath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("--state-dir: %w", err)
	default:
		var s stateFile
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("--state-dir: %s: %w: the agent cannot go on safely from it; never remove a state of this boot while the node runs (a restarted countdown could outlast what a controller counted), reboot the node instead", a.statePath(), err)
		}
		if s.Boot != a.boot {
			break // a state of an earlier boot: the machine was reset since
		}
		if s.Since != 0 {
			a.since = time.Unix(0, s.Since)
		}
		own := a.t
		a.t = timings{min(own.selfFence, s.SelfFenceTimeout), min(own.watchdog, s.WatchdogTimeout), min(own.interval, s.Interval)}
		if a.t != own {
			a.log.Warn("running with the smaller timings this boot's earlier agent published: larger ones take effect at the next boot",
				"selfFenceTimeout", a.t.selfFence, "watchdogTimeout", a.t.watchdog, "interval", a.t.interval)
		}
		a.peers, a.lists, a.selfFenced, a.armed = s.Peers, s.Lists, s.Fenced, !s.Unarmed
		a.learnt = len(s.Peers) > 0
		a.guarded, a.open = s.Open, s.Open
		if a.armed && s.Open && bootClock().Sub(a.since) >= a.t.selfFence {
			// Past its timeout already: the node fences itself without
			// opening the watchdog again (an open kicks it).
			a.selfFenced = true
		}
		a.log.Info("going on from the state of this boot's earlier agent", "lastHealthy", bootClock().Sub(a.since).Round(time.Millisecond),
			"peers", len(s.Peers))
	}
	return a.save()
}

// save writes the state (the whole file replaced at once).
func (a *agent) save() error {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.mu.Lock()
	var since int64
	if !a.since.IsZero() {
		since = a.since.UnixNano()
	}
	s := stateFile{Boot: a.boot, Since: since, SelfFenceTimeout: a.t.selfFence, WatchdogTimeout: a.t.watchdog,
		Interval: a.t.interval, Peers: a.peers, Lists: a.lists, Fenced: a.selfFenced, Unarmed: !a.armed, Open: a.open}
	a.mu.Unlock()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := a.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("the agent's state: %w", err)
	}
	if err := os.Rename(tmp, a.statePath()); err != nil {
		return fmt.Errorf("the agent's state: %w", err)
	}
	return nil
}
