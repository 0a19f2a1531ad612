// Command goipmiserver is go-ipmi's reference BMC (the program
// cmd/goipmi-server of github.com/bougou/go-ipmi, same packages, same
// device identity, same in-memory hardware) bound to 127.0.0.1 only: the
// upstream program listens on every interface, which tests must not do.
//
// It is configured, like the upstream program, by the environment:
// GOIPMI_SERVER_PORT (default 623), GOIPMI_SERVER_USER (default ADMIN) and
// GOIPMI_SERVER_PASS (default ADMIN). It runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/clock"
	"github.com/bougou/go-ipmi/pkg/hal/mock"
	"github.com/bougou/go-ipmi/pkg/server"
	"github.com/bougou/go-ipmi/pkg/transport/udp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "goipmiserver:", err)
		os.Exit(1)
	}
}

func env(key, fallback string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return fallback
}

func run() error {
	port := env("GOIPMI_SERVER_PORT", "623")
	user := env("GOIPMI_SERVER_USER", "ADMIN")
	pass := env("GOIPMI_SERVER_PASS", "ADMIN")

	// The upstream program's device identity.
	info := bmc.DeviceInfo{
		DeviceID:                32,
		DeviceRevision:          1,
		FirmwareMajor:           1,
		FirmwareMinor:           0,
		IPMIVersion:             0x20,
		ManufacturerID:          0x000157,
		ProductID:               0x0001,
		AdditionalDeviceSupport: 0x39,
	}
	var guid [16]byte
	copy(guid[:], "go-ipmi-e2e\x00\x00\x00\x00")
	b := bmc.New(info, guid, mock.New(), bmc.WithClock(clock.Real))

	u, err := b.Users.Add(2, user)
	if err != nil {
		return fmt.Errorf("add user: %w", err)
	}
	u.SetPassword([]byte(pass))
	u.Enabled = true
	u.ChannelAccess[1] = bmc.UserChannelAccess{MaxPrivilege: bmc.PrivilegeLevelAdministrator, Enabled: true}

	conn, err := udp.Listen("127.0.0.1:" + port)
	if err != nil {
		return fmt.Errorf("listen udp: %w", err)
	}
	defer conn.Close()
	srv := server.NewServer(b, conn)

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Printf("goipmiserver: listening on 127.0.0.1:%s (user=%s)\n", port, user)
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
