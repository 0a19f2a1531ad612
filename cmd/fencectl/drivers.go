package main

// The drivers fencectl can use. Each registers itself in fence's default
// registry when imported; its parameters become options of fencectl.
import (
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
