package fence

import (
	"fmt"
	"strings"
)

// State is the power or isolation state of one plug: a server's power, a PDU
// outlet, or a switch port (on = enabled, off = disabled, i.e. isolated).
type State uint8

const (
	// StateUnknown means the state was not read, or the device answered
	// something that is neither on nor off. It is never taken for off.
	StateUnknown State = iota
	// StateOn means powered on, or for a switch port enabled.
	StateOn
	// StateOff means powered off, or for a switch port disabled (isolated).
	StateOff
)

// String returns "on", "off" or "unknown".
func (s State) String() string {
	switch s {
	case StateOn:
		return "on"
	case StateOff:
		return "off"
	default:
		return "unknown"
	}
}

// Known reports whether s is on or off.
func (s State) Known() bool { return s == StateOn || s == StateOff }

// ParseState parses a state as written by people and by the fence agents:
// on/off (any case), and the switch-port words enable/enabled/disable/disabled.
// Anything else is an error, never a guess.
func ParseState(s string) (State, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "enable", "enabled":
		return StateOn, nil
	case "off", "disable", "disabled":
		return StateOff, nil
	}
	return StateUnknown, fmt.Errorf("fence: %q is not a state (want on or off)", s)
}

// Action is what a caller asks of a fence method, with the names the
// ClusterLabs fence agents use for --action.
type Action uint8

const (
	// ActionNone is the zero Action: no action chosen.
	ActionNone Action = iota
	// ActionOn powers the plug on (or enables the port) and verifies it.
	ActionOn
	// ActionOff powers the plug off (or disables the port) and verifies it.
	ActionOff
	// ActionReboot turns the plug off and on again, verified, or uses the
	// device's native cycle (see RebootMethod).
	ActionReboot
	// ActionStatus reads the plug's state.
	ActionStatus
	// ActionList lists the device's plugs.
	ActionList
	// ActionMonitor checks that the device is reachable and healthy.
	ActionMonitor
)

var actionNames = [...]string{
	ActionNone:    "none",
	ActionOn:      "on",
	ActionOff:     "off",
	ActionReboot:  "reboot",
	ActionStatus:  "status",
	ActionList:    "list",
	ActionMonitor: "monitor",
}

// String returns the agents' name of the action ("on", "off", "reboot", ...).
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Switches reports whether the action switches a device: on, off or
// reboot (status, list and monitor only read).
func (a Action) Switches() bool { return a == ActionOn || a == ActionOff || a == ActionReboot }

// Target returns the state a power action leaves the plug in: StateOn for
// on and reboot, StateOff for off, StateUnknown for the others.
func (a Action) Target() State {
	switch a {
	case ActionOn, ActionReboot:
		return StateOn
	case ActionOff:
		return StateOff
	}
	return StateUnknown
}

// ParseAction parses an action name as the fence agents accept it (any
// case); enable and disable are the agents' aliases of on and off.
func ParseAction(s string) (Action, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "enable":
		return ActionOn, nil
	case "off", "disable":
		return ActionOff, nil
	case "reboot":
		return ActionReboot, nil
	case "status":
		return ActionStatus, nil
	case "list":
		return ActionList, nil
	case "monitor":
		return ActionMonitor, nil
	}
	return ActionNone, fmt.Errorf("fence: %q is not an action (want on, off, reboot, status, list or monitor)", s)
}

// RebootMethod says how a reboot is carried out.
type RebootMethod uint8

const (
	// RebootOnOff, the default, turns the plug off, verifies it is off, then
	// turns it on and verifies it is on (the agents' --method onoff).
	RebootOnOff RebootMethod = iota
	// RebootCycle uses the device's native power cycle (the Cycler
	// capability) and then verifies the plug is on (the agents' --method
	// cycle). Note that a cycle never shows a verified off, and that a
	// cycle the device did not confirm (no answer, an error after it may
	// have acted) fails even when the plug reads on: it may never have
	// run.
	RebootCycle
)

// String returns "onoff" or "cycle".
func (m RebootMethod) String() string {
	if m == RebootCycle {
		return "cycle"
	}
	return "onoff"
}

// ParseRebootMethod parses "onoff" or "cycle" (any case).
func ParseRebootMethod(s string) (RebootMethod, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "onoff", "":
		return RebootOnOff, nil
	case "cycle":
		return RebootCycle, nil
	}
	return RebootOnOff, fmt.Errorf("fence: %q is not a reboot method (want onoff or cycle)", s)
}

// Fences reports whether the action fences a node: an off or a reboot,
// the actions whose verified off counts as the node fenced.
func (a Action) Fences() bool { return a == ActionOff || a == ActionReboot }
