package promfence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	_ "github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/healthcheck"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/promfence"
)

// The alert rules shipped in deploy/monitoring.
var (
	rulesDir  = filepath.Join("..", "deploy", "monitoring")
	rulesFile = filepath.Join(rulesDir, "fencekit-rules.yaml")
)

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// promtool checks the rules and runs their unit tests
// (fencekit-rules_test.yaml); every rule of the group fencekit names a
// metric this package exports (those of fencekit-agent, the node agents',
// are checked by cmd/fencekit-agent's tests); the PrometheusRule holds the
// same groups as the rule file.
func TestAlertRules(t *testing.T) {
	promtool := ipmisim.RequireTool(t, "promtool", "prometheus")
	for _, args := range [][]string{{"check", "rules", "fencekit-rules.yaml"}, {"test", "rules", "fencekit-rules_test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = rulesDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}

	reg := &describing{Registerer: prometheus.NewRegistry()}
	promfence.New(reg, promfence.Options{})
	exported := reg.names()
	require.Contains(t, exported, "fencekit_nodes_fenced")
	rules := testtool.RuleMetrics(t, rulesFile, "fencekit")
	for alert, used := range rules {
		for _, u := range used {
			assert.True(t, exported[u], "%s: %s is not a metric of promfence", alert, u)
		}
	}
	n := len(rules)
	assert.Equal(t, 9, n)

	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups json.RawMessage `json:"groups"`
		} `json:"spec"`
	}
	raw, err := os.ReadFile(filepath.Join(rulesDir, "prometheus-rule.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &pr))
	assert.Equal(t, "PrometheusRule", pr.Kind)
	var fromFile struct {
		Groups json.RawMessage `json:"groups"`
	}
	j, err := yaml.YAMLToJSON(mustRead(t, rulesFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &fromFile))
	assert.JSONEq(t, string(fromFile.Groups), string(pr.Spec.Groups), "prometheus-rule.yaml's groups are fencekit-rules.yaml's")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// A real Prometheus on loopback scrapes the metrics of a process whose BMC
// (go-ipmi's, on loopback) refuses its password: the off is not done, and
// FencekitDeviceFailing fires, naming the driver and the outcome, with no
// credential in any label or annotation.
func TestPrometheusFiresDeviceFailing(t *testing.T) {
	bin := ipmisim.RequireTool(t, "prometheus", "prometheus")
	const password = "s3cret-bmc-pass"
	bmc := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{User: "admin", Password: password})

	metrics, addr := serveMetrics(t)

	// The BMC's password was changed: the method still has the old one.
	m, err := fence.Open(t.Context(), bmc.URL(), &fence.MethodOptions{Node: "worker-1", Name: "bmc",
		Params: fence.Params{"username": "admin", "password": "old-password", "lanplus": "1", "power_timeout": "2", "io_timeout": "2"}})
	require.NoError(t, err)
	defer m.Close()
	m.Options.Observer = metrics
	_, err = fence.Do(t.Context(), m, fence.ActionOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err), "%v", err)
	assert.Equal(t, fence.StateOn, bmc.Truth())

	prom := startPrometheus(t, bin, mustAbs(t, rulesFile), addr)
	var firing []alert
	require.Eventually(t, func() bool {
		firing = prom.firing("")
		return len(firing) > 0
	}, 60*time.Second, 200*time.Millisecond, "no alert fired; prometheus said:\n%s", prom.logs)
	require.Len(t, firing, 1)
	a := firing[0]
	assert.Equal(t, "FencekitDeviceFailing", a.Labels["alertname"])
	assert.Equal(t, "ipmi", a.Labels["driver"])
	assert.Equal(t, "not-done", a.Labels["outcome"])
	all, _ := json.Marshal(firing)
	assert.NotContains(t, string(all), "old-password")
	assert.NotContains(t, string(all), password)
}

// prometheusRun is a Prometheus on loopback that scrapes one target every
// second and evaluates rules every second.
type prometheusRun struct {
	*testtool.Prometheus
	logs *testtool.SyncBuffer
}

type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func startPrometheus(t *testing.T, bin, rules, target string) *prometheusRun {
	t.Helper()
	p := testtool.StartPrometheus(t, bin, fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: fencekit
  static_configs:
  - targets: [%q]
`, rules, target))
	return &prometheusRun{Prometheus: p, logs: p.Logs}
}

// firing returns the alerts firing now (named name, or all for "").
func (p *prometheusRun) firing(name string) []alert {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	if p.Get(context.Background(), "/api/v1/alerts", &data) != nil {
		return nil
	}
	return slices.DeleteFunc(data.Alerts, func(a alert) bool {
		return a.State != "firing" || name != "" && a.Labels["alertname"] != name
	})
}

// serveMetrics serves a new promfence.Metrics on a loopback port until t
// ends, and returns it and the address.
func serveMetrics(t *testing.T) (*promfence.Metrics, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	metrics := promfence.New(reg, promfence.Options{})
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return metrics, l.Addr().String()
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

// describing is a Registerer that keeps what is registered with it, for
// the names of the metrics it describes.
type describing struct {
	prometheus.Registerer
	cs []prometheus.Collector
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	d.cs = append(d.cs, cs...)
	d.Registerer.MustRegister(cs...)
}

func (d *describing) names() map[string]bool {
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range d.cs {
		c.Describe(ch)
	}
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for desc := range ch {
		if m := fq.FindStringSubmatch(desc.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// A real Prometheus on loopback scrapes a process that checks a node's BMC
// (go-ipmi's, on loopback) every second: FencekitDeviceDown fires, naming
// the node, the method and the driver, once the BMC's password is changed
// (with the rule's 15 minutes shortened to none), with no credential in it,
// and clears once the password is the method's again.
func TestPrometheusFiresDeviceDown(t *testing.T) {
	bin := ipmisim.RequireTool(t, "prometheus", "prometheus")
	const password = "s3cret-bmc-pass"
	bmc := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{User: "admin", Password: password})

	metrics, addr := serveMetrics(t)

	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-bmc-worker-1", Data: map[string]string{"method.properties": "driver=ipmi\naddress=" + bmc.URL() +
			"\nusername=admin\npassword=" + password + "\nlanplus=1\npower_timeout=2\nio_timeout=1\n"}},
		{Name: "fence-config-worker-1", Data: map[string]string{"config.properties": "node_name=worker-1\npower_management=bmc\n"}},
	})
	require.NoError(t, err)
	checker := &healthcheck.Checker{Config: controller.StaticConfig{C: cfg}, Reporter: metrics.Devices(),
		Options: healthcheck.Options{Interval: time.Second, Rate: 100, Timeout: time.Second}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- checker.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		r := checker.Results()
		return len(r) == 1 && r[0].Up
	}, 10*time.Second, 50*time.Millisecond, "the BMC answers its check")

	// The rules as shipped, FencekitDeviceDown's 15 minutes left out.
	var rf map[string]any
	require.NoError(t, yaml.Unmarshal(mustRead(t, rulesFile), &rf))
	for _, g := range rf["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if r := r.(map[string]any); r["alert"] == "FencekitDeviceDown" {
				delete(r, "for")
			}
		}
	}
	b, err := yaml.Marshal(rf)
	require.NoError(t, err)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, b, 0o600))
	prom := startPrometheus(t, bin, rules, addr)
	time.Sleep(3 * time.Second) // scraped and evaluated with the device up
	assert.Empty(t, prom.firing("FencekitDeviceDown"), "the device answers")

	require.NoError(t, bmc.SetPassword("changed-by-an-admin"))
	var firing []alert
	require.Eventually(t, func() bool {
		firing = prom.firing("FencekitDeviceDown")
		return len(firing) > 0
	}, 60*time.Second, 200*time.Millisecond, "no alert fired; prometheus said:\n%s", prom.logs)
	require.Len(t, firing, 1)
	assert.Equal(t, map[string]string{"alertname": "FencekitDeviceDown", "severity": "warning", "node": "worker-1", "method": "bmc",
		"driver": "ipmi", "job": "fencekit", "instance": addr}, firing[0].Labels)
	assert.Equal(t, "fence method bmc of node worker-1 does not answer its health check", firing[0].Annotations["summary"])
	all, _ := json.Marshal(firing)
	assert.NotContains(t, string(all), password)
	assert.NotContains(t, string(all), "changed-by-an-admin")
	r := checker.Results()[0]
	assert.False(t, r.Up)
	assert.NotContains(t, r.Reason, password)

	require.NoError(t, bmc.SetPassword(password))
	require.Eventually(t, func() bool { return len(prom.firing("FencekitDeviceDown")) == 0 }, 60*time.Second, 200*time.Millisecond,
		"the alert clears once the BMC answers again")
	assert.Equal(t, fence.StateOn, bmc.Truth(), "nothing switched")
}
