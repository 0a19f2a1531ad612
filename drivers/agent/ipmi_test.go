package agent

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// These tests run the real fence_ipmilan (which runs ipmitool) through the
// adapter against the repository's IPMI BMCs: OpenIPMI's ipmi_sim, and
// go-ipmi's reference BMC served in the test process.

// bmc is a BMC under test.
type bmc struct {
	name           string
	port           int
	user, password string
	truth          func() (fence.State, error)
}

func requireIPMILan(t testing.TB) {
	t.Helper()
	requireTool(t, "ipmitool", "ipmitool")
	requireAgent(t, "fence_ipmilan")
}

func bmcs(t *testing.T) []func(t *testing.T) bmc {
	return []func(t *testing.T) bmc{
		func(t *testing.T) bmc {
			s := ipmisim.StartIPMISim(t, ipmisim.SimOptions{Password: secret})
			return bmc{name: "ipmi_sim", port: s.Port, user: s.User, password: s.Password, truth: s.Truth}
		},
		func(t *testing.T) bmc {
			g := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{Password: secret, CycleOffTime: 20 * time.Millisecond})
			return bmc{name: "goipmi", port: g.Port, user: g.User, password: g.Password,
				truth: func() (fence.State, error) { return g.Truth(), nil }}
		},
	}
}

// ipmiParams are fence_ipmilan's parameters for b: IPMI v2.0, cipher suite
// 3 (without it, ipmitool probes the suites for seconds).
func ipmiParams(b bmc, kv ...string) fence.Params {
	return fence.NewParams(append([]string{"ip", ipmisim.Host, "ipport", strconv.Itoa(b.port),
		"username", b.user, "password", b.password, "lanplus", "1", "cipher", "3"}, kv...)...)
}

func TestConformanceIPMILan(t *testing.T) {
	requireIPMILan(t)
	for i, start := range bmcs(t) {
		t.Run([]string{"ipmi_sim", "goipmi"}[i], func(t *testing.T) {
			b := start(t)
			fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
				d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_ipmilan", Params: ipmiParams(b)})
				require.NoError(t, err)
				t.Cleanup(func() { d.Close() })
				return &fencetest.Fixture{
					Device:      d.View(),
					Plugs:       []string{""},
					MissingPlug: "2",
					Truth:       func(context.Context, string) (fence.State, error) { return b.truth() },
					Settle:      500 * time.Millisecond,
				}
			})
		})
	}
}

func TestIPMILanErrors(t *testing.T) {
	requireIPMILan(t)
	b := bmcs(t)[1](t)

	t.Run("WrongPassword", func(t *testing.T) {
		wrong := "Wr0ng-" + secret
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_ipmilan", Params: ipmiParams(b, "password", wrong)})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		st, err := d.Status(ctxFor(t, time.Minute), "")
		require.Error(t, err)
		assert.Equal(t, fence.StateUnknown, st)
		t.Logf("wrong password: %v", err)
		// fence_ipmilan reports a refused login as an unreadable status.
		assert.ErrorIs(t, err, fence.ErrBadState)
		assert.NotContains(t, err.Error(), wrong)
		assert.NotContains(t, err.Error(), secret)
		assert.Contains(t, err.Error(), "fence_ipmilan")
		assert.Contains(t, err.Error(), "127.0.0.1:"+strconv.Itoa(b.port))

		m := &fence.Method{Name: "bmc", Node: "worker-1", Driver: "agent", Device: d.View()}
		res, err := fence.Do(ctxFor(t, time.Minute), m, fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced())
		assert.True(t, fence.IsNotDone(err))
		assert.NotContains(t, err.Error(), wrong)
		st, _ = b.truth()
		assert.Equal(t, fence.StateOn, st)
	})

	t.Run("Unreachable", func(t *testing.T) {
		// A UDP port nobody answers on: ipmitool waits, fence_ipmilan kills
		// it at its power_timeout, which the adapter fits in the deadline.
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		require.NoError(t, err)
		defer c.Close()
		silent := bmc{port: c.LocalAddr().(*net.UDPAddr).Port, user: "admin", password: secret}
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_ipmilan", Params: ipmiParams(silent)})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		start := time.Now()
		_, err = d.Status(ctx, "")
		require.Error(t, err)
		t.Logf("unreachable, after %v: %v", time.Since(start).Round(time.Millisecond), err)
		assert.Less(t, time.Since(start), 9*time.Second)
		assert.True(t, errorsIsAny(err, fence.ErrUnreachable, context.DeadlineExceeded), "%v", err)
		assert.NotContains(t, err.Error(), secret)
	})
}

// TestIPMILanCycle reboots through fence_ipmilan's native cycle
// (method=cycle) on go-ipmi's BMC, which counts its power cycles.
func TestIPMILanCycle(t *testing.T) {
	requireIPMILan(t)
	g := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{Password: secret, CycleOffTime: 20 * time.Millisecond})
	b := bmc{port: g.Port, user: g.User, password: g.Password}
	p := ipmiParams(b, "agent", "fence_ipmilan", "method", "cycle", "io_timeout", "30", "stonith_status_sleep", "0.05")
	m, err := fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Driver: "agent", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { Unwrap(m.Device).Close() })
	_, ok := m.Device.(fence.Cycler)
	require.True(t, ok, "fence_ipmilan offers a cycle")
	res, err := fence.Do(ctxFor(t, time.Minute), m, fence.ActionReboot)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, res.State)
	assert.Equal(t, 1, g.PowerCycles())
	assert.Equal(t, fence.StateOn, g.Truth())
}
