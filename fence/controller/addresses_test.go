package controller_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
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

// storageAddrs is a StorageAddresses with fixed answers.
type storageAddrs struct {
	addrs map[string][]string
	err   error
}

func (s storageAddrs) StorageAddresses(_ context.Context, node string) ([]string, string, error) {
	if s.err != nil {
		return nil, "", s.err
	}
	if a := s.addrs[node]; len(a) > 0 {
		return a, "CSIAddonsNode csi-" + node, nil
	}
	return nil, "", nil
}

// The addresses the storage sees (CSI-Addons', with Multus) are
// blocklisted instead of the InternalIP, and the job says which and who
// reported them. One that covers a ready node's address is refused, as is
// a node whose storage addresses cannot be read: nothing is switched.
func TestStorageAddresses(t *testing.T) {
	prefix := strings.ToLower(t.Name())
	plugs := []string{"10.1.0.5/32", "10.0.0.5", "10.1.0.0/24", "10.0.0.7"}
	dev := fake.NewNamed(prefix+"-bl", fake.Options{Plugs: plugs})
	t.Cleanup(func() { fake.Forget(prefix + "-bl") })
	nodes := []string{"node-1", "node-2", "node-3", "node-4"}
	var cms []config.ConfigMap
	for _, n := range nodes {
		cms = append(cms,
			config.ConfigMap{Name: "fence-method-bl-" + n, Data: map[string]string{"method.properties": "driver=fake\naddress=fake://" + prefix + "-bl\nplug=" + fence.PlugNodeAddresses + "\naction=off\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
			config.ConfigMap{Name: "fence-config-" + n, Data: map[string]string{"config.properties": "node_name=" + n + "\nisolation=bl\n"}})
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	run := func(sa controller.StorageAddresses, dead ...string) *controller.Controller {
		clk := newClock()
		h := &health{}
		c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
			Pods: &pods{}, Now: clk.Now, StorageAddresses: sa, Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute,
				Flow: flow.Options{RetryBackoff: time.Second, MaxRetries: -1}}}
		for i, n := range nodes {
			h.set(n, !slices.Contains(dead, n), clk.Now())
			h.mu.Lock()
			h.nodes[i].Addresses = []string{"10.0.0." + strconv.Itoa(i+5)}
			h.mu.Unlock()
		}
		clk.Add(2 * time.Minute)
		pass(t, c)
		return c
	}
	record := func(c *controller.Controller, n string) *flow.NodeFence {
		r, err := c.Store.Get(t.Context(), n)
		require.NoError(t, err)
		return r
	}

	c := run(storageAddrs{addrs: map[string][]string{"node-1": {"10.1.0.5/32"}}}, "node-1")
	assert.Equal(t, fence.StateOff, dev.Truth("10.1.0.5/32"), "the storage's address blocklisted")
	assert.Equal(t, fence.StateOn, dev.Truth("10.0.0.5"), "not the InternalIP")
	r := record(c, "node-1")
	require.NotEmpty(t, r.Jobs)
	assert.Equal(t, "10.1.0.5/32 (CSIAddonsNode csi-node-1)", r.Jobs[0].Target)

	// Nothing reported for node-3: its InternalIP, and the record says so.
	c = run(storageAddrs{}, "node-3")
	assert.Equal(t, fence.StateOff, dev.Truth("10.0.0.7"))
	assert.Equal(t, "10.0.0.7 (the Node's InternalIP addresses)", record(c, "node-3").Jobs[0].Target)

	// A prefix that covers node-2's InternalIP (node-2 is ready): refused.
	c = run(storageAddrs{addrs: map[string][]string{"node-1": {"10.0.0.0/24"}}}, "node-1")
	r = record(c, "node-1")
	assert.False(t, r.Isolated)
	assert.Contains(t, r.Message, "10.0.0.0/24, an address of node node-1's storage (CSIAddonsNode csi-node-1), covers 10.0.0.6, an address of node node-2, which is ready: not blocklisted")

	// Unreadable: refused, nothing switched.
	c = run(storageAddrs{err: errors.New("csiaddonsnodes is forbidden")}, "node-4")
	r = record(c, "node-4")
	assert.False(t, r.Isolated)
	assert.Contains(t, r.Message, "the addresses the storage sees of node node-4 cannot be read: csiaddonsnodes is forbidden")
	require.NotEmpty(t, r.Jobs)
	assert.False(t, r.Jobs[0].OK)
	assert.False(t, r.Jobs[0].Unknown, "not done: nothing was switched")
}
