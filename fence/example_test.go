package fence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// A verified off: the result is only a success once the device has
// confirmed the plug off.
func ExampleDo() {
	pdu := fake.New(fake.Options{Plugs: []string{"1", "2"}})
	m := &fence.Method{Name: "pdu-off", Node: "node-2", Driver: "fake", Device: pdu, Plug: "2"}

	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	if err != nil {
		fmt.Println("not fenced:", err)
		return
	}
	fmt.Println("fenced:", res.Fenced(), "state:", res.State, "attempts:", len(res.Attempts))
	// Output: fenced: true state: off attempts: 1
}

// A device that accepts the off but never reports it: the action fails with
// an unknown outcome after the power timeout, and the node is not fenced.
func ExampleDo_unconfirmed() {
	pdu := fake.New(fake.Options{})
	pdu.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Lie, State: fence.StateOn})
	m := &fence.Method{Name: "pdu-off", Node: "node-2", Driver: "fake", Device: pdu, Plug: "1",
		Options: fence.Options{PowerTimeout: 30 * time.Millisecond, PollInterval: 10 * time.Millisecond}}

	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("fenced:", res.Fenced())
	fmt.Println("timeout:", errors.Is(err, fence.ErrTimeout), "outcome unknown:", fence.IsOutcomeUnknown(err))
	// Output:
	// fenced: false
	// timeout: true outcome unknown: true
}

// Levels: the BMC is down, so the second level (the PDU) fences the node.
func ExampleDoLevels() {
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	bmc.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
	pdu := fake.New(fake.Options{})
	levels := []fence.Level{
		{Methods: []*fence.Method{{Name: "ipmi", Node: "node-2", Device: bmc}}},
		{Methods: []*fence.Method{{Name: "pdu-off", Node: "node-2", Device: pdu, Plug: "1"}}},
	}
	res, err := fence.DoLevels(context.Background(), "node-2", levels, fence.ActionOff)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fenced by level", res.Level+1, "; level 1 failed:", errors.Is(res.Levels[0].Err, fence.ErrUnreachable))
	// Output: fenced by level 2 ; level 1 failed: true
}

// An observer sees every attempt, for metrics or traces.
func ExampleObserverFunc() {
	obs := fence.ObserverFunc(func(e fence.Event) {
		fmt.Printf("%s %s %s attempt=%d outcome=%s state=%s\n", e.Node, e.Method, e.Phase, e.Attempt, e.Outcome, e.State)
	})
	pdu := fake.New(fake.Options{})
	m := &fence.Method{Name: "pdu", Node: "node-2", Device: pdu, Plug: "1", Options: fence.Options{Observer: obs}}
	if _, err := fence.Do(context.Background(), m, fence.ActionReboot); err != nil {
		fmt.Println(err)
	}
	// Output:
	// node-2 pdu off attempt=1 outcome=confirmed state=off
	// node-2 pdu on attempt=1 outcome=confirmed state=on
}

func ExampleParseAddress() {
	a, err := fence.ParseAddress("Redfish+HTTPS://[fd00::5]/redfish/v1/Systems/1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Driver, a.Transport, a.HostPort(443), a.Path)
	// Output: redfish https [fd00::5]:443 /redfish/v1/Systems/1
}

// Open by URL, as database/sql and gocloud open: the scheme picks the
// driver, credentials and the plug go in the parameters, never in the URL,
// and the Method owns its device until Close.
func ExampleOpen() {
	ctx := context.Background()
	m, err := fence.Open(ctx, "fake://example-pdu", &fence.MethodOptions{
		Node: "node-2", Name: "pdu", Params: fence.NewParams("plug", "3", "power_timeout", "5"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("driver:", m.Driver, "fenced:", err == nil && res.Fenced())

	_, err = fence.Open(ctx, "ipmi://admin:secret@10.0.0.5", nil)
	fmt.Println("URL with credentials refused:", fence.IsNotDone(err), !strings.Contains(err.Error(), "secret"))
	// Output:
	// driver: fake fenced: true
	// URL with credentials refused: true true
}
