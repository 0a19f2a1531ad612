package reinstall_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/installer"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// One reinstall from request to kexec: the API side accepts it, pins the
// primary disk and reboots the machine through a (fake) BMC; the installer
// looks the allocation up, wipes the OS disk only, writes the image,
// reports, and boots the new OS. The data disks keep their contents.
func Example() {
	ctx := context.Background()
	store := reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04"))
	bootOrder, switchPorts := &reinstalltest.BootOrder{}, &reinstalltest.SwitchPorts{}
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	power := reinstall.FencePower{Method: func(id string) (*fence.Method, error) {
		return &fence.Method{Name: "bmc", Node: id, Driver: "fake", Device: bmc, Options: fence.Options{PollInterval: time.Millisecond}}, nil
	}}
	svc, err := reinstall.NewService(reinstall.Ports{Store: store, Images: reinstalltest.Images(),
		BootOrder: bootOrder, SwitchPorts: switchPorts, Power: power}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	res, err := svc.Reinstall(ctx, reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("accepted:", res.Status.Phase, "primary disk", res.Status.PrimaryDisk)
	fmt.Println("boot order:", bootOrder.Get("m1"), "network:", switchPorts.Get("m1"), "BMC:", bmc.History(""))

	// The machine PXE boots into the installer.
	disks := reinstalltest.NewDisks(reinstalltest.Inventory())
	kexec := &reinstalltest.Kexec{}
	s, err := installer.Run(ctx, "m1", installer.Ports{Allocations: svc, Reporter: svc, Disks: disks,
		BootOrder: bootOrder, SwitchPorts: switchPorts, Kexec: kexec}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("installer:", s.Phase, "into", s.Target, "- wiped", disks.Wiped())
	fmt.Println("boot order:", bootOrder.Get("m1"), "network:", switchPorts.Get("m1"))
	m, _ := store.Get(ctx, "m1")
	fmt.Println("record:", m.Reinstall.Phase, "image", m.Allocation.Image, "reinstall flag", m.Allocation.Reinstall)
	// Output:
	// accepted: pending primary disk sda (serial OS-1)
	// boot order: pxe network: pxe BMC: [on off on]
	// installer: booted into new-os - wiped [sda]
	// boot order: disk network: tenant
	// record: succeeded image ubuntu-24.04 reinstall flag false
}

// Detection refuses rather than guesses: here a data disk also holds
// /etc/metal (a former OS disk), so either could be the OS disk.
func ExampleDetectPrimaryDisk() {
	inv, err := reinstall.ParseInventory([]byte(`{"disks": [
	  {"name": "sda", "serial": "OS-1", "size": 240057409536, "type": "ssd", "removable": false, "partitions": [
	    {"name": "sda1", "size": 536870912, "fstype": "vfat", "label": "efi"},
	    {"name": "sda2", "size": 239519497728, "fstype": "ext4", "label": "root", "etcMetal": true}]},
	  {"name": "sdb", "serial": "DATA-1", "size": 4000787030016, "type": "hdd", "removable": false, "partitions": [
	    {"name": "sdb1", "size": 4000787030016, "fstype": "ext4", "etcMetal": false}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	det, err := reinstall.DetectPrimaryDisk(inv)
	fmt.Println(det.Disk, det.Partition, err)

	inv.Disks[1].Partitions[0].EtcMetal = true
	_, err = reinstall.DetectPrimaryDisk(inv)
	fmt.Println(errors.Is(err, reinstall.ErrAmbiguousPrimaryDisk), err)
	// Output:
	// sda (serial OS-1) sda2 <nil>
	// true reinstall: field primaryDisk: ambiguous primary disk: disks sda, sdb all hold /etc/metal
}

// The HTTP endpoint and its client: a refusal comes back as a typed error.
func ExampleClient() {
	store := reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04"))
	locked := reinstalltest.Machine("m2", "ubuntu-22.04")
	locked.Lock = &reinstall.Lock{Reason: "legal hold"}
	store.Put(locked)
	svc, _ := reinstall.NewService(reinstall.Ports{Store: store, Images: reinstalltest.Images(),
		BootOrder: &reinstalltest.BootOrder{}, SwitchPorts: &reinstalltest.SwitchPorts{}, Power: &reinstalltest.Power{}}, nil)
	// Operators authenticate with a bearer token, over TLS.
	tokens, _ := apiauth.NewTokens("an-operators-long-random-token")
	srv := httptest.NewTLSServer(reinstall.NewHandler(svc, &reinstall.HandlerOptions{Auth: tokens}))
	defer srv.Close()

	hc := *srv.Client()
	hc.Transport = &apiauth.Transport{Signer: apiauth.Bearer("an-operators-long-random-token"), Base: hc.Transport}
	c := &reinstall.Client{BaseURL: srv.URL, HTTPClient: &hc}
	res, err := c.Reinstall(context.Background(), "m1", "debian-12")
	fmt.Println(res.Status.Phase, res.Status.Image, err)

	_, err = c.Reinstall(context.Background(), "m2", "debian-12")
	fmt.Println(errors.Is(err, reinstall.ErrLocked))
	fmt.Println(err)

	anonymous := &reinstall.Client{BaseURL: srv.URL, HTTPClient: srv.Client()}
	_, err = anonymous.Reinstall(context.Background(), "m1", "debian-12")
	fmt.Println(err)
	// Output:
	// pending debian-12 <nil>
	// true
	// reinstall: HTTP 423 locked, machine m2, field lock: machine is locked: legal hold
	// reinstall: HTTP 401 unauthorized: unauthenticated: no bearer token
}
