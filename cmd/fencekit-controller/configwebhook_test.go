package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/configwebhook"
)

// The configuration webhook as deployed (deploy/config-webhook.yaml's
// ValidatingWebhookConfiguration, pointed at the program on loopback with
// its self-signed certificate, and at the test's namespace), the program
// under deploy/rbac.yaml's service account: a fence ConfigMap with a
// misspelt key is refused at kubectl's write, naming the ConfigMap and the
// key; a good one is admitted; a ConfigMap of another name is not looked
// at.
func TestIntegrationConfigWebhook(t *testing.T) {
	c, admin, ns, cfg := deployed(t)
	run := startRun(t, cfg, true, "--namespace="+ns, "--leader-elect=false", "--webhook-bind-address=127.0.0.1:0", "--log-format=text")
	require.NotNil(t, run.info.WebhookAddr)
	require.NotEmpty(t, run.info.WebhookCA)

	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range kubetest.Objects(t, filepath.Join(deployDir, "config-webhook.yaml")) {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vwc))
		}
	}
	require.Len(t, vwc.Webhooks, 1)
	vwc.Name = kubetest.UniqueName(t)
	vwc.Annotations = nil
	url := "https://" + run.info.WebhookAddr.String() + configwebhook.Path
	vwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: run.info.WebhookCA}
	vwc.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	_, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), &vwc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})

	apply := func(name, key, body string) (string, error) {
		path := filepath.Join(t.TempDir(), "cm.yaml")
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata:\n  " + key + ": |\n"
		for l := range strings.Lines(body) {
			cm += "    " + strings.TrimSuffix(l, "\n") + "\n"
		}
		require.NoError(t, os.WriteFile(path, []byte(cm), 0o600))
		out, err := c.KubectlCommand(t.Context(), t, "apply", "-f", path).CombinedOutput()
		return string(out), err
	}
	var out string
	require.Eventually(t, func() bool {
		out, err = apply("fence-method-bmc-worker-1", "method.properties", "driver=fake\naddress=fake://pdu\nplug=1\npower_timout=20")
		return err != nil
	}, 20*time.Second, 200*time.Millisecond, "the API server calls the webhook: %s", out)
	assert.Contains(t, out, `admission webhook "fence-configmaps.fencekit.io" denied the request`)
	assert.Contains(t, out, "configmap fence-method-bmc-worker-1")
	assert.Contains(t, out, "power_timout")

	out, err = apply("fence-method-bmc-worker-1", "method.properties", "driver=fake\naddress=fake://pdu\nplug=1\npower_timeout=20")
	require.NoError(t, err, out)
	out, err = apply("not-fence", "method.properties", "power_timout=20")
	require.NoError(t, err, out)
	_, err = admin.CoreV1().ConfigMaps(ns).Get(t.Context(), "fence-method-bmc-worker-1", metav1.GetOptions{})
	require.NoError(t, err)
}
