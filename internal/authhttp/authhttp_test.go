package authhttp_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"

	"github.com/fencekit/fencekit/internal/authhttp"
	"github.com/fencekit/fencekit/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// On the real API server: a service account bound to a role that may get
// /metrics reads it (200); one without the role is refused (403), and so
// is the reader on a path its role does not name; no token, or one the
// API server does not know, is 401. The server speaks TLS only.
func TestReviews(t *testing.T) {
	c := kubetest.Shared(t)
	admin, ctx := c.Client(), t.Context()
	ns := c.Namespace(t)
	role := kubetest.UniqueName(t)
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(t.Context(), role, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(t.Context(), role, metav1.DeleteOptions{})
	})
	token := func(sa string) string {
		_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	reader, other := token("reader"), token("other")

	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "fencekit_up 1\n") })
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "profiles\n") })
	srv := httptest.NewUnstartedServer(authhttp.Wrap(mux, authhttp.Options{Client: admin, DenyTTL: time.Millisecond}))
	cfg, err := authhttp.TLSConfig(ctx, "", "127.0.0.1")
	require.NoError(t, err)
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 20 * time.Second}

	get := func(path, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = get("/metrics", "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, code, "a token the API server does not know")
	code, body := get("/metrics", other)
	assert.Equal(t, http.StatusForbidden, code, "a token without the role")
	assert.Contains(t, body, "system:serviceaccount:"+ns+":other may not get /metrics")
	require.Eventually(t, func() bool { code, _ = get("/metrics", reader); return code == http.StatusOK }, 10*time.Second, 50*time.Millisecond,
		"the reader, once the API server's authorizer sees its binding: %d", code)
	_, body = get("/metrics", reader)
	assert.Equal(t, "fencekit_up 1\n", body)
	code, _ = get("/debug/pprof/", reader)
	assert.Equal(t, http.StatusForbidden, code, "its role names /metrics only")

	resp, err := http.Get("http" + srv.URL[len("https"):] + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "no plain HTTP")
}

// A certificate in cert-manager's layout (tls.crt, tls.key) is served.
func TestCertDir(t *testing.T) {
	dir := t.TempDir()
	crt, key, err := cert.GenerateSelfSignedCertKey("fencekit-controller-metrics.fencekit-system.svc", nil, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	cfg, err := authhttp.TLSConfig(t.Context(), dir, "")
	require.NoError(t, err)
	got, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(got.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"fencekit-controller-metrics.fencekit-system.svc"}, leaf.DNSNames)

	_, err = authhttp.TLSConfig(t.Context(), t.TempDir(), "")
	assert.ErrorContains(t, err, "tls.crt")
}
