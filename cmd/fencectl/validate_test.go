package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A configuration with several problems: every one is reported in one run,
// each naming the ConfigMap, line and key; no secret value is printed.
const badConfig = `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-method-template-eaton-pdu}
  data:
    template.properties: |
      name=eaton-pdu
      agent_name=fence_eaton_snmp
      ipaddr=10.0.0.9
      login=fencer
      passwd=auth-secret-pw
      snmp-sec-level=authPriv
      snmp-priv-prot=AES
      snmp-priv-passwd=priv-secret-pw
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-method-eaton-off-node1}
  data:
    method.properties: |
      template=eaton-pdu
      plug=3
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-method-bmc-off-node1}
  data:
    method.properties: |
      agent_name=fence_ipmilan
      ip=10.0.1.1
      username=admin
      pasword=bmc-secret-pw
      lanplus=1
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-method-bmc-off-node2}
  data:
    method.properties: |
      agent_name=fence_ipmilan
      ip=10.0.1.2
      username=admin
      password_secret=bmc-node2/password
      power_timeout=forever
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-config-node1}
  data:
    config.properties: |
      power_management=eaton-off
      power_management.2=bmc-off
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: fence-config-node2}
  data:
    config.properties: |
      power_management=bmc-off
`

func TestValidateReportsEveryProblem(t *testing.T) {
	r := runCLI(t, badConfig, "validate", "-")
	assert.Equal(t, 1, r.code, r.stderr)
	for _, want := range []string{
		"configmap fence-method-template-eaton-pdu, line 6, key snmp_sec_level, node node1: parameter snmp_sec_level=\"authPriv\": an SNMPv3 setting, but snmp_version is 1 (the default): set snmp_version=3",
		"configmap fence-method-bmc-off-node1, line 4, key pasword, node node1: unknown parameter: driver ipmi takes no parameter pasword (did you mean password?)",
		"configmap fence-method-bmc-off-node2, line 5, key power_timeout",
		"fence configuration invalid: 3 problems; 0 of its nodes are fenced as configured",
	} {
		assert.Contains(t, r.stdout, want)
	}
	for _, secret := range []string{"auth-secret-pw", "priv-secret-pw", "bmc-secret-pw"} {
		assert.NotContains(t, r.stdout+r.stderr, secret)
	}
}

// The example configuration the deploy manifests ship is valid.
func TestValidateTheShippedExample(t *testing.T) {
	r := runCLI(t, "", "validate", filepath.Join("..", "..", "deploy", "example-fence-config.yaml"))
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "fence configuration valid")
}

func TestValidateUsage(t *testing.T) {
	r := runCLI(t, "", "validate")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "Usage: fencectl validate FILE...")
	missing := filepath.Join(t.TempDir(), "none.yaml")
	r = runCLI(t, "", "validate", missing)
	assert.Equal(t, 2, r.code)
	require.NoError(t, os.WriteFile(missing, []byte("kind: Pod\n"), 0o600))
	r = runCLI(t, "", "validate", missing)
	assert.Equal(t, 1, r.code)
	assert.True(t, strings.Contains(r.stdout, "no fence ConfigMap"), r.stdout)
}
