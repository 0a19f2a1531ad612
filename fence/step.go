package fence

import (
	"fmt"
	"strings"
)

// Step is a step of the fencing of a node, in the design's words: isolation
// (storage or network fencing), power management (powering the node off and
// on), and recovery (undoing the isolation once the node is back).
type Step uint8

// The steps, in the order a fencing goes through them.
const (
	StepIsolation Step = iota + 1
	StepPowerManagement
	StepRecovery
)

// Steps returns every step, in order.
func Steps() []Step { return []Step{StepIsolation, StepPowerManagement, StepRecovery} }

// String returns "isolation", "power_management" or "recovery", the keys of
// config.properties.
func (s Step) String() string {
	switch s {
	case StepIsolation:
		return "isolation"
	case StepPowerManagement:
		return "power_management"
	case StepRecovery:
		return "recovery"
	}
	return fmt.Sprintf("step(%d)", uint8(s))
}

// ParseStep parses a step as the design writes it, in any case and with '-'
// or '_': isolation; power_management (and the design's power-management,
// Power-Management and power_managment); recovery or recover. Anything else
// is an error wrapping ErrConfig.
func ParseStep(s string) (Step, error) {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_") {
	case "isolation":
		return StepIsolation, nil
	case "power_management", "power_managment":
		return StepPowerManagement, nil
	case "recovery", "recover":
		return StepRecovery, nil
	}
	return 0, fmt.Errorf("%w: %q is not a step (want isolation, power_management or recovery)", ErrConfig, s)
}
