// Package fos is a small emulator of the Brocade Fabric OS command line,
// as an SSH server runs it for a login: the interactive shell (a prompt,
// one command per line) and single commands (ssh switch 'cmd'). It keeps
// the ports' state in files of a state directory, under a lock, so that
// several sessions and the test that watches them share one switch.
//
// The state directory holds:
//
//	config.json   the switch's configuration (Config); read before every command
//	ports.json    the ports' state: {"0": {"disabled": false, "persistent": false}, ...}
//	ports.lock    the lock file (flock) that guards ports.json
//	commands.log  one line per command run: "USER<TAB>COMMAND LINE"
//	events.log    one line per state change
//
// Commands (case-insensitive, as on FOS): switchshow, portshow P,
// portcfgpersistentdisable P, portcfgpersistentenable P, portdisable P,
// portenable P, version, help, exit, logout, quit. P is a port number
// ([slot/]port on a director). Anything else is "rbash: X: command not
// found".
package fos

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// File names in the state directory.
const (
	// ConfigFile holds the Config, as JSON.
	ConfigFile = "config.json"
	// StateFile holds the ports' state, as JSON.
	StateFile = "ports.json"
	// LockFile is the file whose flock guards StateFile.
	LockFile = "ports.lock"
	// CommandsFile logs every command line run, one per line.
	CommandsFile = "commands.log"
	// EventsFile logs every change of a port's state.
	EventsFile = "events.log"
)

// Fault is a misbehaviour of the switch, for tests of a client's error
// handling.
type Fault string

// Faults.
const (
	// NoFault: the switch behaves.
	NoFault Fault = ""
	// Garbage replaces every command's output with noise; the prompt
	// still follows.
	Garbage Fault = "garbage"
	// NoPrompt prints noise for a command and never the prompt again.
	NoPrompt Fault = "noprompt"
	// Truncated cuts switchshow's output after its header: no port table.
	Truncated Fault = "truncated"
	// ShortLines prints switchshow's port lines without their State,
	// Proto and comment columns, so that no state can be read from them
	// (portshow still answers).
	ShortLines Fault = "shortlines"
	// Refuse answers every port command with "RBAC permission denied."
	// and changes nothing.
	Refuse Fault = "refuse"
	// Hang answers no command at all: the shell sleeps until its session
	// ends (at most a minute).
	Hang Fault = "hang"
	// Drop ends the session as soon as a command arrives, without output.
	Drop Fault = "drop"
	// Chatty carries out port commands, then prints text that is neither
	// nothing (FOS's answer to a port command that worked) nor an error.
	Chatty Fault = "chatty"
)

// Config is the switch's configuration, in config.json.
type Config struct {
	// Ports is the number of ports, numbered from 0. Default 16.
	Ports int `json:"ports"`
	// Name is the switch name of the prompt and switchshow. Default fcsim.
	Name string `json:"name"`
	// Banner is printed by the interactive shell before its first prompt.
	Banner string `json:"banner,omitempty"`
	// OddWhitespace prints tabs, runs of spaces, trailing blanks, "\r\r\n"
	// line ends and blank lines (also inside switchshow's port table,
	// where the reference agent fails) wherever FOS has plain spacing.
	OddWhitespace bool `json:"odd_whitespace,omitempty"`
	// Echo makes the interactive shell print each command line it reads
	// before its output, as a terminal with echo on shows it.
	Echo bool `json:"echo,omitempty"`
	// Director lays switchshow out as a director's, with a Slot column;
	// port commands then take slot/port. Slot s holds ports 16(s-1) to
	// 16s-1 (index i is slot i/16+1, port i%16).
	Director bool `json:"director,omitempty"`
	// Fault is the misbehaviour in force, if any.
	Fault Fault `json:"fault,omitempty"`
}

// PortsPerSlot is the number of ports of a director's slot.
const PortsPerSlot = 16

// withDefaults fills in the defaults.
func (c Config) withDefaults() Config {
	if c.Ports <= 0 {
		c.Ports = 16
	}
	if c.Name == "" {
		c.Name = "fcsim"
	}
	return c
}

// Port is the state of one port.
type Port struct {
	// Disabled: the port is disabled (by portdisable or persistently).
	Disabled bool `json:"disabled"`
	// Persistent: the port is persistently disabled
	// (portcfgpersistentdisable); Disabled is then true too.
	Persistent bool `json:"persistent"`
}

// ReadConfig reads dir's config.json; a missing file gives the defaults.
func ReadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return c, err
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &c); err != nil {
			return c, fmt.Errorf("%s: %w", ConfigFile, err)
		}
	}
	return c.withDefaults(), nil
}

// WriteConfig writes dir's config.json (mode 0644), atomically.
func WriteConfig(dir string, c Config) error {
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, ConfigFile), b)
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Lock takes dir's port lock (an exclusive flock of ports.lock), waiting
// at most 10 s, and returns its release.
func Lock(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", LockFile, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: still held after 10s", LockFile)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// ReadPorts reads the ports' state of dir (the caller holds the lock);
// ports missing from the file are enabled.
func ReadPorts(dir string, n int) (map[int]Port, error) {
	st := make(map[int]Port, n)
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if len(b) > 0 {
		var raw map[string]Port
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", StateFile, err)
		}
		for k, v := range raw {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 {
				return nil, fmt.Errorf("%s: port %q is not a number", StateFile, k)
			}
			st[i] = v
		}
	}
	for i := 0; i < n; i++ {
		if _, ok := st[i]; !ok {
			st[i] = Port{}
		}
	}
	return st, nil
}

// WritePorts writes the ports' state of dir (the caller holds the lock).
// The file is rewritten in place, so that the directory need not be
// writable by the writer.
func WritePorts(dir string, st map[int]Port) error {
	raw := make(map[string]Port, len(st))
	for i, p := range st {
		raw[strconv.Itoa(i)] = p
	}
	b, err := json.MarshalIndent(raw, "", " ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, StateFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// appendLine appends one line to a log file of dir.
func appendLine(dir, name, line string) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return
	}
	f.WriteString(line + "\n")
	f.Close()
}
