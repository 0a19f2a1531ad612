package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/fence"
)

// extremes are the values every numeric parameter is tried with.
var extremes = []string{"0", "-1", "9223372036854775807", "NaN", "1e309", "1e9", "-0.5"}

// closedPort returns a loopback port nothing listens on (TCP and UDP), so
// that a device there can confirm nothing.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	return port
}

// Every numeric parameter of every network driver, and the engine's, at its
// extremes, through fencectl's command line: with no device at the address
// nothing can confirm anything, so no run may report success; none may run
// an action zero times and call it done, wait without bound, or print the
// password.
func TestEveryNumericParameterAtItsExtremes(t *testing.T) {
	port := strconv.Itoa(closedPort(t))
	for _, d := range fence.DefaultRegistry().Drivers() {
		switch d.Name {
		case "fake", "agent": // the fake confirms what it is told; the agent driver runs another program
			continue
		}
		params := map[string]bool{}
		for _, p := range append(append([]fence.ParamSpec{}, fence.CommonParams...), d.Params...) {
			if p.Type == "integer" || p.Type == "second" {
				params[p.Name] = true
			}
		}
		for name := range params {
			for _, v := range extremes {
				t.Run(fmt.Sprintf("%s/%s=%s", d.Name, name, v), func(t *testing.T) {
					t.Parallel()
					args := []string{"--driver", d.Name, "--ip", "127.0.0.1", "--ipport", port, "--username", "admin",
						"--password", secret, "--plug", "1", "-o", "off",
						"--power-timeout", "1", "--io-timeout", "1",
						"--" + strings.ReplaceAll(name, "_", "-"), v}
					if d.Name == "apc" || d.Name == "eaton" {
						args = append(args, "--snmp-version", "2c", "--community", secret)
					}
					if d.Name == "redfish" {
						args = append(args, "--ssl-insecure")
					}
					if d.Name == "brocade" {
						args = append(args, "--ssh-insecure")
					}
					r := runCLI(t, "", args...)
					assert.NotEqual(t, 0, r.code, "success with no device: %s%s", r.stdout, r.stderr)
					assert.NotContains(t, r.stdout, "Success")
					assert.NotContains(t, r.stdout+r.stderr, secret)
				})
			}
		}
	}
}
