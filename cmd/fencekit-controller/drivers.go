package main

// The drivers the fence ConfigMaps can name. Each registers itself in
// fence's default registry when imported, but bmh, networkfence and
// nodeagent, which need the program's clients of the cluster
// (driverRegistry).
import (
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/agentfence"
	"github.com/fencekit/fencekit/kube/bmhfence"
	"github.com/fencekit/fencekit/kube/networkfence"
	"github.com/fencekit/fencekit/kube/rebootkube"

	_ "github.com/fencekit/fencekit/drivers/agent"
	_ "github.com/fencekit/fencekit/drivers/apc"
	_ "github.com/fencekit/fencekit/drivers/brocade"
	_ "github.com/fencekit/fencekit/drivers/cephblock"
	_ "github.com/fencekit/fencekit/drivers/eaton"
	_ "github.com/fencekit/fencekit/drivers/fake"
	_ "github.com/fencekit/fencekit/drivers/ipmi"
	_ "github.com/fencekit/fencekit/drivers/redfish"
	_ "github.com/fencekit/fencekit/drivers/sbd"
)

// driverRegistry returns the drivers of fence's default registry, and bmh,
// networkfence and nodeagent over api, a controller-runtime client that
// reads the API server.
func driverRegistry(api crclient.Client) (*fence.Registry, error) {
	reg := fence.NewRegistry()
	for _, d := range fence.DefaultRegistry().Drivers() {
		if err := reg.Register(*d); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(bmhfence.Driver(rebootkube.NewMetal3(api))); err != nil {
		return nil, err
	}
	if err := reg.Register(networkfence.Driver(api)); err != nil {
		return nil, err
	}
	if err := reg.Register(agentfence.Driver(api)); err != nil {
		return nil, err
	}
	return reg, nil
}
