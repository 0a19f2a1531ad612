package kubetest

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ReaderToken returns the token of a new service account of namespace ns
// bound to the ClusterRoles of the manifest at path named in roles
// (created under unique names, deleted when tb ends), as a Prometheus that
// scrapes fencekit's programs has. No role: a token the API server accepts
// whose user may read nothing.
func (c *Cluster) ReaderToken(tb testing.TB, ns, path string, roles ...string) string {
	tb.Helper()
	ctx := tb.Context()
	sa := "scraper-" + UniqueName(tb)
	fail := func(err error) {
		if err != nil {
			tb.Fatalf("kubetest: %v", err)
		}
	}
	_, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	fail(err)
	for _, name := range roles {
		var cr rbacv1.ClusterRole
		for _, o := range Objects(tb, path) {
			if o.GetKind() == "ClusterRole" && o.GetName() == name {
				fail(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr))
			}
		}
		if cr.Name == "" {
			tb.Fatalf("kubetest: no ClusterRole %s in %s", name, path)
		}
		cr.Name = sa + "-" + name
		_, err := c.client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{})
		fail(err)
		_, err = c.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
		fail(err)
		tb.Cleanup(func() {
			ctx := context.WithoutCancel(ctx)
			_ = c.client.RbacV1().ClusterRoleBindings().Delete(ctx, cr.Name, metav1.DeleteOptions{})
			_ = c.client.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{})
		})
	}
	tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	fail(err)
	return tr.Status.Token
}

// ScrapeTLS GETs path of a program's secure metrics server at addr with
// token ("" for none), trusting any certificate (the programs make a
// self-signed one), and returns the status and the body.
func ScrapeTLS(tb testing.TB, addr, path, token string) (int, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server's certificate is self-signed
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatalf("kubetest: scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("kubetest: scraping %s: %v", addr, err)
	}
	return resp.StatusCode, string(b)
}
