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
)

// The controller gives each method the node's system UUID (from its
// health): level 1's BMC address names another machine (a swapped cable),
// so its off is refused, not done, with an event naming both identities,
// and nothing of that machine is switched; level 2, the node's own BMC,
// fences it.
func TestControllerRefusesTheWrongMachine(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	const otherUUID = "6d1c7f0e-5a3b-4c2e-9f11-00000000beef"
	prefix := strings.ToLower(t.Name())
	swapped := fake.NewNamed(prefix+"-swapped", fake.Options{Plugs: []string{""}, SystemUUID: otherUUID})
	own := fake.NewNamed(prefix+"-own", fake.Options{Plugs: []string{""}, SystemUUID: nodeUUID})
	t.Cleanup(func() { fake.Forget(prefix + "-swapped"); fake.Forget(prefix + "-own") })
	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-bmc-node-1", Data: map[string]string{"method.properties": "address=fake://" + prefix + "-swapped\nstonith_status_sleep=0\n"}},
		{Name: "fence-method-bmc2-node-1", Data: map[string]string{"method.properties": "address=fake://" + prefix + "-own\nstonith_status_sleep=0\n"}},
		{Name: "fence-config-node-1", Data: map[string]string{"config.properties": "power_management=bmc\npower_management.2=bmc2\n"}},
	})
	require.NoError(t, err)
	clk := newClock()
	h := &health{nodes: []controller.NodeHealth{{Name: "node-1", Since: clk.Now().Add(-time.Hour), SystemUUID: nodeUUID}}}
	ev := &events{}
	c := &controller.Controller{Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
		Pods: &pods{}, Events: ev, Now: clk.Now,
		Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute}}
	for range 10 {
		pass(t, c)
	}
	clk.Add(fence.DefaultMinOff) // the reboot's off held
	for range 3 {
		pass(t, c)
	}
	assert.Equal(t, fence.StateOn, swapped.Truth(""), "the machine behind the swapped address was switched")
	assert.Zero(t, swapped.Calls(fake.OpSet))
	assert.Equal(t, fence.StateOn, own.Truth(""), "switched on again after the fence")
	assert.Positive(t, own.Calls(fake.OpSet), "the node's own BMC fenced it")
	assert.True(t, ev.has(otherUUID) && ev.has(nodeUUID), "an event names both identities: %v", ev.reasons())
}

// A Node deleted while its fencing goes on: the controller keeps the system
// UUID it last saw for the node's record, and the swapped address is still
// refused.
func TestControllerKeepsTheIdentityOfADeletedNode(t *testing.T) {
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	const otherUUID = "6d1c7f0e-5a3b-4c2e-9f11-00000000beef"
	prefix := strings.ToLower(t.Name())
	swapped := fake.NewNamed(prefix+"-swapped", fake.Options{Plugs: []string{""}, SystemUUID: otherUUID})
	t.Cleanup(func() { fake.Forget(prefix + "-swapped") })
	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-bmc-node-1", Data: map[string]string{"method.properties": "address=fake://" + prefix + "-swapped\nstonith_status_sleep=0\n"}},
		{Name: "fence-config-node-1", Data: map[string]string{"config.properties": "power_management=bmc\n"}},
	})
	require.NoError(t, err)
	clk := newClock()
	h := &health{nodes: []controller.NodeHealth{{Name: "node-1", Since: clk.Now().Add(-time.Hour), SystemUUID: nodeUUID}}}
	ev := &events{}
	store := controller.NewMemoryStore()
	c := &controller.Controller{Health: h, Store: store, Config: controller.StaticConfig{C: cfg},
		Pods: &pods{}, Events: ev, Now: clk.Now,
		Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute}}
	pass(t, c) // the record exists, the UUID is known
	h.mu.Lock()
	h.nodes = nil // the Node is deleted
	h.mu.Unlock()
	for range 10 {
		clk.Add(time.Minute)
		pass(t, c)
	}
	assert.Zero(t, swapped.Calls(fake.OpSet), "the machine behind the swapped address was switched")
	assert.Equal(t, fence.StateOn, swapped.Truth(""))
}
