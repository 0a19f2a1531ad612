package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/internal/testtool"
)

// metricsToken returns the token of a new service account of namespace ns
// bound to the ClusterRoles of deploy/metrics-reader.yaml named in roles.
func metricsToken(tb testing.TB, c *kubetest.Cluster, ns string, roles ...string) string {
	tb.Helper()
	return c.ReaderToken(tb, ns, filepath.Join(deployDir, "metrics-reader.yaml"), roles...)
}

// scrape GETs path of the controller's secure metrics server.
var scrape = kubetest.ScrapeTLS

// The program's metrics and profiles, as deployed (--metrics-secure, on by
// default), on the real API server: over HTTPS only; no token 401; the
// controller's own service account, without the reader's role, 403; a
// service account bound to fencekit-metrics-reader reads /metrics, and not
// the profiles until it is bound to fencekit-profiles-reader too. A real
// Prometheus scrapes it with the reader's token, and fails with the
// controller's own.
func TestIntegrationSecureMetrics(t *testing.T) {
	c, admin, ns, cfg := deployed(t)
	run := startRun(t, cfg, true, "--namespace="+ns, "--leader-elect=false", "--metrics-secure=true",
		"--metrics-bind-address=127.0.0.1:0", "--profiling", "--log-format=text")
	require.NotNil(t, run.info.MetricsAddr)
	addr := run.info.MetricsAddr.String()

	code, _ := scrape(t, addr, "/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	own, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), serviceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	code, body := scrape(t, addr, "/metrics", own.Status.Token)
	assert.Equal(t, http.StatusForbidden, code, "the controller's own account may not read its metrics")
	assert.Contains(t, body, "may not get /metrics")

	reader := metricsToken(t, c, ns, "fencekit-metrics-reader")
	require.Eventually(t, func() bool { code, body = scrape(t, addr, "/metrics", reader); return code == http.StatusOK },
		10*time.Second, 100*time.Millisecond, "the reader: %d %s", code, body)
	assert.Contains(t, body, "fencekit_")
	code, _ = scrape(t, addr, "/debug/pprof/heap", reader)
	assert.Equal(t, http.StatusForbidden, code, "the profiles need their own role")
	debugger := metricsToken(t, c, ns, "fencekit-metrics-reader", "fencekit-profiles-reader")
	require.Eventually(t, func() bool { code, _ = scrape(t, addr, "/debug/pprof/heap", debugger); return code == http.StatusOK },
		10*time.Second, 100*time.Millisecond, "the profiles' reader: %d", code)

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "no plain HTTP")
	assert.NotContains(t, run.logs.String(), reader, "no token in the logs")

	// A real Prometheus scrapes it as a cluster's would: over HTTPS, with
	// the reader's service-account token in a file; its job with the
	// controller's own token is refused, the target down with 403.
	bin := testtool.Require(t, "prometheus", "prometheus")
	dir := t.TempDir()
	job := func(name, token string) string {
		file := filepath.Join(dir, name+".token")
		require.NoError(t, os.WriteFile(file, []byte(token), 0o600))
		return fmt.Sprintf(`- job_name: %s
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %q}
  static_configs: [{targets: [%q]}]
`, name, file, addr)
	}
	prom := testtool.StartPrometheus(t, bin, "global: {scrape_interval: 1s}\nscrape_configs:\n"+
		job("reader", reader)+job("own", own.Status.Token))
	type target struct {
		Labels    map[string]string `json:"labels"`
		Health    string            `json:"health"`
		LastError string            `json:"lastError"`
	}
	targets := map[string]target{}
	require.Eventually(t, func() bool {
		var data struct {
			ActiveTargets []target `json:"activeTargets"`
		}
		if prom.Get(t.Context(), "/api/v1/targets", &data) != nil {
			return false
		}
		for _, tg := range data.ActiveTargets {
			targets[tg.Labels["job"]] = tg
		}
		return targets["reader"].Health == "up" && targets["own"].Health == "down"
	}, 60*time.Second, 200*time.Millisecond, "the reader's scrapes succeed, the others' fail: %+v", targets)
	assert.Contains(t, targets["own"].LastError, "403")
	var series []any
	require.Eventually(t, func() bool {
		return prom.Get(t.Context(), "/api/v1/series?match[]="+url.QueryEscape(`{job="reader",__name__=~"fencekit_.+"}`), &series) == nil &&
			len(series) > 0
	}, 30*time.Second, 200*time.Millisecond, "the controller's series, as Prometheus stored them")
}
