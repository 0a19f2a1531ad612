package brocade_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/drivers/brocade"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
)

// A verified fabric fence of a node's FC switch port: an emulated
// Brocade switch, served over SSH in this process on 127.0.0.1, stands in
// for the switch.
func Example() {
	sw, err := brocadesim.Serve(brocadesim.Options{Ports: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sw.Stop()

	dev, err := brocade.New(brocade.Options{
		Host: "127.0.0.1", Port: sw.Port,
		Username: sw.User, Password: fence.NewSecret(sw.Password),
		KnownHostsFiles: []string{sw.KnownHosts}, // the switch's host key
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "fc-a", Node: "worker-3", Driver: "brocade", Device: dev, Plug: "5",
		Options: fence.Options{PowerTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}}
	ctx := context.Background()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("error:", err)
	fmt.Println("fenced:", res.Fenced(), "state:", res.State)
	truth, _ := sw.Truth("5")
	fmt.Println("port 5 on the switch:", truth)
	res, err = fence.Do(ctx, m, fence.ActionOn)
	fmt.Println("error:", err, "state:", res.State)
	cmds, _ := sw.Commands()
	fmt.Println("logins:", dev.Logins(), "commands:", strings.Join(cmds, ", "))
	// Output:
	// error: <nil>
	// fenced: true state: off
	// port 5 on the switch: off
	// error: <nil> state: on
	// logins: 1 commands: switchshow, portCfgPersistentDisable 5, switchshow, switchshow, portCfgPersistentEnable 5, switchshow
}

// The driver opened from the agents' parameters, as fencectl and fence's
// configuration do. A switch whose host key is not the one expected is
// refused before any password is sent: a clean, "surely not done" failure
// that names the switch.
func Example_params() {
	sw, err := brocadesim.Serve(brocadesim.Options{Ports: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sw.Stop()
	impostor, err := brocadesim.Serve(brocadesim.Options{Ports: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer impostor.Stop()

	params := fence.NewParams(
		"ip", "127.0.0.1", "ipport", strconv.Itoa(sw.Port),
		"username", sw.User, "password", sw.Password,
		"host_key_fingerprint", impostor.Fingerprint, // not sw's
		"plug", "2",
	)
	m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Node: "worker-3", Name: "fc-a", Driver: "fence_brocade", Params: params})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Device.(*brocade.Device).Close()

	_, err = fence.Do(context.Background(), m, fence.ActionOff)
	fmt.Println("host key refused:", errors.Is(err, brocade.ErrHostKey), "not done:", fence.IsNotDone(err))
	fmt.Println("names the switch:", strings.Contains(err.Error(), "brocade ssh 127.0.0.1:"+strconv.Itoa(sw.Port)+": login:"))
	fmt.Println("holds the password:", strings.Contains(err.Error(), sw.Password))
	fmt.Println("logins the switch saw:", sw.Logins())
	// Output:
	// host key refused: true not done: true
	// names the switch: true
	// holds the password: false
	// logins the switch saw: 0
}
