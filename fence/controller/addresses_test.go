package controller_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
)

// A method whose plug is fence.PlugNodeAddresses (a Ceph blocklist's) gets
// the node's InternalIP addresses as its plug; a node without one gets an
// empty plug, which fences nothing.
func TestPlugNodeAddresses(t *testing.T) {
	prefix := strings.ToLower(t.Name())
	dev := fake.NewNamed(prefix+"-bl", fake.Options{Plugs: []string{"10.0.0.5,fd00::5"}})
	t.Cleanup(func() { fake.Forget(prefix + "-bl") })
	var cms []config.ConfigMap
	for _, n := range []string{"node-1", "node-2"} {
		cms = append(cms,
			config.ConfigMap{Name: "fence-method-bl-" + n, Data: map[string]string{"method.properties": "driver=fake\naddress=fake://" + prefix + "-bl\nplug=" + fence.PlugNodeAddresses + "\naction=off\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
			config.ConfigMap{Name: "fence-config-" + n, Data: map[string]string{"config.properties": "node_name=" + n + "\nisolation=bl\n"}})
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	clk := newClock()
	h := &health{}
	c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
		Pods: &pods{}, Now: clk.Now, Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute,
			Flow: flow.Options{RetryBackoff: time.Second, MaxRetries: -1}}}
	h.set("node-1", false, clk.Now())
	h.set("node-2", false, clk.Now())
	h.mu.Lock()
	h.nodes[0].Addresses = []string{"10.0.0.5", "fd00::5"}
	h.mu.Unlock()
	clk.Add(2 * time.Minute)
	pass(t, c)
	assert.Equal(t, fence.StateOff, dev.Truth("10.0.0.5,fd00::5"), "node-1's addresses blocklisted")
	r, err := c.Store.Get(t.Context(), "node-2")
	require.NoError(t, err)
	assert.False(t, r.Isolated, "no address, nothing fenced: %s", r.Message)
	assert.Contains(t, r.Message, "unknown plug")
}
