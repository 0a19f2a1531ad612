package testtool

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

// FreeUDPPort returns a UDP port on host (an IPv4 loopback address) that
// was free a moment ago, for a simulator to listen on.
func FreeUDPPort(host string) (int, error) {
	c, err := net.ListenPacket("udp4", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// UDPPortFree reports whether port can be bound on host right now.
func UDPPortFree(host string, port int) bool {
	c, err := net.ListenPacket("udp4", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ErrPortTaken is what a simulator's start wraps when the port it chose
// was taken before it could bind it: StartOnFreePort tries again.
var ErrPortTaken = errors.New("port taken")

// StartOnFreePort starts a simulator: it calls start up to tries times,
// again while start fails with an error wrapping ErrPortTaken, and stops
// what started with t. When none started, it fails t with every error,
// naming the simulator what ("snmpsim: snmpd").
func StartOnFreePort[S interface{ Stop() }](t testing.TB, what string, tries int, start func() (S, error)) S {
	t.Helper()
	var errs []string
	for try := 0; try < tries; try++ {
		s, err := start()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		errs = append(errs, err.Error())
		if !errors.Is(err, ErrPortTaken) {
			break
		}
	}
	t.Fatalf("%s did not start: %s", what, strings.Join(errs, "; "))
	var zero S
	return zero
}
