package config_test

import (
	"context"
	"fmt"
	"strings"

	_ "github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// exampleConfig is a node, host0, that is isolated at its FC switch port,
// powered off and on at its PDU outlet, and, should the PDU fail, powered
// off through its BMC (a fallback level, power_management.2).
const exampleConfig = `
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-template-fc-switch-brocade
  data:
   template.properties: |-
          name=fc_switch_brocade
          agent_name=fence_brocade
          ipaddr=192.168.1.2
          password=brocade_password
          username=brocade_admin
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-template-eaton-pdu
  data:
   template.properties: |-
          agent_name=fence_eaton_snmp
          ipaddr=192.168.1.4
          snmp-priv-passwd=eaton_snmp_passwd
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-fc-off-host0
  data:
   method.properties: |-
        template=fc-switch-brocade
        plug=2
        action=off
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-fc-on-host0
  data:
   method.properties: |-
        template=fc-switch-brocade
        plug=2
        action=on
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-eaton-off-host0
  data:
   method.properties: |-
        template=fence-method-template-eaton-pdu
        plug=1
        action=off
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-eaton-on-host0
  data:
   method.properties: |-
        template=fence-method-template-eaton-pdu
        plug=1
        action=on
        must_succeed=no
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-method-bmc-off-host0
  data:
   method.properties: |-
        address=ipmi://10.0.1.10
        username=admin
        password=bmc_password
        action=off
- kind: ConfigMap
  apiVersion: v1
  metadata:
   name: fence-config-host0
  data:
   config.properties: |-
    node_name=host0
    isolation=fc-off
    power_management=eaton-off eaton-on
    power_management.2=bmc-off
    recovery=fc-on
`

// stubDevice stands in for a real device.
type stubDevice struct{}

func (stubDevice) Status(context.Context, string) (fence.State, error) { return fence.StateOn, nil }
func (stubDevice) Set(context.Context, string, fence.State) error      { return nil }

func ExampleConfig_Levels() {
	reg := fence.NewRegistry()
	for _, d := range []fence.Driver{
		// Stand-ins that take any parameter (the real drivers declare theirs).
		{Name: "brocade", Agents: []string{"fence_brocade"}, OpenParams: true},
		{Name: "eaton", Agents: []string{"fence_eaton_snmp"}, OpenParams: true},
		{Name: "ipmi", Agents: []string{"fence_ipmilan"}, OpenParams: true},
	} {
		d.Open = func(context.Context, fence.OpenOptions) (fence.Device, error) { return stubDevice{}, nil }
		if err := reg.Register(d); err != nil {
			panic(err)
		}
	}

	cfg, err := config.Load(strings.NewReader(exampleConfig))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cfg.Validate(reg); err != nil {
		fmt.Println(err)
		return
	}
	for _, step := range fence.Steps() {
		levels, err := cfg.Levels(context.Background(), reg, "host0", step, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i, l := range levels {
			fmt.Printf("%s level %d:", step, i+1)
			for _, m := range l.Methods {
				fmt.Printf(" %s (%s plug %q %s", m.Name, m.Driver, m.Plug, m.Action)
				if m.BestEffort {
					fmt.Print(", best effort")
				}
				fmt.Print(")")
			}
			fmt.Println()
		}
	}
	// Output:
	// isolation level 1: fc-off (brocade plug "2" off)
	// power_management level 1: eaton-off (eaton plug "1" off) eaton-on (eaton plug "1" on, best effort)
	// power_management level 2: bmc-off (ipmi plug "" off)
	// recovery level 1: fc-on (brocade plug "2" on)
}

// The configuration as the fence.Fencer a host controller holds: the
// node's power_management levels, opened for each call and closed after.
// The in-memory driver stands in for a PDU here (fake://, its outlets kept
// by name for the life of the process).
func ExampleConfig_Fencer() {
	cfg, err := config.Load(strings.NewReader(`
- kind: ConfigMap
  apiVersion: v1
  metadata: {name: fence-method-pdu-host1}
  data:
    method.properties: |
      address=fake://example-rack
      plug=4
- kind: ConfigMap
  apiVersion: v1
  metadata: {name: fence-config-host1}
  data:
    config.properties: |
      power_management=pdu
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	f := cfg.Fencer(nil, fence.StepPowerManagement, nil)
	ctx := context.Background()
	res, err := f.Fence(ctx, "host1", fence.ActionOff)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := f.Status(ctx, "host1")
	fmt.Println("fenced:", res.Fenced, "status:", st)
	_, err = f.Fence(ctx, "host2", fence.ActionOff)
	fmt.Println(err)
	// Output:
	// fenced: true status: off
	// fence config: configmap fence-config-host2, node host2: node has no fence configuration
}
