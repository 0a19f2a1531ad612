package policy

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	for _, tc := range []struct {
		name    string
		in      string
		want    Config
		wantErr string
	}{
		{name: "empty input gives the defaults", in: "", want: def},
		{name: "null gives the defaults", in: "null", want: def},
		{name: "an empty object gives the defaults", in: "{}", want: def},
		{name: "every field, YAML", in: `
stormGuard:
  maxUnresponsivePercent: 30
  maxUnresponsive: 10
  cooldown: 10m
maxInFlight: 2
oneControlPlane: false
zoneStormGuard:
  label: example.com/rack
  maxUnresponsivePercent: 60
  minUnresponsive: 2
  cooldown: 1m
maintenance:
  nodeMaintenance: false
  cordoned: true
  labels: {example.com/upgrading: "true", example.com/maintenance: ""}
`, want: Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: 30, MaxUnresponsive: 10, Cooldown: Duration(10 * time.Minute)},
			ZoneStormGuard: ZoneStormGuardConfig{Label: "example.com/rack", MaxUnresponsivePercent: 60, MinUnresponsive: 2, Cooldown: Duration(time.Minute)},
			MaxInFlight:    2,
			Maintenance:    MaintenanceConfig{Cordoned: true, Labels: map[string]string{"example.com/upgrading": "true", "example.com/maintenance": ""}}}},
		{name: "every field, JSON",
			in: `{"stormGuard":{"maxUnresponsivePercent":12.5,"maxUnresponsive":3,"cooldown":"1m30s"},"zoneStormGuard":{"maxUnresponsivePercent":0},"maxInFlight":0,"oneControlPlane":true}`,
			want: Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: 12.5, MaxUnresponsive: 3, Cooldown: Duration(90 * time.Second)},
				ZoneStormGuard: ZoneStormGuardConfig{Label: DefaultZoneLabel, MinUnresponsive: DefaultZoneMinUnresponsive, Cooldown: Duration(DefaultStormCooldown)}, OneControlPlane: true,
				Maintenance: MaintenanceConfig{NodeMaintenance: true}}},
		{name: "fields left out keep their defaults", in: "stormGuard:\n  maxUnresponsive: 5\n",
			want: func() Config { c := def; c.StormGuard.MaxUnresponsive = 5; return c }()},
		{name: "a null field keeps its default", in: "maxInFlight: null\nstormGuard: null\n", want: def},
		{name: "no maintenance labels, written out", in: "maintenance: {labels: {}}", want: def},
		{name: "cooldown 0 as a number", in: "stormGuard: {cooldown: 0}",
			want: func() Config { c := def; c.StormGuard.Cooldown = 0; return c }()},
		{name: "storm guard off", in: "stormGuard: {maxUnresponsivePercent: 0}",
			want: func() Config { c := def; c.StormGuard.MaxUnresponsivePercent = 0; return c }()},

		{name: "a misspelt field", in: "maxInflight: 2",
			wantErr: "policy config: maxInflight: unknown field (did you mean maxInFlight? names are case-sensitive)"},
		{name: "an unknown nested field", in: "stormGuard: {percent: 30}",
			wantErr: "policy config: stormGuard.percent: unknown field (want maxUnresponsivePercent, maxUnresponsive, cooldown)"},
		{name: "a repeated field", in: "maxInFlight: 1\nmaxInFlight: 2",
			wantErr: "policy config: yaml: unmarshal errors:\n  line 2: key \"maxInFlight\" already set in map"},
		{name: "a cooldown in bare seconds", in: "stormGuard: {cooldown: 300}",
			wantErr: `policy config: stormGuard.cooldown: 300 is not a duration (want a Go duration such as "5m" or "90s")`},
		{name: "a bad cooldown", in: "stormGuard: {cooldown: 5 minutes}",
			wantErr: `policy config: stormGuard.cooldown: "5 minutes" is not a duration (want a Go duration such as "5m" or "90s")`},
		{name: "a fractional count", in: "maxInFlight: 1.5",
			wantErr: "policy config: maxInFlight: 1.5 is not a whole number"},
		{name: "a percent as a string", in: `stormGuard: {maxUnresponsivePercent: "30%"}`,
			wantErr: `policy config: stormGuard.maxUnresponsivePercent: "30%" is not a number`},
		{name: "a bad bool", in: "oneControlPlane: maybe",
			wantErr: `policy config: oneControlPlane: "maybe" is not true or false`},
		{name: "not an object", in: "- a\n- b\n",
			wantErr: `policy config: ["a","b"] is not an object with the fields stormGuard, zoneStormGuard, maxInFlight, oneControlPlane, maintenance`},
		{name: "a maintenance label that is no label key", in: "maintenance: {labels: {'under maintenance': x}}",
			wantErr: `policy config: maintenance.labels: "under maintenance" is not a label key`},
		{name: "maintenance labels not a map", in: "maintenance: {labels: [a, b]}",
			wantErr: `policy config: maintenance.labels: ["a","b"] is not a map of label keys to values`},
		{name: "a misspelt maintenance field", in: "maintenance: {cordon: true}",
			wantErr: "policy config: maintenance.cordon: unknown field (want nodeMaintenance, cordoned, labels)"},
		{name: "a zone label that is no label key", in: "zoneStormGuard: {label: 'topology zone'}",
			wantErr: `policy config: zoneStormGuard.label: "topology zone" is not a label key (want [prefix/]name, such as topology.kubernetes.io/zone: a name of up to 63 letters, digits, '-', '_' and '.', beginning and ending with a letter or digit, after an optional DNS subdomain)`},
		{name: "a zone guard of no node", in: "zoneStormGuard: {minUnresponsive: 0}",
			wantErr: `policy config: zoneStormGuard.minUnresponsive: 0: want 1 or more`},
		{name: "a misspelt zone field", in: "zoneStormGuard: {labels: zone}",
			wantErr: "policy config: zoneStormGuard.labels: unknown field (want label, maxUnresponsivePercent, minUnresponsive, cooldown)"},
		{name: "stormGuard not an object", in: "stormGuard: 50",
			wantErr: `policy config: stormGuard: 50 is not an object with the fields maxUnresponsivePercent, maxUnresponsive, cooldown`},
		{name: "a percent of 100", in: "stormGuard: {maxUnresponsivePercent: 100}",
			wantErr: "policy config: stormGuard.maxUnresponsivePercent: 100 would never refuse, as no share of nodes is over it (want 0 to below 100; 0 turns the bound off)"},
		{name: "several errors, each with its field", in: "stormGuard: {maxUnresponsive: -1, cooldown: -5m}\nmaxInFlight: -2\nbogus: 1",
			wantErr: "policy config: bogus: unknown field (want stormGuard, zoneStormGuard, maxInFlight, oneControlPlane, maintenance)\n" +
				"policy config: stormGuard.maxUnresponsive: -1 is negative (want 0 or more; 0 turns the bound off)\n" +
				"policy config: stormGuard.cooldown: -5m0s is negative (want 0 or more, such as \"5m\")\n" +
				"policy config: maxInFlight: -2 is negative (want 0 or more; 0 means no limit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				assert.ErrorIs(t, err, ErrConfig)
				var ce *ConfigError
				assert.ErrorAs(t, err, &ce)
				assert.Equal(t, Config{}, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A field that does not parse and one that does not validate are both
// reported, each with its field.
func TestParseConfigErrorsNameTheField(t *testing.T) {
	_, err := ParseConfig([]byte("stormGuard: {maxUnresponsive: x}\nmaxInFlight: -1"))
	var fields []string
	for _, e := range unjoin(err) {
		ce, ok := e.(*ConfigError)
		require.True(t, ok, "%T", e)
		fields = append(fields, ce.Field)
	}
	assert.Equal(t, []string{"stormGuard.maxUnresponsive", "maxInFlight"}, fields)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c         Config
		wantField []string
	}{
		{"the defaults", DefaultConfig(), nil},
		{"the zero config", Config{}, nil},
		{"a percent just below 100", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: 99.9}}, nil},
		{"NaN percent", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: math.NaN()}}, []string{"stormGuard.maxUnresponsivePercent"}},
		{"infinite percent", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: math.Inf(1)}}, []string{"stormGuard.maxUnresponsivePercent"}},
		{"negative percent", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: -1}}, []string{"stormGuard.maxUnresponsivePercent"}},
		{"percent over 100", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: 120}}, []string{"stormGuard.maxUnresponsivePercent"}},
		{"every field bad", Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: -1, MaxUnresponsive: -1, Cooldown: -1}, MaxInFlight: -1},
			[]string{"stormGuard.maxUnresponsivePercent", "stormGuard.maxUnresponsive", "stormGuard.cooldown", "maxInFlight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			var fields []string
			for _, e := range unjoin(err) {
				var ce *ConfigError
				require.ErrorAs(t, e, &ce)
				fields = append(fields, ce.Field)
			}
			assert.Equal(t, tc.wantField, fields)
			_, gerr := tc.c.Gate()
			assert.Equal(t, err == nil, gerr == nil)
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestConfigGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want all
	}{
		{"the defaults", DefaultConfig(), all{&StormGuard{MaxUnresponsivePercent: 50, Cooldown: 5 * time.Minute},
			&ZoneStormGuard{Label: DefaultZoneLabel, MaxUnresponsivePercent: 55, MinUnresponsive: 3, Cooldown: 5 * time.Minute}, MaxInFlight{N: 1}, OneControlPlane{}}},
		{"everything off", Config{StormGuard: StormGuardConfig{Cooldown: Duration(time.Minute)}}, all{}},
		{"a count bound only", Config{StormGuard: StormGuardConfig{MaxUnresponsive: 3}}, all{&StormGuard{MaxUnresponsive: 3}}},
		{"max-in-flight only", Config{MaxInFlight: 4}, all{MaxInFlight{N: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.c.Gate()
			require.NoError(t, err)
			assert.Equal(t, tc.want, g)
		})
	}
	// Everything off admits even a full storm.
	g, err := Config{}.Gate()
	require.NoError(t, err)
	assert.True(t, g.Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: nodes(3, 3)}).Admit)
}

func TestConfigRoundTrip(t *testing.T) {
	c := Config{StormGuard: StormGuardConfig{MaxUnresponsivePercent: 33.3, MaxUnresponsive: 7, Cooldown: Duration(90 * time.Second)}, MaxInFlight: 3}
	j, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"stormGuard":{"maxUnresponsivePercent":33.3,"maxUnresponsive":7,"cooldown":"1m30s"},"zoneStormGuard":{"label":"","maxUnresponsivePercent":0,"minUnresponsive":0,"cooldown":"0s"},"maxInFlight":3,"oneControlPlane":false,"maintenance":{"nodeMaintenance":false,"cordoned":false,"labels":null}}`, string(j))
	got, err := ParseConfig(j)
	require.NoError(t, err)
	assert.Equal(t, c, got)

	y, err := yaml.Marshal(c)
	require.NoError(t, err)
	got, err = ParseConfig(y)
	require.NoError(t, err)
	assert.Equal(t, c, got)
}

func TestDuration(t *testing.T) {
	var d Duration
	require.NoError(t, d.UnmarshalText([]byte("1h2m3s")))
	assert.Equal(t, Duration(time.Hour+2*time.Minute+3*time.Second), d)
	b, err := d.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "1h2m3s", string(b))
	assert.Equal(t, "1h2m3s", d.String())

	require.NoError(t, json.Unmarshal([]byte(`null`), &d))
	assert.Equal(t, Duration(time.Hour+2*time.Minute+3*time.Second), d, "null changes nothing")
	require.NoError(t, json.Unmarshal([]byte(`0`), &d))
	assert.Zero(t, d)
	err = json.Unmarshal([]byte(`{"a":1}`), &d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `{"a":1} is not a duration`)
	assert.False(t, errors.Is(err, ErrConfig), "a bare Duration error is not a config error until ParseConfig names the field")
}
