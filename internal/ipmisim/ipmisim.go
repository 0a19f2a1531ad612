// Package ipmisim runs IPMI BMCs on the loopback interface for the tests
// and benchmarks of the IPMI driver, so that a fresh clone tests against
// real peers without any set-up of its own:
//
//   - StartIPMISim runs OpenIPMI's simulator, ipmi_sim (Debian package
//     openipmi), configured in a temporary directory: a LAN channel on
//     127.0.0.1, an administrator, and a chassis-control script that keeps
//     the power state in a file, so that power commands really change what
//     Get Chassis Status reports.
//   - StartGoBMC (and NewGoBMC) embed go-ipmi's reference BMC (pkg/server,
//     pkg/bmc, pkg/hal/mock) in the test process, with a chassis whose power
//     state the test reads and sets, a count of the datagrams it received
//     (one per round trip), and injectable faults.
//   - BuildGoIPMIServer and StartGoIPMIServer run the same reference BMC as a
//     process of its own, for benchmarks that compare whole programs.
//
// Every BMC listens on 127.0.0.1 only. A missing tool skips the test, or
// fails it when the environment variable CI is "true".
package ipmisim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testtool"
)

// Host is the address every BMC of this package listens on.
const Host = "127.0.0.1"

// Default credentials of the BMCs of this package.
const (
	DefaultUser     = "admin"
	DefaultPassword = "password"
)

// requireTool is testtool.Require.
func requireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	return testtool.Require(t, name, pkg)
}

// RequireTool returns the path of a program the tests need (such as
// fence_ipmilan or ipmitool), or skips t when it is missing; under CI=true
// it fails t instead. pkg names the Debian package that has it.
func RequireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	return requireTool(t, name, pkg)
}

// freeUDPPort returns a UDP port on Host that was free a moment ago.
func freeUDPPort() (int, error) { return testtool.FreeUDPPort(Host) }

// udpPortFree reports whether port can be bound on Host right now.
func udpPortFree(port int) bool { return testtool.UDPPortFree(Host, port) }

// stateWord is how the chassis-control state file writes a state.
func stateWord(s fence.State) (string, error) {
	switch s {
	case fence.StateOn:
		return "1", nil
	case fence.StateOff:
		return "0", nil
	}
	return "", fmt.Errorf("ipmisim: state %v is neither on nor off", s)
}

// parseStateWord reads a state written by the chassis-control script.
func parseStateWord(b []byte) (fence.State, error) {
	switch strings.TrimSpace(string(b)) {
	case "1":
		return fence.StateOn, nil
	case "0":
		return fence.StateOff, nil
	}
	return fence.StateUnknown, fmt.Errorf("ipmisim: power file holds %q, want 1 or 0", strings.TrimSpace(string(b)))
}

// Probe opens an IPMI v2.0 session (cipher suite 3) to host:port, reads the
// BMC's Device ID and closes the session. It is how the harness knows a BMC
// answers; productID, when not zero, must match the BMC's product ID, so
// that a stranger that holds the port is not taken for the BMC started.
func Probe(ctx context.Context, host string, port int, user, password string, productID uint16) error {
	c, err := client.NewClient(host, port, user, password)
	if err != nil {
		return err
	}
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(200 * time.Millisecond).WithRetry(0)
	if err := c.Connect(ctx); err != nil {
		closeQuietly(c)
		return err
	}
	defer closeQuietly(c)
	id, err := c.GetDeviceID(ctx)
	if err != nil {
		return err
	}
	if productID != 0 && id.ProductID != productID {
		return fmt.Errorf("ipmisim: another BMC answers on port %d (product ID %#04x, want %#04x)", port, id.ProductID, productID)
	}
	return nil
}

// closeQuietly ends a probe's session, waiting at most 200 ms for the BMC.
func closeQuietly(c *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = c.Close(ctx)
}

// waitAnswer probes a BMC until it answers, its process ends (exited is
// closed), or d passes.
func waitAnswer(host string, port int, user, password string, productID uint16, exited <-chan struct{}, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for i := 0; time.Now().Before(deadline); i++ {
		select {
		case <-exited:
			return errors.New("the process exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last = Probe(ctx, host, port, user, password, productID)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(time.Duration(min(i+1, 10)) * 10 * time.Millisecond)
	}
	return fmt.Errorf("no answer within %v: %w", d, last)
}
