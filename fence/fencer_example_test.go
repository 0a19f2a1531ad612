package fence_test

import (
	"context"
	"fmt"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// A host controller holds a fence.Fencer: here one over two levels of
// in-memory devices, the BMC down, so the node's PDU fences it. In a
// cluster the Fencer comes from the configuration (fence/config's
// Config.Fencer), and in the controller's own tests from a fake.
func ExampleFencer() {
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	bmc.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
	pdu := fake.New(fake.Options{})
	var f fence.Fencer = fence.NewFencer(func(ctx context.Context, node string) ([]fence.Level, error) {
		return []fence.Level{
			{Methods: []*fence.Method{{Name: "ipmi", Node: node, Device: bmc}}},
			{Methods: []*fence.Method{{Name: "pdu", Node: node, Device: pdu, Plug: "1"}}},
		}, nil
	})
	ctx := context.Background()

	res, err := f.Fence(ctx, "node-2", fence.ActionOff)
	fmt.Println("fenced:", err == nil && res.Fenced, "by level", res.Level+1)
	st, err := f.Status(ctx, "node-2")
	fmt.Println("status:", st, err)
	if _, err := f.Unfence(ctx, "node-2"); err == nil {
		st, _ = f.Status(ctx, "node-2")
		fmt.Println("after unfence:", st)
	}
	// Output:
	// fenced: true by level 2
	// status: off <nil>
	// after unfence: on
}
