package apc_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/drivers/apc"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// A verified off of one outlet of an APC rPDU: an SNMP responder in this
// process, on 127.0.0.1, stands in for the PDU.
func Example() {
	pdu, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Outlets: 8, Community: "s3cret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pdu.Close()

	dev, err := apc.New(apc.Options{Host: "127.0.0.1", Port: pdu.Port, Version: "2c", Community: fence.NewSecret("s3cret")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "pdu-a", Node: "worker-3", Driver: "apc", Device: dev, Plug: "3",
		Options: fence.Options{PollInterval: 100 * time.Millisecond}}
	ctx := context.Background()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "state:", res.State, "outlet 3:", pdu.Truth("3"), "outlet 4:", pdu.Truth("4"))
	model, _ := dev.Model(ctx)
	fmt.Println("model:", model.ID, "/", model.Name)
	fmt.Println("requests:", dev.Requests()) // sysObjectID, state, SET, state
	// Output:
	// error: <nil>
	// fenced: true state: off outlet 3: off outlet 4: on
	// model: rpdu / APC rPDU
	// requests: 4
}

// Outlets by name, opened from the agent's parameters as fencectl and
// fence's configuration do; a missing outlet is an unknown plug, never
// "off".
func Example_params() {
	pdu, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Outlets: 4, Names: map[int]string{2: "worker-3"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pdu.Close()

	open := func(plug string) *fence.Method {
		params := fence.NewParams("ip", "127.0.0.1", "ipport", strconv.Itoa(pdu.Port), "plug", plug,
			"snmp_version", "2c", "community", "private")
		m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-3", Name: "pdu-a", Driver: "fence_apc_snmp", Params: params})
		if err != nil {
			panic(err)
		}
		return m
	}
	m := open("worker-3")
	defer m.Device.(*apc.Device).Close()
	res, err := fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("error:", err, "fenced:", res.Fenced(), "outlet 2:", pdu.Truth("2"))

	plugs, _ := m.Device.(fence.Lister).List(context.Background())
	for _, p := range plugs {
		fmt.Println(p.ID, p.Name, p.State)
	}

	missing := open("20")
	defer missing.Device.(*apc.Device).Close()
	res, err = fence.Do(context.Background(), missing, fence.ActionOff)
	fmt.Println("unknown plug:", errors.Is(err, fence.ErrUnknownPlug), "fenced:", res.Fenced())
	fmt.Println(strings.Contains(err.Error(), "noSuchInstance"))
	// Output:
	// error: <nil> fenced: true outlet 2: off
	// 1 node1 on
	// 2 worker-3 off
	// 3 node3 on
	// 4 node4 on
	// unknown plug: true fenced: false
	// true
}
