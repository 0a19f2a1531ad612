package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoKubectl reports that the kubectl binary is missing. [Kubectl] turns
// it into a skip (a failure with CI=true).
var ErrNoKubectl = errors.New("kubetest: kubectl binary not found")

// kubectlVersionTimeout bounds `kubectl version --client`.
const kubectlVersionTimeout = 20 * time.Second

// kubectlChecked remembers the outcome of FindKubectl per directory: the
// version check runs a process, once per test binary is enough.
var kubectlChecked sync.Map // dir -> kubectlResult

type kubectlResult struct {
	path string
	err  error
}

// FindKubectl returns the path of kubectl in dir after checking that it is
// release [KubeVersion] (`kubectl version --client` prints "Client Version:
// <KubeVersion>"). A missing binary is an error wrapping [ErrNoKubectl];
// one of another version, or that does not run, is another error.
func FindKubectl(dir string) (string, error) {
	if r, ok := kubectlChecked.Load(dir); ok {
		r := r.(kubectlResult)
		return r.path, r.err
	}
	path, err := findKubectl(dir)
	kubectlChecked.Store(dir, kubectlResult{path: path, err: err})
	return path, err
}

func findKubectl(dir string) (string, error) {
	path := filepath.Join(dir, "kubectl")
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: no executable %s", ErrNoKubectl, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version", "--client")
	cmd.Env = kubectlEnv(os.TempDir(), "")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubetest: %s version --client: %w", path, err)
	}
	want := "Client Version: " + KubeVersion
	for line := range strings.Lines(string(out)) {
		if strings.TrimSpace(line) == want {
			return path, nil
		}
	}
	return "", fmt.Errorf("kubetest: %s is not kubectl %s (it says %q); rebuild it with ./scripts/kube-binaries.sh",
		path, KubeVersion, strings.TrimSpace(string(out)))
}

// Kubectl returns the path of the kubectl binary (release [KubeVersion])
// that scripts/kube-binaries.sh builds beside kube-apiserver, in
// [AssetsDir]. When it is missing the test is skipped, with the command that
// builds it; with CI=true it fails instead. A kubectl of another release
// fails the test.
func Kubectl(t testing.TB) string {
	t.Helper()
	path, err := FindKubectl(AssetsDir())
	if err == nil {
		return path
	}
	if errors.Is(err, ErrNoKubectl) {
		msg := fmt.Sprintf("%v\nbuild it once (about 30 s more than kube-apiserver, seconds once built) with: ./scripts/kube-binaries.sh\nor point %s at a directory holding kubectl %s",
			err, AssetsEnv, KubeVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Fatal(err)
	return ""
}

// kubeconfigName is the context, cluster and user name in the kubeconfig
// files the harness writes.
const kubeconfigName = "kubetest"

// WriteKubeconfig writes a kubeconfig file at path (mode 0600: it holds the
// bearer token) through which kubectl reaches the cluster as the harness's
// client does: the server's URL, its CA and the system:masters token.
func (c *Cluster) WriteKubeconfig(path string) error {
	return writeKubeconfig(path, c.config.Host, c.config.CAData, c.config.BearerToken)
}

// WriteKubeconfigAs writes a kubeconfig file as [Cluster.WriteKubeconfig]
// does, for user, one of Options.Users.
func (c *Cluster) WriteKubeconfigAs(path, user string) error {
	cfg := c.ConfigAs(user)
	if cfg == nil {
		return fmt.Errorf("kubetest: no user %q (Options.Users)", user)
	}
	return writeKubeconfig(path, cfg.Host, cfg.CAData, cfg.BearerToken)
}

func writeKubeconfig(path, host string, ca []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{
		Server:                   host,
		CertificateAuthorityData: ca,
	}
	cfg.AuthInfos[kubeconfigName] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName}
	cfg.CurrentContext = kubeconfigName
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubetest: kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// Kubeconfig writes a kubeconfig file for the cluster (see
// [Cluster.WriteKubeconfig]) into a temporary directory of t's and
// returns its path.
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// KubectlCommand returns a command that runs kubectl ([Kubectl]) with args
// against the cluster, through a kubeconfig written by [Cluster.Kubeconfig].
// The command sees neither the user's kubeconfig nor preferences: its
// environment holds only PATH, HOME (a temporary directory of t's, where
// kubectl keeps its discovery cache) and KUBECONFIG, and kuberc is off.
// Commands made for the same t share that directory, so only the first
// one pays for discovery. ctx ends the process (SIGKILL).
func (c *Cluster) KubectlCommand(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	bin := Kubectl(t)
	home := c.kubectlHome(t)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = kubectlEnv(home, filepath.Join(home, "kubeconfig"))
	return cmd
}

// kubectlHomes holds the HOME directory of each test's kubectl commands.
var kubectlHomes sync.Map // testing.TB -> string

// kubectlHome returns t's kubectl HOME, creating it with a kubeconfig on
// first use.
func (c *Cluster) kubectlHome(t testing.TB) string {
	t.Helper()
	if h, ok := kubectlHomes.Load(t); ok {
		return h.(string)
	}
	home := t.TempDir()
	if err := c.WriteKubeconfig(filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	if h, loaded := kubectlHomes.LoadOrStore(t, home); loaded {
		return h.(string)
	}
	t.Cleanup(func() { kubectlHomes.Delete(t) })
	return home
}

// kubectlEnv is the environment of a kubectl process: no variable of the
// caller's but PATH, so that no user setting changes what it does.
func kubectlEnv(home, kubeconfig string) []string {
	env := []string{"HOME=" + home, "KUBERC=off"}
	if kubeconfig != "" {
		env = append(env, "KUBECONFIG="+kubeconfig)
	}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return env
}
