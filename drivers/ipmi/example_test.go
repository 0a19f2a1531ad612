package ipmi_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// A verified off through a BMC: go-ipmi's reference BMC, served in this
// process on 127.0.0.1, stands in for a server's BMC.
func Example() {
	bmc, err := ipmisim.NewGoBMC(ipmisim.GoBMCOptions{User: "admin", Password: "s3cret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bmc.Close()

	dev, err := ipmi.New(ipmi.Options{Host: "127.0.0.1", Port: bmc.Port, Username: "admin", Password: fence.NewSecret("s3cret")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "bmc-off", Node: "worker-3", Driver: "ipmi", Device: dev,
		Options: fence.Options{PowerTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}}
	ctx := context.Background()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "state:", res.State)
	res, err = fence.Do(ctx, m, fence.ActionOn)
	fmt.Println("error:", err, "state:", res.State)
	fmt.Println("sessions:", dev.Sessions(), "truth:", bmc.Truth())
	// Output:
	// error: <nil>
	// fenced: true state: off
	// error: <nil> state: on
	// sessions: 1 truth: on
}

// The driver opened from the agents' parameters, as fencectl and fence's
// configuration do; a wrong password is a clean, "surely not done" failure
// that names the BMC.
func Example_params() {
	bmc, err := ipmisim.NewGoBMC(ipmisim.GoBMCOptions{User: "admin", Password: "s3cret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bmc.Close()

	params := fence.NewParams(
		"ip", "127.0.0.1", "ipport", strconv.Itoa(bmc.Port),
		"username", "admin", "password", "not-the-password",
		"lanplus", "1", "cipher", "3", "privlvl", "operator",
	)
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-3", Name: "bmc", Driver: "fence_ipmilan", Params: params})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Device.(*ipmi.Device).Close()

	_, err = fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("login denied:", errors.Is(err, fence.ErrLoginDenied), "not done:", fence.IsNotDone(err))
	fmt.Println("names the BMC:", strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(bmc.Port)))
	fmt.Println("holds the password:", strings.Contains(err.Error(), "not-the-password"))
	// Output:
	// login denied: true not done: true
	// names the BMC: true
	// holds the password: false
}
