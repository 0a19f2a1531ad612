package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// metricsToken returns the token of a new service account of namespace ns
// bound to the ClusterRoles of deploy/metrics-reader.yaml named in roles
// (created under unique names), as a Prometheus that scrapes the
// controller has.
func metricsToken(tb testing.TB, admin kubernetes.Interface, ns string, roles ...string) string {
	tb.Helper()
	ctx := tb.Context()
	sa := "scraper-" + kubetest.UniqueName(tb)
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	must(tb, err)
	for _, name := range roles {
		var cr rbacv1.ClusterRole
		for _, o := range kubetest.Objects(tb, filepath.Join(deployDir, "metrics-reader.yaml")) {
			if o.GetName() == name {
				must(tb, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr))
			}
		}
		if cr.Name == "" {
			tb.Fatalf("no ClusterRole %s in deploy/metrics-reader.yaml", name)
		}
		cr.Name = sa + "-" + name
		_, err := admin.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{})
		must(tb, err)
		_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
		must(tb, err)
		tb.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(tb.Context(), cr.Name, metav1.DeleteOptions{})
			_ = admin.RbacV1().ClusterRoles().Delete(tb.Context(), cr.Name, metav1.DeleteOptions{})
		})
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	must(tb, err)
	return tr.Status.Token
}

// scrape GETs path of the controller's secure metrics server at addr with
// token ("" for none), trusting its self-signed certificate, and returns
// the status and the body.
func scrape(tb testing.TB, addr, path, token string) (int, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, "https://"+addr+path, nil)
	must(tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server's certificate is self-signed
	resp, err := hc.Do(req)
	must(tb, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(tb, err)
	return resp.StatusCode, string(b)
}

// The program's metrics and profiles, as deployed (--metrics-secure, on by
// default), on the real API server: over HTTPS only; no token 401; the
// controller's own service account, without the reader's role, 403; a
// service account bound to fencekit-metrics-reader reads /metrics, and not
// the profiles until it is bound to fencekit-profiles-reader too.
func TestIntegrationSecureMetrics(t *testing.T) {
	_, admin, ns, cfg := deployed(t)
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

	reader := metricsToken(t, admin, ns, "fencekit-metrics-reader")
	require.Eventually(t, func() bool { code, body = scrape(t, addr, "/metrics", reader); return code == http.StatusOK },
		10*time.Second, 100*time.Millisecond, "the reader: %d %s", code, body)
	assert.Contains(t, body, "fencekit_")
	code, _ = scrape(t, addr, "/debug/pprof/heap", reader)
	assert.Equal(t, http.StatusForbidden, code, "the profiles need their own role")
	debugger := metricsToken(t, admin, ns, "fencekit-metrics-reader", "fencekit-profiles-reader")
	require.Eventually(t, func() bool { code, _ = scrape(t, addr, "/debug/pprof/heap", debugger); return code == http.StatusOK },
		10*time.Second, 100*time.Millisecond, "the profiles' reader: %d", code)

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "no plain HTTP")
	assert.NotContains(t, run.logs.String(), reader, "no token in the logs")
}
