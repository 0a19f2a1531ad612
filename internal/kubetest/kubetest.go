package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
)

// Versions of the binaries the harness expects; scripts/kube-binaries.sh and
// the modules under tools/ pin the same ones.
const (
	// KubeVersion is the kube-apiserver release the harness runs.
	KubeVersion = "v1.37.1"
	// EtcdVersion is the etcd release the harness runs.
	EtcdVersion = "v3.7.3"
)

// AssetsEnv names the environment variable that points at a directory
// holding the kube-apiserver and etcd binaries.
const AssetsEnv = "FENCEKIT_KUBE_ASSETS"

// ErrNoAssets reports that the kube-apiserver or etcd binary is missing.
// [Start] and [Shared] turn it into a skip (a failure with CI=true).
var ErrNoAssets = errors.New("kubetest: kube-apiserver or etcd binary not found")

// Options configures [StartCluster]. The zero value is ready to use.
type Options struct {
	// AssetsDir holds the kube-apiserver and etcd binaries. Empty means
	// [AssetsDir].
	AssetsDir string
	// ReadyTimeout bounds the wait for etcd and then for the API server's
	// /readyz. Zero means 60 s.
	ReadyTimeout time.Duration
	// ExtraAPIServerArgs are appended to the API server's command line, for
	// example "--feature-gates=...". A single-valued flag given here
	// overrides the harness's value; a list-valued one (such as
	// --disable-admission-plugins) adds to it.
	ExtraAPIServerArgs []string
	// Users are more static-token users, each a member of system:masters,
	// for tests that tell clients apart on the server's side (in its
	// audit log, for example); [Cluster.ConfigAs] gives their
	// configuration.
	Users []string
	// EtcdServers, when not empty, are the client URLs of an etcd cluster
	// the test runs (internal/etcdtest): the API server stores there,
	// under EtcdPrefix, and no etcd of the harness's is started. Two API
	// servers given the same servers and prefix are one cluster's, as an
	// HA control plane's are.
	EtcdServers []string
	// EtcdPrefix is the API server's --etcd-prefix with EtcdServers
	// (default: a random one).
	EtcdPrefix string

	// controlPlane keeps the ServiceAccount admission plugin and adds the
	// Node authorizer, which the controller manager needs.
	controlPlane bool
}

// Cluster is a running kube-apiserver with its own etcd, listening on
// 127.0.0.1 only. Its methods are safe for concurrent use.
type Cluster struct {
	config  *rest.Config
	client  kubernetes.Interface
	dynamic dynamic.Interface

	objectsOnce sync.Once
	objects     client.WithWatch

	tokens    map[string]string // Options.Users to their tokens
	dir       string
	etcd      *process
	apiserver *process
	etcdURL   string
	ready     time.Duration

	stopOnce sync.Once
	stopErr  error
}

// Config returns a copy of the client configuration: the server's URL, its
// CA and a bearer token of a system:masters member. The copy may be changed
// freely, for example to impersonate another user.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// ConfigAs returns the client configuration of user, one of
// Options.Users, or nil when it is not one.
func (c *Cluster) ConfigAs(user string) *rest.Config {
	tok, ok := c.tokens[user]
	if !ok {
		return nil
	}
	cfg := c.Config()
	cfg.BearerToken = tok
	return cfg
}

// Client returns a typed clientset for the cluster.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dynamic returns a dynamic client for the cluster, for custom resources.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

// Objects returns a controller-runtime client for the cluster, whose
// scheme holds the core types and fencekit's API (package api/v1alpha1):
// the typed way to read and write NodeFences and remediations. Its reads
// go to the API server (no cache).
func (c *Cluster) Objects() client.WithWatch {
	c.objectsOnce.Do(func() {
		s := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(s); err != nil {
			panic(err)
		}
		if err := v1alpha1.AddToScheme(s); err != nil {
			panic(err)
		}
		cl, err := client.NewWithWatch(c.Config(), client.Options{Scheme: s})
		if err != nil {
			panic(fmt.Sprintf("kubetest: a controller-runtime client: %v", err))
		}
		c.objects = cl
	})
	return c.objects
}

// Host returns the API server's URL, https://127.0.0.1:PORT.
func (c *Cluster) Host() string { return c.config.Host }

// EtcdURL returns the client URL of the cluster's etcd, http://127.0.0.1:PORT.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// StartupTime returns how long the cluster took from the first process start
// to a ready /readyz.
func (c *Cluster) StartupTime() time.Duration { return c.ready }

// AssetsDir returns the directory where the harness looks for the binaries:
// $FENCEKIT_KUBE_ASSETS when set, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/<KubeVersion>, where
// scripts/kube-binaries.sh puts them.
func AssetsDir() string {
	if d := os.Getenv(AssetsEnv); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "fencekit", "kube", KubeVersion)
}

// findAssets returns the paths of kube-apiserver and etcd in dir, or an error
// wrapping ErrNoAssets.
func findAssets(dir string) (apiserver, etcd string, err error) {
	apiserver = filepath.Join(dir, "kube-apiserver")
	etcd = filepath.Join(dir, "etcd")
	for _, p := range []string{apiserver, etcd} {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", "", fmt.Errorf("%w: no executable %s", ErrNoAssets, p)
		}
	}
	return apiserver, etcd, nil
}

// Start starts a private cluster for t and stops it when t ends. Prefer
// [Shared] unless the test needs a cluster nobody else touches.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is [Start] with options.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := StartCluster(context.Background(), opts)
	if err != nil {
		failStart(t, err)
	}
	t.Logf("kubetest: private kube-apiserver at %s ready in %v", c.Host(), c.StartupTime().Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubetest: last lines of the kube-apiserver log:\n%s", c.apiserver.logTail(20))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("kubetest: %v", err)
		}
	})
	return c
}

// failStart ends t for a cluster that could not start: a skip when the
// binaries are missing (a failure with CI=true), a failure otherwise.
func failStart(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoAssets) {
		msg := fmt.Sprintf("%v\nbuild them once (5 to 8 minutes from a cold Go build cache) with: ./scripts/kube-binaries.sh\nor point %s at a directory holding kube-apiserver %s and etcd %s",
			err, AssetsEnv, KubeVersion, EtcdVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Fatal(err)
}

// StartCluster starts etcd and kube-apiserver on free loopback ports and
// returns once /readyz answers, or with an error (wrapping [ErrNoAssets] when
// a binary is missing). The caller must call [Cluster.Stop]. ctx bounds only
// the start; the cluster runs until stopped.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	dir := opts.AssetsDir
	if dir == "" {
		dir = AssetsDir()
	}
	apiserverBin, etcdBin, err := findAssets(dir)
	if err != nil {
		return nil, err
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	// A port picked free can be taken by another program before the child
	// binds it; start again on new ports a bounded number of times.
	const attempts = 3
	for i := 1; ; i++ {
		c, err := startOnce(ctx, opts, apiserverBin, etcdBin)
		if err == nil || !errors.Is(err, errAddrInUse) || i == attempts {
			return c, err
		}
	}
}

// startOnce makes one attempt at starting a cluster.
func startOnce(ctx context.Context, opts Options, apiserverBin, etcdBin string) (_ *Cluster, err error) {
	begin := time.Now()
	tmp, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	c := &Cluster{dir: tmp}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]

	ctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	etcdServers, prefix := opts.EtcdServers, "/kubetest-"+randomHex(8)
	if len(etcdServers) > 0 {
		c.etcdURL = etcdServers[0]
		if opts.EtcdPrefix != "" {
			prefix = opts.EtcdPrefix
		}
	} else {
		c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(etcdPort)
		etcdServers = []string{c.etcdURL}
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
		c.etcd, err = startProcess("etcd", etcdBin, filepath.Join(tmp, "etcd.log"),
			"--name=kubetest",
			"--data-dir="+filepath.Join(tmp, "etcd"),
			"--listen-client-urls="+c.etcdURL,
			"--advertise-client-urls="+c.etcdURL,
			"--listen-peer-urls="+peerURL,
			"--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=kubetest="+peerURL,
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		)
		if err != nil {
			return nil, err
		}
		if err := waitHealthy(ctx, c.etcd, http.DefaultClient, c.etcdURL+"/health", ""); err != nil {
			return nil, err
		}
	}

	token, tokens, err := writeCredentials(tmp, opts.Users)
	if err != nil {
		return nil, err
	}
	c.tokens = tokens
	certDir := filepath.Join(tmp, "certs")
	args := []string{
		"--etcd-servers=" + strings.Join(etcdServers, ","),
		"--etcd-prefix=" + prefix,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(tmp, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(tmp, "sa.key"),
		"--token-auth-file=" + filepath.Join(tmp, "tokens.csv"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	if opts.controlPlane {
		args = append(args, "--authorization-mode=Node,RBAC")
	} else {
		// Without a controller manager nobody creates service accounts,
		// and a pod naming none would be refused.
		args = append(args, "--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount")
	}
	args = append(args, opts.ExtraAPIServerArgs...)
	c.apiserver, err = startProcess("kube-apiserver", apiserverBin, filepath.Join(tmp, "kube-apiserver.log"), args...)
	if err != nil {
		return nil, err
	}

	// The API server writes its self-signed serving certificate, which is
	// also the CA the client trusts, before it serves.
	caPEM, pool, err := waitCert(ctx, c.apiserver, filepath.Join(certDir, "apiserver.crt"))
	if err != nil {
		return nil, err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer httpc.CloseIdleConnections()
	if err := waitHealthy(ctx, c.apiserver, httpc, host+"/readyz", token); err != nil {
		return nil, err
	}
	c.ready = time.Since(begin)

	c.config = &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		// Tests issue requests in bursts; the default 5 QPS only slows them.
		QPS:   1000,
		Burst: 2000,
	}
	if c.client, err = kubernetes.NewForConfig(c.Config()); err != nil {
		return nil, fmt.Errorf("kubetest: clientset: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(c.Config()); err != nil {
		return nil, fmt.Errorf("kubetest: dynamic client: %w", err)
	}
	return c, nil
}

// Stop stops kube-apiserver, then etcd (each gets 5 s after SIGTERM before
// SIGKILL to its process group) and removes the cluster's temporary
// directory. Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{c.apiserver, c.etcd} {
			if p != nil {
				errs = append(errs, p.stop(5*time.Second))
			}
		}
		if c.dir != "" {
			errs = append(errs, os.RemoveAll(c.dir))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kubetest: finding a free port: %w", err)
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeCredentials writes the service-account key pair (sa.key, sa.pub) and
// the static token file (tokens.csv: admin, then users) into dir and
// returns the admin token and the users' tokens.
func writeCredentials(dir string, users []string) (string, map[string]string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", nil, fmt.Errorf("kubetest: service-account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", nil, fmt.Errorf("kubetest: service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", nil, fmt.Errorf("kubetest: service-account key: %w", err)
	}
	for name, block := range map[string]*pem.Block{
		"sa.key": {Type: "EC PRIVATE KEY", Bytes: der},
		"sa.pub": {Type: "PUBLIC KEY", Bytes: pub},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return "", nil, fmt.Errorf("kubetest: %w", err)
		}
	}
	token := randomHex(16)
	lines := token + `,admin,admin-uid,"system:masters"` + "\n"
	tokens := make(map[string]string, len(users))
	for _, u := range users {
		if u == "" || u == "admin" || strings.ContainsAny(u, ",\"\n") {
			return "", nil, fmt.Errorf("kubetest: user %q: want a name other than admin, without ',', '\"' or a line break", u)
		}
		tokens[u] = randomHex(16)
		lines += tokens[u] + "," + u + "," + u + `-uid,"system:masters"` + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(lines), 0o600); err != nil {
		return "", nil, fmt.Errorf("kubetest: %w", err)
	}
	return token, tokens, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}

// pollInterval is how often the start-up waits look again.
const pollInterval = 50 * time.Millisecond

// waitHealthy polls url until it answers 200, p exits, or ctx ends.
func waitHealthy(ctx context.Context, p *process, client *http.Client, url, token string) error {
	var last string
	for {
		if p.exited() {
			return startError(p)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("kubetest: %w", err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: %s not ready at %s (%v; last answer: %s); last lines of %s:\n%s",
				p.name, url, ctx.Err(), last, p.logPath, p.logTail(30))
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// waitCert waits until path holds a PEM certificate, p exits, or ctx ends,
// and returns the PEM and a pool trusting it.
func waitCert(ctx context.Context, p *process, path string) ([]byte, *x509.CertPool, error) {
	for {
		if b, err := os.ReadFile(path); err == nil {
			pool := x509.NewCertPool()
			if pool.AppendCertsFromPEM(b) {
				return b, pool, nil
			}
		}
		if p.exited() {
			return nil, nil, startError(p)
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("kubetest: %s wrote no certificate to %s (%v); last lines of %s:\n%s",
				p.name, path, ctx.Err(), p.logPath, p.logTail(30))
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// startError describes a program that exited during start-up, wrapping
// errAddrInUse when it could not bind its port.
func startError(p *process) error {
	err := p.exitError()
	if strings.Contains(p.logTail(30), "address already in use") {
		return fmt.Errorf("%w: %w", errAddrInUse, err)
	}
	return err
}
