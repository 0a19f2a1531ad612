package fencekube_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/kube/fencekube"
)

func secretObj(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fencing",
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// SecretValue reads through its client (a manager's cache); a missing
// Secret or key is an error naming them, never a value; a rotated Secret
// is read anew.
func TestSecrets(t *testing.T) {
	ctx := t.Context()
	client := fakeObjects(t, secretObj("bmc", map[string]string{"password": "pw-one", "user": "admin"}))
	var src config.SecretSource = fencekube.NewSecrets(client, "fencing")

	v, err := src.SecretValue(ctx, config.SecretRef{Name: "bmc", Key: "password"})
	require.NoError(t, err)
	assert.Equal(t, "pw-one", v)

	for _, ref := range []config.SecretRef{{Name: "bmc", Key: "passwd"}, {Name: "nope", Key: "password"}} {
		_, err := src.SecretValue(ctx, ref)
		require.ErrorIs(t, err, config.ErrSecretNotFound, "%v", ref)
		assert.Contains(t, err.Error(), "fencing/"+ref.Name)
		assert.NotContains(t, err.Error(), "pw-one")
		assert.NotContains(t, fmt.Sprintf("%+v", err), "pw-one")
	}

	require.NoError(t, client.Update(ctx, secretObj("bmc", map[string]string{"password": "pw-two"})))
	v, err = src.SecretValue(ctx, config.SecretRef{Name: "bmc", Key: "password"})
	require.NoError(t, err)
	assert.Equal(t, "pw-two", v, "the rotated value")
}

// A ConfigSource with Secrets gives Configs whose methods read them, and
// checks the configuration against the registry: a typo leaves its node
// out, with the ConfigMap, line and key named.
func TestConfigSourceWithSecrets(t *testing.T) {
	ctx := t.Context()
	reg := fence.NewRegistry()
	var got []fence.Params
	require.NoError(t, reg.Register(fence.Driver{Name: "bmc", Open: func(_ context.Context, o fence.OpenOptions) (fence.Device, error) {
		got = append(got, o.Params)
		return stubDevice{}, nil
	}}))
	cm := func(name, key, body string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fencing"}, Data: map[string]string{key: body}}
	}
	client := fakeObjects(t,
		secretObj("bmc-n1", map[string]string{"password": "pw-one"}),
		cm("fence-method-off-n1", "method.properties", "driver=bmc\nip=10.0.0.1\npassword_secret=bmc-n1/password\naction=off"),
		cm("fence-config-n1", "config.properties", "power_management=off"),
		cm("fence-method-off-n2", "method.properties", "driver=bmc\nip=10.0.0.2\npasword=x\naction=off"),
		cm("fence-config-n2", "config.properties", "power_management=off"),
	)
	secrets := fencekube.NewSecrets(client, "fencing")
	src := fencekube.NewConfigSource(client, "fencing", fencekube.ConfigOptions{Registry: reg, Secrets: secrets})
	cfg, err := src.Config(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "configmap fence-method-off-n2, line 3, key pasword")
	assert.Contains(t, err.Error(), "did you mean password?")
	assert.Equal(t, []string{"n1"}, cfg.Nodes())
	_, err = cfg.Levels(ctx, reg, "n1", fence.StepPowerManagement, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "pw-one", got[0]["password"])
}

// stubDevice stands in for a device.
type stubDevice struct{}

func (stubDevice) Status(context.Context, string) (fence.State, error) { return fence.StateOn, nil }
func (stubDevice) Set(context.Context, string, fence.State) error      { return nil }
