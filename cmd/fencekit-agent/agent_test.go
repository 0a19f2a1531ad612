package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/nodeagent"
)

// A request that goes and comes back counts from when this run first saw
// it: a controller that saw a report on it before must never find the
// report covering less than it took it to.
func TestRequestSeenOnce(t *testing.T) {
	c := fake.NewClientset()
	a, err := newAgent(&options{node: "a", sbdDevices: "/dev/null", watchdog: "sim:" + t.TempDir() + "/wd",
		watchdogTimeout: 2 * time.Second, interval: 500 * time.Millisecond}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.hw.Close(true) })
	a.client, a.o.namespace = c, "ns"
	cms := c.CoreV1().ConfigMaps("ns")
	cm, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nodeagent.RequestsConfigMap},
		Data: map[string]string{"b": "r1", "a": "own"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	a.readRequests(t.Context())
	first := a.requests["b"].at
	assert.NotContains(t, a.requests, "a", "no report on its own node")
	time.Sleep(10 * time.Millisecond)

	cm.Data = map[string]string{}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	a.readRequests(t.Context())
	assert.NotContains(t, a.requests, "b", "withdrawn")

	cm.Data = map[string]string{"b": "r1 proven 7 boot"}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	a.readRequests(t.Context())
	assert.Equal(t, first, a.requests["b"].at, "back: counted from its first sight")

	cm.Data = map[string]string{"b": "r2"}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	a.readRequests(t.Context())
	assert.True(t, a.requests["b"].at.After(first), "another request: from now")
}
