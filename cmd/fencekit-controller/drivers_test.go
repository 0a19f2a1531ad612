package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// The program's registry holds every driver registered at init, and bmh,
// networkfence and nodeagent;
// a fence configuration naming bmh is valid for it.
func TestDriverRegistry(t *testing.T) {
	reg, err := driverRegistry(crfake.NewClientBuilder().Build())
	require.NoError(t, err)
	for _, name := range []string{"ipmi", "redfish", "sbd", "cephblock", "fence_ipmilan", "bmh", "networkfence", "nodeagent"} {
		_, ok := reg.Lookup(name)
		assert.True(t, ok, name)
	}
	assert.Len(t, reg.Drivers(), len(fence.DefaultRegistry().Drivers())+3)
	cms := []config.ConfigMap{{Name: "fence-method-template-metal3", Data: map[string]string{"template.properties": "address=bmh://metal3\n"}},
		{Name: "fence-method-host-0-worker-1", Data: map[string]string{"method.properties": "template=metal3\nplug=host-0\n"}},
		{Name: "fence-config-worker-1", Data: map[string]string{"config.properties": "power-management=host-0\n"}}}
	assert.NoError(t, config.ValidateConfigMaps(cms, reg))
	assert.Error(t, config.ValidateConfigMaps(cms, nil), "the default registry has no bmh")
}
