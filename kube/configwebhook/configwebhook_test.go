package configwebhook_test

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	_ "github.com/fencekit/fencekit/drivers/fake"
	_ "github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/internal/authhttp"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/configwebhook"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// The webhook on the real API server, which calls it over TLS on loopback
// for the fence ConfigMaps of one namespace: a good configuration is
// admitted; a method with an unknown key, a node that names a method no
// ConfigMap defines, and the deletion of a template a method still uses
// are refused with the ConfigMap, key and node named, and a password
// typed where it does not belong is not repeated in the refusal; another
// ConfigMap, and a fence ConfigMap of another namespace, are not looked
// at. With the webhook down, writes are admitted (failurePolicy Ignore).
func TestWebhook(t *testing.T) {
	c := kubetest.Shared(t)
	admin, ctx := c.Client(), t.Context()
	ns := c.Namespace(t)

	tlsCfg, err := authhttp.TLSConfig(ctx, "", "127.0.0.1")
	require.NoError(t, err)
	l, err := tls.Listen("tcp", "127.0.0.1:0", tlsCfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(configwebhook.Path, &configwebhook.Handler{Reader: c.Objects(), Namespace: ns})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = srv.Close()
		}
	}
	t.Cleanup(stop)

	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsCfg.Certificates[0].Certificate[0]})
	url := "https://" + l.Addr().(*net.TCPAddr).String() + configwebhook.Path
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	name := kubetest.UniqueName(t)
	_, err = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "fence-configmaps.fencekit.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "fence-configmaps", Expression: "request.name.startsWith('fence-')"}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	cms := admin.CoreV1().ConfigMaps(ns)
	create := func(name, key, body string) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: body}}, metav1.CreateOptions{})
		return err
	}
	// The API server starts calling a new webhook a moment after its
	// creation: wait until a bad write is refused.
	require.Eventually(t, func() bool {
		err := create("fence-method-probe-worker-9", "method.properties", "driver=fake\naddress=fake://x\nbogus_key=1\n")
		if err == nil {
			_ = cms.Delete(ctx, "fence-method-probe-worker-9", metav1.DeleteOptions{})
		}
		return err != nil
	}, 20*time.Second, 100*time.Millisecond, "the webhook is called")

	// A good configuration, template first.
	require.NoError(t, create("fence-method-template-bmc", "template.properties", "driver=fake\naddress=fake://pdu\nstonith_status_sleep=0\n"))
	require.NoError(t, create("fence-method-bmc-worker-1", "method.properties", "template=bmc\nplug=1\n"))
	require.NoError(t, create("fence-config-worker-1", "config.properties", "node_name=worker-1\npower_management=bmc\n"))

	err = create("fence-method-bmc-worker-2", "method.properties", "template=bmc\nplug=2\npower_timout=20\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "admission webhook \"fence-configmaps.fencekit.io\" denied the request")
	assert.Contains(t, err.Error(), "configmap fence-method-bmc-worker-2")
	assert.Contains(t, err.Error(), "power_timout")

	err = create("fence-config-worker-3", "config.properties", "node_name=worker-3\npower_management=nosuch\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker-3")
	assert.Contains(t, err.Error(), "nosuch")

	const secret = "Sup3r-S3cret-BMC"
	err = create("fence-config-worker-4", "config.properties", "node_name=worker-4\npower_management=bmc\npassword="+secret+"\n")
	require.Error(t, err, "a password in a node's configuration")
	assert.NotContains(t, err.Error(), secret)

	err = cms.Delete(ctx, "fence-method-template-bmc", metav1.DeleteOptions{})
	require.Error(t, err, "a template a method still uses")
	assert.Contains(t, err.Error(), "deleting ConfigMap "+ns+"/fence-method-template-bmc would break the fence configuration")

	// Not a fence ConfigMap: not looked at.
	require.NoError(t, create("settings", "method.properties", "bogus_key=1\n"))

	// The webhook down: admitted (the controller reports it once back).
	stop()
	require.NoError(t, create("fence-method-bmc-worker-5", "method.properties", "template=bmc\nplug=5\npower_timout=20\n"))
}
