package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// A verified off of a BMC's system, against the project's Redfish
// responder: the engine reads the state, sends ForceOff, and polls until
// the system, which reports PoweringOff for a while, is Off.
func Example() {
	bmc := redfishsim.New(redfishsim.Options{PowerDelay: 30 * time.Millisecond})
	defer bmc.Close()

	dev, err := redfish.New(redfish.Options{
		Endpoint: bmc.URL(), // https://127.0.0.1:PORT
		Username: "admin", Password: fence.NewSecret("password"),
		RootCAs: bmc.CertPool(), // TLS is verified
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "bmc", Node: "worker-1", Driver: "redfish", Device: dev,
		Options: fence.Options{PollInterval: 10 * time.Millisecond}}
	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "polls > 1:", res.Attempts[0].Polls > 1)
	fmt.Println("resets:", bmc.Resets(), "power:", bmc.PowerState("1"))

	// A reset type the system does not offer is never sent.
	err = dev.Reset(context.Background(), "", "Suspend")
	fmt.Println("not offered:", errors.Is(err, redfish.ErrResetTypeNotOffered), fence.IsNotDone(err))
	// Output:
	// error: <nil>
	// fenced: true polls > 1: true
	// resets: [{1 ForceOff}] power: Off
	// not offered: true true
}

// The driver opened through the registry with the agent's parameters, as
// a fence configuration or fencectl gives them; a system is chosen by the
// address's path.
func ExampleOptionsFromParams() {
	bmc := redfishsim.New(redfishsim.Options{Systems: []redfishsim.System{{ID: "A"}, {ID: "B", PowerState: "Off"}}})
	defer bmc.Close()

	p := fence.NewParams(
		"address", bmc.Address()+"/redfish/v1/Systems/B", // redfish+https://127.0.0.1:PORT/...
		"username", "admin", "password", "password",
		"ssl_insecure", "yes", "auth", "session",
	)
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-2", Name: "bmc", Params: p})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := fence.Do(context.Background(), m, fence.ActionStatus)
	fmt.Println("driver:", m.Driver, "state:", res.State, "error:", err)
	m.Device.(*redfish.Device).Close()
	fmt.Println("sessions left:", bmc.Sessions())
	// Output:
	// driver: redfish state: off error: <nil>
	// sessions left: 0
}
