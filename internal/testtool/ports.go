package testtool

import (
	"net"
	"strconv"
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
