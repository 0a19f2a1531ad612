package eaton_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fencekit/fencekit/drivers/eaton"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// A verified off of one outlet of an Eaton Switched ePDU, whose outlet N
// is switched through control N+1: an SNMP responder in this process, on
// 127.0.0.1, stands in for the PDU.
func Example() {
	pdu, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pdu.Close()

	dev, err := eaton.New(eaton.Options{Host: "127.0.0.1", Port: pdu.Port, Version: "2c", Community: fence.NewSecret("private")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "pdu-b", Node: "worker-5", Driver: "eaton", Device: dev, Plug: "5",
		Options: fence.Options{PollInterval: 100 * time.Millisecond}}
	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "outlet 4:", pdu.Truth("4"), "outlet 5:", pdu.Truth("5"), "outlet 6:", pdu.Truth("6"))
	model, _ := dev.Model(context.Background())
	fmt.Println("model:", model.ID, "/", model.Name)
	// Output:
	// error: <nil>
	// fenced: true outlet 4: on outlet 5: off outlet 6: on
	// model: switched / Eaton Switched ePDU
}

// A state outside the model's mapping (the Managed ePDU reports 2 while
// it cycles an outlet) is no state: the off is not confirmed, and the
// error says why. Opened from the agent's parameters.
func Example_params() {
	pdu, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.EatonManaged, Outlets: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pdu.Close()
	params := fence.NewParams("ip", "127.0.0.1", "ipport", strconv.Itoa(pdu.Port), "plug", "1",
		"snmp_version", "2c", "power_timeout", "0.3", "stonith_status_sleep", "0.05")
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-1", Name: "pdu-b", Driver: "fence_eaton_snmp", Params: params})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Device.(*eaton.Device).Close()

	pdu.SetRaw(1, 2)
	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("bad state:", errors.Is(err, fence.ErrBadState), "fenced:", res.Fenced())
	var e *eaton.Error
	if errors.As(err, &e) {
		fmt.Println(e.Op, e.Object, e.OID)
		fmt.Println(e.Err)
	}
	// Output:
	// bad state: true fenced: false
	// GET outlet 1 state .1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.0
	// device reported no usable state: value 2 is neither on (1) nor off (0) for the Eaton Managed ePDU (surely not done)
}
