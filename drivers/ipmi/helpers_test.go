package ipmi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/testtool"
)

// secret is a password that no error or output may ever hold.
const secret = "Qz7-unl1kely-Pw"

// peer is a BMC the tests talk to.
type peer struct {
	name           string
	port           int
	user, password string
	truth          func() (fence.State, error)
	setTruth       func(fence.State) error
	settle         time.Duration
}

func goBMCPeer(t testing.TB, o ipmisim.GoBMCOptions) (*ipmisim.GoBMC, peer) {
	t.Helper()
	g := ipmisim.StartGoBMC(t, o)
	return g, peer{
		name: "goipmi", port: g.Port, user: g.User, password: g.Password,
		truth:    func() (fence.State, error) { return g.Truth(), nil },
		setTruth: func(s fence.State) error { g.SetTruth(s); return nil },
	}
}

func simPeer(t testing.TB, o ipmisim.SimOptions) (*ipmisim.Sim, peer) {
	t.Helper()
	s := ipmisim.StartIPMISim(t, o)
	return s, peer{
		name: "ipmi_sim", port: s.Port, user: s.User, password: s.Password,
		truth: s.Truth, setTruth: s.SetTruth,
	}
}

// open returns a device for p, closed when t ends.
func (p peer) open(t testing.TB, mod func(*Options)) *Device {
	t.Helper()
	o := Options{Host: ipmisim.Host, Port: p.port, Username: p.user, Password: fence.NewSecret(p.password)}
	if mod != nil {
		mod(&o)
	}
	d, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// ctx returns a context for one test step.
func ctx(t testing.TB) context.Context { return testtool.Timeout(t, 30*time.Second) }

// method wraps a device for fence.Do, with fast polling.
func method(d fence.Device, name string) *fence.Method {
	return &fence.Method{Name: name, Node: "node-1", Driver: "ipmi", Device: d, Options: fence.Options{
		PollInterval: 10 * time.Millisecond, PowerTimeout: 5 * time.Second,
	}}
}
