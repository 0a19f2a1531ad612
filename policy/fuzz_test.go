package policy

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseConfig: ParseConfig never panics; it returns either a valid
// Config that builds a gate and survives a JSON round trip, or only
// *ConfigErrors.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"",
		"{}",
		"null",
		"stormGuard:\n  maxUnresponsivePercent: 30\n  maxUnresponsive: 10\n  cooldown: 10m\nmaxInFlight: 2\noneControlPlane: false\n",
		`{"stormGuard":{"maxUnresponsivePercent":12.5,"cooldown":"1m30s"},"maxInFlight":0}`,
		"maxInflight: 2",
		"stormGuard: {cooldown: 300}",
		"stormGuard: {cooldown: 0}",
		"stormGuard: {maxUnresponsivePercent: 100}",
		"stormGuard: {maxUnresponsivePercent: .nan}",
		"maxInFlight: 1\nmaxInFlight: 2",
		"maxInFlight: 1e400",
		"maxInFlight: 99999999999999999999",
		"- a\n- b\n",
		"stormGuard: 50",
		"oneControlPlane: yes",
		"stormGuard: &a {cooldown: 1s}\nx: *a",
		"\"\xff\": 1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			for _, e := range unjoin(err) {
				var ce *ConfigError
				require.True(t, errors.As(e, &ce), "not a *ConfigError: %T %v", e, e)
			}
			require.ErrorIs(t, err, ErrConfig)
			return
		}
		require.NoError(t, c.Validate())
		g, err := c.Gate()
		require.NoError(t, err)
		g.Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: nodes(4, 2)})

		j, err := json.Marshal(c)
		require.NoError(t, err)
		back, err := ParseConfig(j)
		require.NoError(t, err, "%s", j)
		require.Equal(t, c, back)
	})
}
