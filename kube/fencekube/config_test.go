package fencekube_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// configMaps returns the node-fencing design's ConfigMaps of one node, in
// namespace ns.
func configMaps(ns, node, address string) []*corev1.ConfigMap {
	cm := func(name, key, body string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{key: body}}
	}
	return []*corev1.ConfigMap{
		cm("fence-method-template-pdu", "template.properties",
			"name=pdu\ndriver=fake\naddress="+address+"\npassword=pdu-secret\nstonith_status_sleep=0\npower_timeout=1\n"),
		cm("fence-method-pdu-off-"+node, "method.properties", "template=fence-method-template-pdu\nplug=1\naction=off\n"),
		cm("fence-method-pdu-on-"+node, "method.properties", "template=fence-method-template-pdu\nplug=1\naction=on\n"),
		cm("fence-config-"+node, "config.properties", "node_name="+node+"\npower_management=pdu-off\nrecovery=pdu-on\n"),
	}
}

func objects[T client.Object](in []T) []client.Object {
	out := make([]client.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// runtimeObjects gives objs to a fake clientset.
func runtimeObjects(objs []client.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

func TestConfigSourceList(t *testing.T) {
	ctx := t.Context()
	objs := objects(configMaps("fence", "worker-1", "fake://cfg-list"))
	objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "fence", Name: "unrelated"}, Data: map[string]string{"x": "y"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "fence-config-worker-9"}, Data: map[string]string{"config.properties": "bad"}})
	client := newFakeAPI(t, objs...)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	src := fencekube.NewConfigSource(client, "fence", fencekube.ConfigOptions{TTL: 5 * time.Second, Now: clock})

	cfg, err := src.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1"}, cfg.Nodes(), "only the namespace's fence ConfigMaps")
	nc, ok := cfg.Node("worker-1")
	require.True(t, ok)
	assert.Equal(t, [][]string{{"pdu-off"}}, nc.Steps[fence.StepPowerManagement])

	again, err := src.Config(ctx)
	require.NoError(t, err)
	assert.Same(t, cfg, again, "kept for the TTL")
	assert.Equal(t, 1, client.count("list"))

	mu.Lock()
	now = now.Add(5 * time.Second)
	mu.Unlock()
	_, err = src.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, client.count("list"), "listed again after the TTL")
}

func TestConfigSourceParseError(t *testing.T) {
	cms := configMaps("fence", "worker-1", "fake://cfg-bad")
	cms[3].Data["config.properties"] = "node_name=worker-2\npower_management=pdu-off\n"
	src := fencekube.NewConfigSource(newFakeAPI(t, objects(cms)...), "fence", fencekube.ConfigOptions{})
	cfg, err := src.Config(t.Context())
	require.NotNil(t, cfg, "a partial configuration beside the error")
	assert.Empty(t, cfg.Nodes(), "the broken node is left out")
	assert.ErrorIs(t, err, config.ErrNodeMismatch, "the parse error as it is")
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "fence-config-worker-1", ce.ConfigMap)
	assert.Error(t, config.ErrorsFor(err, "worker-1"))
}

func TestConfigSourceListError(t *testing.T) {
	client := newFakeAPI(t)
	client.fail["list"] = apierrors.NewForbidden(corev1.Resource("configmaps"), "", errors.New("no"))
	_, err := fencekube.NewConfigSource(client, "fence", fencekube.ConfigOptions{}).Config(t.Context())
	var e *fencekube.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, fencekube.OpConfig, e.Op)
	assert.Equal(t, "fence/fence-*", e.Name)
	assert.True(t, apierrors.IsForbidden(err))
}

func TestConfigSourceInformer(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(runtimeObjects(objects(configMaps("fence", "worker-1", "fake://cfg-inf")))...)
	api := newFakeAPI(t)
	src := fencekube.NewConfigSource(api, "fence", fencekube.ConfigOptions{})
	runConfigMaps(t, client, "fence", src)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, src.WaitForSync(wctx))

	cfg, err := src.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1"}, cfg.Nodes())
	again, err := src.Config(ctx)
	require.NoError(t, err)
	assert.Same(t, cfg, again, "not parsed again while nothing changed")
	assert.Zero(t, api.count("list"), "read from the informer")

	// An unrelated ConfigMap does not make it parse again.
	_, err = client.CoreV1().ConfigMaps("fence").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A new node's ConfigMaps do.
	for _, cm := range configMaps("fence", "worker-2", "fake://cfg-inf")[1:] {
		_, err := client.CoreV1().ConfigMaps("fence").Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		cfg, err := src.Config(ctx)
		return err == nil && len(cfg.Nodes()) == 2
	}, 10*time.Second, 10*time.Millisecond)

	// A broken one gives the parse error, until it is fixed.
	bad := configMaps("fence", "worker-2", "")[3]
	bad.Data["config.properties"] = "node_name=worker-2\nisolation=nope\n"
	_, err = client.CoreV1().ConfigMaps("fence").Update(ctx, bad, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := src.Config(ctx)
		return errors.Is(err, fence.ErrConfig)
	}, 10*time.Second, 10*time.Millisecond)
}
