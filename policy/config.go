package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// Defaults of DefaultConfig and Default. The package documentation says
// why these values.
const (
	// DefaultMaxUnresponsivePercent refuses fencing when more than half of
	// the nodes are unresponsive.
	DefaultMaxUnresponsivePercent = 50
	// DefaultStormCooldown keeps fencing refused for five minutes after
	// the last pass that saw a storm.
	DefaultStormCooldown = 5 * time.Minute
	// DefaultMaxInFlight lets one node at a time be fenced.
	DefaultMaxInFlight = 1
)

// ErrConfig marks every configuration error (see ConfigError).
var ErrConfig = errors.New("bad policy configuration")

// ConfigError is an error in a policy Config: Field is the field at fault
// as it is spelled in JSON and YAML ("stormGuard.cooldown"), empty when the
// input could not be read at all. It matches ErrConfig with errors.Is.
type ConfigError struct {
	Field string
	Err   error
}

// Error returns "policy config: FIELD: cause".
func (e *ConfigError) Error() string {
	return new(errfmt.Labels).Start("policy config").Part(e.Field).Cause(e.Err, "invalid")
}

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes a ConfigError match ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Config is the fencing policy of a cluster, as an operator writes it in
// JSON or YAML:
//
//	stormGuard:
//	  maxUnresponsivePercent: 50
//	  maxUnresponsive: 0
//	  cooldown: 5m
//	maxInFlight: 1
//	oneControlPlane: true
//
// In every limit, 0 turns the limit off. The zero Config therefore turns
// every gate off and admits every fencing; start from DefaultConfig (as
// ParseConfig does) and change what differs.
type Config struct {
	// StormGuard configures the StormGuard; with both bounds 0 there is
	// none.
	StormGuard StormGuardConfig `json:"stormGuard" yaml:"stormGuard"`
	// ZoneStormGuard configures the ZoneStormGuard: storms counted in
	// each failure domain; with maxUnresponsivePercent 0 there is none.
	ZoneStormGuard ZoneStormGuardConfig `json:"zoneStormGuard" yaml:"zoneStormGuard"`
	// MaxInFlight is the number of fencings in flight at which a new one
	// is refused (MaxInFlight); 0 means no limit.
	MaxInFlight int `json:"maxInFlight" yaml:"maxInFlight"`
	// OneControlPlane, when true, lets at most one control-plane node be
	// fenced at a time (OneControlPlane).
	OneControlPlane bool `json:"oneControlPlane" yaml:"oneControlPlane"`
	// Maintenance says when a node counts as under maintenance and is not
	// fenced: the UnderMaintenance gate, which Gate does not build (it
	// needs a source of NodeMaintenance objects).
	Maintenance MaintenanceConfig `json:"maintenance" yaml:"maintenance"`
}

// StormGuardConfig configures a StormGuard; see its fields.
type StormGuardConfig struct {
	// MaxUnresponsivePercent is StormGuard.MaxUnresponsivePercent: from 0
	// (off) to below 100.
	MaxUnresponsivePercent float64 `json:"maxUnresponsivePercent" yaml:"maxUnresponsivePercent"`
	// MaxUnresponsive is StormGuard.MaxUnresponsive: 0 (off) or more.
	MaxUnresponsive int `json:"maxUnresponsive" yaml:"maxUnresponsive"`
	// Cooldown is StormGuard.Cooldown, written as a Go duration ("5m",
	// "90s"); 0 or more.
	Cooldown Duration `json:"cooldown" yaml:"cooldown"`
}

// ZoneStormGuardConfig configures a ZoneStormGuard; see its fields.
type ZoneStormGuardConfig struct {
	// Label is ZoneStormGuard.Label: a label key ("" means
	// topology.kubernetes.io/zone).
	Label string `json:"label" yaml:"label"`
	// MaxUnresponsivePercent is ZoneStormGuard.MaxUnresponsivePercent:
	// from 0 (off) to below 100.
	MaxUnresponsivePercent float64 `json:"maxUnresponsivePercent" yaml:"maxUnresponsivePercent"`
	// MinUnresponsive is ZoneStormGuard.MinUnresponsive: 1 or more.
	MinUnresponsive int `json:"minUnresponsive" yaml:"minUnresponsive"`
	// Cooldown is ZoneStormGuard.Cooldown; 0 or more.
	Cooldown Duration `json:"cooldown" yaml:"cooldown"`
}

// DefaultConfig returns the defaults: a storm guard that refuses when more
// than 50 % of the nodes are unresponsive, with a 5 minute cooldown and no
// bound on their number; a zone storm guard that refuses in a zone
// (topology.kubernetes.io/zone) where more than 55 % of the nodes, and at
// least 3, are unresponsive, with the same cooldown; one fencing in flight
// at a time; one control-plane node at a time.
func DefaultConfig() Config {
	return Config{
		StormGuard: StormGuardConfig{
			MaxUnresponsivePercent: DefaultMaxUnresponsivePercent,
			Cooldown:               Duration(DefaultStormCooldown),
		},
		ZoneStormGuard: ZoneStormGuardConfig{
			Label:                  DefaultZoneLabel,
			MaxUnresponsivePercent: DefaultZoneMaxUnresponsivePercent,
			MinUnresponsive:        DefaultZoneMinUnresponsive,
			Cooldown:               Duration(DefaultStormCooldown),
		},
		MaxInFlight:     DefaultMaxInFlight,
		OneControlPlane: true,
		Maintenance:     MaintenanceConfig{NodeMaintenance: true},
	}
}

// Default returns the gate of DefaultConfig: All of a StormGuard, a
// MaxInFlight and a OneControlPlane, in that order. Each call returns a new
// storm guard with no memory of storms: build the gate once and keep it.
func Default() Gate {
	g, err := DefaultConfig().Gate()
	if err != nil {
		panic("policy: the default configuration is invalid: " + err.Error())
	}
	return g
}

// ParseConfig reads a Config from YAML or JSON over DefaultConfig, so that
// fields left out keep their defaults, and validates it. Field names are
// matched exactly; unknown, misspelt and repeated fields are errors (a
// misspelt limit must not silently keep its default). Empty input gives
// DefaultConfig. Every error is a *ConfigError naming the field when there
// is one; several bad fields give their errors joined.
func ParseConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, &ConfigError{Err: err}
	}
	var errs []error
	fail := func(field string, err error) { errs = append(errs, &ConfigError{Field: field, Err: err}) }
	top, err := fields(j, "", configFields)
	if top == nil && err != nil {
		return Config{}, err
	}
	errs = append(errs, err)
	for _, f := range configFields {
		raw, ok := top[f]
		if !ok {
			continue
		}
		switch f {
		case "stormGuard":
			sg, err := fields(raw, "stormGuard", stormGuardFields)
			errs = append(errs, err)
			for _, g := range stormGuardFields {
				raw, ok := sg[g]
				if !ok {
					continue
				}
				var err error
				switch g {
				case "maxUnresponsivePercent":
					err = decodeNumber(raw, &c.StormGuard.MaxUnresponsivePercent)
				case "maxUnresponsive":
					err = decodeInt(raw, &c.StormGuard.MaxUnresponsive)
				case "cooldown":
					err = c.StormGuard.Cooldown.UnmarshalJSON(raw)
				}
				if err != nil {
					fail("stormGuard."+g, err)
				}
			}
		case "zoneStormGuard":
			zg, err := fields(raw, "zoneStormGuard", zoneStormGuardFields)
			errs = append(errs, err)
			for _, g := range zoneStormGuardFields {
				raw, ok := zg[g]
				if !ok {
					continue
				}
				var err error
				switch g {
				case "label":
					err = decodeString(raw, &c.ZoneStormGuard.Label)
				case "maxUnresponsivePercent":
					err = decodeNumber(raw, &c.ZoneStormGuard.MaxUnresponsivePercent)
				case "minUnresponsive":
					err = decodeInt(raw, &c.ZoneStormGuard.MinUnresponsive)
				case "cooldown":
					err = c.ZoneStormGuard.Cooldown.UnmarshalJSON(raw)
				}
				if err != nil {
					fail("zoneStormGuard."+g, err)
				}
			}
		case "maintenance":
			mf, err := fields(raw, "maintenance", maintenanceFields)
			errs = append(errs, err)
			for _, g := range maintenanceFields {
				raw, ok := mf[g]
				if !ok {
					continue
				}
				var err error
				switch g {
				case "nodeMaintenance":
					err = decodeBool(raw, &c.Maintenance.NodeMaintenance)
				case "cordoned":
					err = decodeBool(raw, &c.Maintenance.Cordoned)
				case "labels":
					if string(raw) != "null" {
						if e := json.Unmarshal(raw, &c.Maintenance.Labels); e != nil {
							err = fmt.Errorf("%s is not a map of label keys to values", describe(raw))
						}
					}
					if len(c.Maintenance.Labels) == 0 {
						c.Maintenance.Labels = nil // {} is no labels, as left out
					}
				}
				if err != nil {
					fail("maintenance."+g, err)
				}
			}
		case "maxInFlight":
			if err := decodeInt(raw, &c.MaxInFlight); err != nil {
				fail(f, err)
			}
		case "oneControlPlane":
			if err := decodeBool(raw, &c.OneControlPlane); err != nil {
				fail(f, err)
			}
		}
	}
	// Fields that did not parse kept their (valid) defaults, so validating
	// the rest reports every bad field at once.
	errs = append(errs, c.Validate())
	if err := errors.Join(flatten(errs)...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// flatten replaces every joined error in errs by the errors it joins, so
// that a caller unwrapping the result finds one *ConfigError per field.
func flatten(errs []error) []error {
	var out []error
	for _, err := range errs {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(j.Unwrap())...)
		} else if err != nil {
			out = append(out, err)
		}
	}
	return out
}

var (
	configFields         = []string{"stormGuard", "zoneStormGuard", "maxInFlight", "oneControlPlane", "maintenance"}
	maintenanceFields    = []string{"nodeMaintenance", "cordoned", "labels"}
	stormGuardFields     = []string{"maxUnresponsivePercent", "maxUnresponsive", "cooldown"}
	zoneStormGuardFields = []string{"label", "maxUnresponsivePercent", "minUnresponsive", "cooldown"}
)

// fields splits the JSON object j (the field named at, "" for the top)
// into its fields, refusing names not in known. null is an empty object.
func fields(j []byte, at string, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, &ConfigError{Field: at, Err: fmt.Errorf("%s is not an object with the fields %s", describe(j), strings.Join(known, ", "))}
	}
	var errs []error
	for k := range m {
		if slices.Contains(known, k) {
			continue
		}
		field := k
		if at != "" {
			field = at + "." + k
		}
		hint := ""
		for _, f := range known {
			if strings.EqualFold(f, k) {
				hint = fmt.Sprintf(" (did you mean %s? names are case-sensitive)", f)
			}
		}
		if hint == "" {
			hint = " (want " + strings.Join(known, ", ") + ")"
		}
		errs = append(errs, &ConfigError{Field: field, Err: fmt.Errorf("unknown field%s", hint)})
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return m, errors.Join(errs...)
}

func decodeInt(raw json.RawMessage, v *int) error {
	if string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s is not a whole number", describe(raw))
	}
	return nil
}

func decodeNumber(raw json.RawMessage, v *float64) error {
	if string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s is not a number", describe(raw))
	}
	return nil
}

func decodeBool(raw json.RawMessage, v *bool) error {
	if string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s is not true or false", describe(raw))
	}
	return nil
}

// labelKey matches a Kubernetes label key: an optional DNS subdomain prefix
// (at most 253 characters) and a slash, then a name of at most 63.
var labelKey = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

func decodeString(raw json.RawMessage, v *string) error {
	if string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s is not a string", describe(raw))
	}
	return nil
}

// describe quotes a JSON value for an error message, shortened.
func describe(raw []byte) string {
	s := string(raw)
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}

// Validate checks every field and returns nil or the errors of every bad
// field joined, each a *ConfigError naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	sg := c.StormGuard
	switch p := sg.MaxUnresponsivePercent; {
	case math.IsNaN(p) || math.IsInf(p, 0):
		bad("stormGuard.maxUnresponsivePercent", "%v is not a number (want 0 to below 100; 0 turns the bound off)", p)
	case p < 0:
		bad("stormGuard.maxUnresponsivePercent", "%s is negative (want 0 to below 100; 0 turns the bound off)", formatFloat(p))
	case p >= 100:
		bad("stormGuard.maxUnresponsivePercent", "%s would never refuse, as no share of nodes is over it (want 0 to below 100; 0 turns the bound off)", formatFloat(p))
	}
	if sg.MaxUnresponsive < 0 {
		bad("stormGuard.maxUnresponsive", "%d is negative (want 0 or more; 0 turns the bound off)", sg.MaxUnresponsive)
	}
	if sg.Cooldown < 0 {
		bad("stormGuard.cooldown", "%s is negative (want 0 or more, such as \"5m\")", sg.Cooldown)
	}
	zg := c.ZoneStormGuard
	if prefix, _, ok := strings.Cut(zg.Label, "/"); zg.Label != "" && (!labelKey.MatchString(zg.Label) || ok && len(prefix) > 253) {
		bad("zoneStormGuard.label", "%q is not a label key (want [prefix/]name, such as topology.kubernetes.io/zone: a name of up to 63 letters, digits, '-', '_' and '.', beginning and ending with a letter or digit, after an optional DNS subdomain)", zg.Label)
	}
	switch p := zg.MaxUnresponsivePercent; {
	case math.IsNaN(p) || math.IsInf(p, 0):
		bad("zoneStormGuard.maxUnresponsivePercent", "%v is not a number (want 0 to below 100; 0 turns the guard off)", p)
	case p < 0:
		bad("zoneStormGuard.maxUnresponsivePercent", "%s is negative (want 0 to below 100; 0 turns the guard off)", formatFloat(p))
	case p >= 100:
		bad("zoneStormGuard.maxUnresponsivePercent", "%s would never refuse, as no share of nodes is over it (want 0 to below 100; 0 turns the guard off)", formatFloat(p))
	}
	if zg.MaxUnresponsivePercent > 0 && zg.MinUnresponsive < 1 {
		bad("zoneStormGuard.minUnresponsive", "%d: want 1 or more", zg.MinUnresponsive)
	}
	if zg.Cooldown < 0 {
		bad("zoneStormGuard.cooldown", "%s is negative (want 0 or more, such as \"5m\")", zg.Cooldown)
	}
	if c.MaxInFlight < 0 {
		bad("maxInFlight", "%d is negative (want 0 or more; 0 means no limit)", c.MaxInFlight)
	}
	c.Maintenance.validate(bad)
	return errors.Join(errs...)
}

// Gate validates c and builds its gate: All of, in this order, a StormGuard
// (when a bound is set), a ZoneStormGuard (when its percentage is set), a
// MaxInFlight (when MaxInFlight is set) and OneControlPlane (when set).
// The storm guards come first so that they see every pass. With every gate off, the gate admits every fencing.
func (c Config) Gate() (Gate, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var gs []Gate
	if sg := c.StormGuard; sg.MaxUnresponsivePercent > 0 || sg.MaxUnresponsive > 0 {
		gs = append(gs, &StormGuard{
			MaxUnresponsivePercent: sg.MaxUnresponsivePercent,
			MaxUnresponsive:        sg.MaxUnresponsive,
			Cooldown:               time.Duration(sg.Cooldown),
		})
	}
	if zg := c.ZoneStormGuard; zg.MaxUnresponsivePercent > 0 {
		gs = append(gs, &ZoneStormGuard{
			Label:                  zg.Label,
			MaxUnresponsivePercent: zg.MaxUnresponsivePercent,
			MinUnresponsive:        zg.MinUnresponsive,
			Cooldown:               time.Duration(zg.Cooldown),
		})
	}
	if c.MaxInFlight > 0 {
		gs = append(gs, MaxInFlight{N: c.MaxInFlight})
	}
	if c.OneControlPlane {
		gs = append(gs, OneControlPlane{})
	}
	return All(gs...), nil
}

// Duration is a time.Duration written in JSON and YAML as a Go duration
// string, such as "5m" or "1m30s".
type Duration time.Duration

// String returns the duration as time.Duration writes it ("5m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Go duration string ("5m", "90s", "0").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (want a Go duration such as \"5m\" or \"90s\")", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a JSON string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a JSON string holding a Go duration. A bare number
// other than 0 is refused rather than guessed to be seconds or
// nanoseconds; null changes nothing.
func (d *Duration) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		return nil
	case "0":
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s is not a duration (want a Go duration such as \"5m\" or \"90s\")", describe(b))
	}
	return d.UnmarshalText([]byte(s))
}
