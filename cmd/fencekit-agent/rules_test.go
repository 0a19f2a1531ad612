package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Every rule of the alert group fencekit-agent
// (deploy/monitoring/fencekit-rules.yaml, whose promtool tests
// promfence's tests run) names a metric the agent exports.
func TestAlertRulesNameAgentMetrics(t *testing.T) {
	a, err := newAgent(&options{node: "a", sbdDevices: "/dev/null", watchdog: "sim:" + filepath.Join(t.TempDir(), "wd"),
		watchdogTimeout: 2 * time.Second, interval: 500 * time.Millisecond}, nil)
	require.NoError(t, err)
	mfs, err := a.reg.Gather()
	require.NoError(t, err)
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "monitoring", "fencekit-rules.yaml"))
	require.NoError(t, err)
	var rf struct {
		Groups []struct {
			Name  string
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &rf))
	names := regexp.MustCompile(`\bfencekit_[a-z_]+`)
	n := 0
	for _, g := range rf.Groups {
		if g.Name != "fencekit-agent" {
			continue
		}
		for _, r := range g.Rules {
			n++
			used := names.FindAllString(r.Expr, -1)
			require.NotEmpty(t, used, r.Alert)
			for _, u := range used {
				assert.True(t, exported[u], "%s: %s is not a metric of the agent", r.Alert, u)
			}
		}
	}
	assert.Equal(t, 4, n)
}
