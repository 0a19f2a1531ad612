package kubetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectl reaches the shared cluster through the harness's kubeconfig:
// it sees the test's namespace and the server's version.
func TestKubectl(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ns := c.Namespace(t)

	out, err := c.KubectlCommand(t.Context(), t, "get", "namespace", ns, "-o", "name").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "namespace/"+ns+"\n", string(out))

	out, err = c.KubectlCommand(t.Context(), t, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Client Version: "+KubeVersion+"\n")
	assert.Contains(t, string(out), "Server Version: "+KubeVersion+"\n")
	assert.NotContains(t, string(out), "WARNING")

	// The discovery cache lives in the test's own HOME, not the user's.
	entries, err := os.ReadDir(filepath.Join(c.kubectlHome(t), ".kube", "cache"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}

// The kubeconfig file is private and gives a client that works.
func TestWriteKubeconfig(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	path := c.Kubeconfig(t)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	assert.Equal(t, c.Host(), cfg.Host)
	assert.Equal(t, c.Config().BearerToken, cfg.BearerToken)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, KubeVersion, v.GitVersion)

	err = c.WriteKubeconfig(filepath.Join(t.TempDir(), "missing", "kubeconfig"))
	assert.ErrorContains(t, err, "kubetest: ")
}

func TestFindKubectl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := FindKubectl(dir)
	require.ErrorIs(t, err, ErrNoKubectl)
	assert.Contains(t, err.Error(), filepath.Join(dir, "kubectl"))

	// Another release is not taken for ours.
	other := t.TempDir()
	script := "#!/bin/sh\necho 'Client Version: " + KubeVersion + "0'\n"
	require.NoError(t, os.WriteFile(filepath.Join(other, "kubectl"), []byte(script), 0o755))
	_, err = FindKubectl(other)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoKubectl)
	assert.Contains(t, err.Error(), "is not kubectl "+KubeVersion)

	ours := t.TempDir()
	script = "#!/bin/sh\necho 'Client Version: " + KubeVersion + "'\necho 'Kustomize Version: v5'\n"
	require.NoError(t, os.WriteFile(filepath.Join(ours, "kubectl"), []byte(script), 0o755))
	got, err := FindKubectl(ours)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(ours, "kubectl"), got)
}

// The environment of kubectl holds nothing of the caller's but PATH.
func TestKubectlEnv(t *testing.T) {
	t.Setenv("KUBECONFIG", "/elsewhere")
	env := kubectlEnv("/home/x", "/home/x/kubeconfig")
	assert.Contains(t, env, "HOME=/home/x")
	assert.Contains(t, env, "KUBECONFIG=/home/x/kubeconfig")
	assert.Contains(t, env, "KUBERC=off")
	for _, e := range env {
		assert.NotContains(t, e, "/elsewhere")
		k, _, _ := strings.Cut(e, "=")
		assert.Contains(t, []string{"HOME", "KUBECONFIG", "KUBERC", "PATH"}, k)
	}
}
