package snmpsim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The simulator's state lives in a JSON file of its directory, shared by the
// test process (Truth, SetTruth, ...) and the pass_persist handler that
// snmpd runs. Readers read it whole (it is replaced by a rename, never
// written in place); read-modify-write cycles hold an exclusive flock on a
// lock file beside it.
const (
	stateFile  = "state.json"
	lockFile   = "state.lock"
	setsFile   = "sets.jsonl" // one SetRequest per line
	eventsFile = "events.log"
	maxSets    = 256 // SETs that Sim.Sets returns, the last ones
)

// SetRequest is one SET the simulator received on an outlet's command.
type SetRequest struct {
	// OID is the object written, with a leading dot.
	OID string `json:"oid"`
	// Value is the INTEGER written.
	Value int `json:"value"`
	// Error is the pass_persist error the handler answered, or "" when it
	// took the value.
	Error string `json:"error,omitempty"`
	// At is when the handler received it.
	At time.Time `json:"at"`
}

// state is the simulator's state file. It stays small, since the handler
// reads it for every request: the logs of SETs and switches are files of
// their own, appended to (setsFile, eventsFile).
type state struct {
	// Outlets holds each outlet's true state, "on" or "off", by number
	// (1-based for every model).
	Outlets map[string]string `json:"outlets"`
	// Raw, when set for an outlet, is the value its state object reports
	// instead of the model's on or off value.
	Raw map[string]int `json:"raw,omitempty"`
	// Names are the outlets' names, for the models that have them.
	Names map[string]string `json:"names,omitempty"`
	// SetDelayMS delays the handler's answer to every SET (the change is
	// made at once).
	SetDelayMS int `json:"set_delay_ms,omitempty"`
	// SetCount counts the SETs received.
	SetCount int `json:"set_count"`

	// Set and switch records of the current update, appended to the logs
	// by update.
	sets   []SetRequest
	events []string
}

func newState(n int, names map[int]string, hasNames bool) *state {
	st := &state{Outlets: map[string]string{}, Raw: map[string]int{}, Names: map[string]string{}}
	for i := 1; i <= n; i++ {
		st.Outlets[strconv.Itoa(i)] = "on"
		if hasNames {
			name := "node" + strconv.Itoa(i)
			if s, ok := names[i]; ok {
				name = s
			}
			st.Names[strconv.Itoa(i)] = name
		}
	}
	return st
}

// on reports whether outlet i is on.
func (st *state) on(i int) bool { return st.Outlets[strconv.Itoa(i)] == "on" }

// value is outlet i's state as the model writes it: on or off.
func (st *state) value(i, on, off int) int {
	if st.on(i) {
		return on
	}
	return off
}

// reported is outlet i's state object: the raw value when one is set.
func (st *state) reported(i, on, off int) int {
	if v, ok := st.Raw[strconv.Itoa(i)]; ok {
		return v
	}
	return st.value(i, on, off)
}

func (st *state) name(i int) string { return st.Names[strconv.Itoa(i)] }

// switchTo sets outlet i's state, and logs it.
func (st *state) switchTo(i int, on bool, why string) {
	s := "off"
	if on {
		s = "on"
	}
	st.Outlets[strconv.Itoa(i)] = s
	delete(st.Raw, strconv.Itoa(i))
	st.events = append(st.events, fmt.Sprintf("%s outlet %d -> %s (%s)", time.Now().Format(time.RFC3339Nano), i, s, why))
}

// readState reads the state file of dir.
func readState(dir string) (*state, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("snmpsim: state file: %w", err)
	}
	if st.Outlets == nil {
		st.Outlets = map[string]string{}
	}
	if st.Raw == nil {
		st.Raw = map[string]int{}
	}
	if st.Names == nil {
		st.Names = map[string]string{}
	}
	return st, nil
}

// writeState replaces the state file of dir.
func writeState(dir string, st *state) error {
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFile+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
}

// update runs f on the state of dir under the lock, writes the state back
// when f returns true, and appends the records f made to the logs.
func update(dir string, f func(*state) bool) error {
	lf, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	st, err := readState(dir)
	if err != nil {
		return err
	}
	if !f(st) {
		return nil
	}
	if err := writeState(dir, st); err != nil {
		return err
	}
	var sets []byte
	for _, r := range st.sets {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		sets = append(append(sets, b...), '\n')
	}
	if err := appendFile(filepath.Join(dir, setsFile), sets); err != nil {
		return err
	}
	var events []byte
	for _, e := range st.events {
		events = append(append(events, e...), '\n')
	}
	return appendFile(filepath.Join(dir, eventsFile), events)
}

func appendFile(path string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
