package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// A fake PDU whose first off request is refused: the engine retries, and
// the node ends fenced.
func Example() {
	pdu := fake.New(fake.Options{Plugs: []string{"1", "2"}})
	pdu.Inject(fake.Fault{Op: fake.OpSet, Plugs: []string{"2"}, Kind: fake.Fail, Times: 1})

	m := &fence.Method{
		Name: "pdu-off", Node: "worker-2", Driver: "fake", Device: pdu, Plug: "2",
		Options: fence.Options{RetryOff: 1, PollInterval: 10 * time.Millisecond},
	}
	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "attempts:", len(res.Attempts))
	fmt.Println("truth:", pdu.Truth("2"), "sets:", pdu.Calls(fake.OpSet))
	// Output:
	// error: <nil>
	// fenced: true attempts: 2
	// truth: off sets: 2
}

// A device that lies: it reports on whatever the truth, so the off is never
// confirmed and the engine reports the outcome as unknown.
func ExampleDevice_Inject() {
	d := fake.New(fake.Options{})
	remove := d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Lie, State: fence.StateOn})
	defer remove()

	m := &fence.Method{Device: d, Plug: "1", Options: fence.Options{
		PowerTimeout: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	}}
	_, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("outcome unknown:", errors.Is(err, fence.ErrOutcomeUnknown))
	fmt.Println("truth:", d.Truth("1"))
	// Output:
	// outcome unknown: true
	// truth: off
}

// A shared device opened by address through the registry, as a
// configuration would name it, and reached by tests with Named.
func ExampleNamed() {
	defer fake.Forget("rack1")
	p := fence.NewParams("address", "fake://rack1", "plugs", "4", "plug", "3")
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-3", Name: "pdu", Params: p})
	if err != nil {
		fmt.Println(err)
		return
	}
	fake.Named("rack1").Inject(fake.Fault{Kind: fake.Down})
	_, err = fence.Do(context.Background(), m, fence.ActionStatus)
	fmt.Println("unreachable:", errors.Is(err, fence.ErrUnreachable))
	fmt.Println("plugs:", fake.Named("rack1").Plugs())
	// Output:
	// unreachable: true
	// plugs: [1 2 3 4]
}
