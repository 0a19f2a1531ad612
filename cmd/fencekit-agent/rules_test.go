package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	rules := testtool.RuleMetrics(t, filepath.Join("..", "..", "deploy", "monitoring", "fencekit-rules.yaml"), "fencekit-agent")
	for alert, used := range rules {
		for _, u := range used {
			assert.True(t, exported[u], "%s: %s is not a metric of the agent", alert, u)
		}
	}
	n := len(rules)
	assert.Equal(t, 4, n)
}
