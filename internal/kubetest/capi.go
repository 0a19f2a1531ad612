package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterAPIVersion is the Cluster API release whose core manager the
// harness runs; scripts/kube-binaries.sh and internal/kubetest/tools/capi
// pin the same.
const ClusterAPIVersion = "v1.14.2"

// ClusterAPINamespace is where the harness runs Cluster API's manager's
// service account.
const ClusterAPINamespace = "capi-system"

// ClusterAPI is Cluster API's core manager (sigs.k8s.io/cluster-api/core,
// with its Machine, MachineHealthCheck and Cluster controllers) running as
// a process against a control plane, as its own service account with the
// ClusterRoles of its release: manager-role, and aggregated-manager-role,
// which gathers every ClusterRole labelled
// cluster.x-k8s.io/aggregate-to-manager (a provider's, or an external
// remediator's rules).
type ClusterAPI struct {
	proc *process
}

// StartClusterAPI installs Cluster API's CRDs and RBAC, of the release
// scripts/kube-binaries.sh put under capi/ in the assets directory, and
// starts its core manager with leader election off, in a network namespace
// of its own (its webhook server listens on every interface; its CRDs, as
// installed from their bases, convert between versions without it); it returns once the manager is ready,
// and stops it when t ends. A missing build skips t (fails it with
// CI=true).
func (cp *ControlPlane) StartClusterAPI(t testing.TB) *ClusterAPI {
	t.Helper()
	dir := filepath.Join(cp.opts.AssetsDir, "capi")
	if cp.opts.AssetsDir == "" {
		dir = filepath.Join(AssetsDir(), "capi")
	}
	bin := filepath.Join(dir, "manager")
	if v, err := os.ReadFile(filepath.Join(dir, "VERSION")); err != nil || string(v) != ClusterAPIVersion+"\n" {
		failStart(t, fmt.Errorf("%w: no Cluster API %s core manager in %s", ErrNoAssets, ClusterAPIVersion, dir))
	}
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		failStart(t, fmt.Errorf("%w: no Cluster API CRDs in %s", ErrNoAssets, dir))
	}
	for _, p := range crds {
		cp.InstallCRD(t, p)
	}
	ctx := t.Context()
	c := cp.Client()

	// Its RBAC, as its release's kustomization makes it: manager-role
	// aggregated into aggregated-manager-role, bound to its account.
	for _, f := range []string{"role.yaml", "aggregated_role.yaml"} {
		for _, o := range Objects(t, filepath.Join(dir, "rbac", f)) {
			if o.GetName() == "manager-role" {
				l := o.GetLabels()
				if l == nil {
					l = map[string]string{}
				}
				l["cluster.x-k8s.io/aggregate-to-manager"] = "true"
				o.SetLabels(l)
			}
			cp.Create(t, o)
		}
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ClusterAPINamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: %v", err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ClusterAPINamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "manager"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: %v", err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "capi-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "aggregated-manager-role"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "manager", Namespace: ClusterAPINamespace}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: %v", err)
	}
	hours := int64(2 * 3600)
	tok, err := c.CoreV1().ServiceAccounts(ClusterAPINamespace).CreateToken(ctx, "manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hours}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: a token for Cluster API's manager: %v", err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "capi-kubeconfig")
	if err := writeKubeconfig(kubeconfig, cp.config.Host, cp.config.CAData, tok.Status.Token); err != nil {
		t.Fatal(err)
	}

	// Its webhook server listens on every interface (no flag sets the
	// address), on a certificate of its own: the manager runs in a network
	// namespace whose only interface is its loopback, its connections to
	// the API server relayed, its probes reached through a Unix socket.
	work := t.TempDir()
	certs := filepath.Join(work, "certs")
	if err := writeSelfSigned(certs, "tls.crt", "tls.key"); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	u, err := url.Parse(cp.config.Host)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	healthSock := filepath.Join(work, "health.sock")
	p, relays, err := startInNetns("cluster-api", bin, filepath.Join(work, "cluster-api.log"), work,
		[]string{u.Host}, map[string]string{healthSock: "127.0.0.1:9440"},
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--webhook-cert-dir="+certs,
		"--health-addr=127.0.0.1:9440",
		"--diagnostics-address=127.0.0.1:8443", "--insecure-diagnostics",
		// Machine pools are not installed here; a MachineHealthCheck is
		// reconciled at every change, not once in 15 s.
		"--feature-gates=MachinePool=false,ReconcilerRateLimiting=false",
		"--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields",
		"--sync-period=1m",
	)
	for _, r := range relays {
		t.Cleanup(func() { _ = r.Close() })
	}
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	capi := &ClusterAPI{proc: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubetest: last lines of Cluster API's manager log:\n%s", p.logTail(40))
		}
		if err := p.stop(5 * time.Second); err != nil {
			t.Logf("kubetest: stopping Cluster API's manager: %v", err)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	probe := &http.Client{Transport: &http.Transport{DialContext: unixDialer(healthSock)}}
	defer probe.CloseIdleConnections()
	if err := waitHealthy(wctx, p, probe, "http://cluster-api/readyz", ""); err != nil {
		t.Fatal(err)
	}
	return capi
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost, and its key, as PEM files named cert and key in dir.
func writeSelfSigned(dir, cert, key string) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, cert), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, key), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// Log returns the end of the manager's log, for a failing test.
func (a *ClusterAPI) Log(lines int) string { return a.proc.logTail(lines) }
