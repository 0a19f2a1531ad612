package ipmisim

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

// connect opens a session to a BMC of this package with go-ipmi's client.
func connect(t *testing.T, port int, user, password string) *client.Client {
	t.Helper()
	c, err := client.NewClient(Host, port, user, password)
	require.NoError(t, err)
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(time.Second).WithRetry(1)
	require.NoError(t, c.Connect(t.Context()))
	t.Cleanup(func() { closeQuietly(c) })
	return c
}

func power(t *testing.T, c *client.Client) fence.State {
	t.Helper()
	r, err := c.GetChassisStatus(t.Context())
	require.NoError(t, err)
	if r.PowerIsOn {
		return fence.StateOn
	}
	return fence.StateOff
}

func control(t *testing.T, c *client.Client, ctl chassis.ChassisControl) error {
	t.Helper()
	_, err := c.ChassisControl(t.Context(), ctl)
	return err
}

func TestGoBMC(t *testing.T) {
	g := StartGoBMC(t, GoBMCOptions{})
	assert.Equal(t, fence.StateOn, g.Truth())
	c := connect(t, g.Port, DefaultUser, DefaultPassword)

	g.ResetCounts()
	assert.Equal(t, fence.StateOn, power(t, c))
	require.NoError(t, control(t, c, chassis.ChassisControlPowerDown))
	assert.Equal(t, fence.StateOff, g.Truth())
	assert.Equal(t, fence.StateOff, power(t, c))
	assert.EqualValues(t, 3, g.Packets(), "three commands, three datagrams")
	assert.Equal(t, map[string]int{"Get Chassis Status": 2, "Chassis Control": 1}, g.Commands())

	g.SetTruth(fence.StateOn)
	assert.Equal(t, fence.StateOn, power(t, c))

	require.NoError(t, control(t, c, chassis.ChassisControlSoftShutdown))
	assert.Equal(t, fence.StateOff, g.Truth(), "soft shutdown obeyed")
	require.NoError(t, control(t, c, chassis.ChassisControlPowerCycle))
	assert.Equal(t, fence.StateOn, g.Truth(), "a cycle of a chassis that is off powers it on")
	require.NoError(t, control(t, c, chassis.ChassisControlHardReset))
	assert.Equal(t, fence.StateOn, g.Truth(), "a hard reset keeps the power")
	assert.Equal(t, 1, g.PowerCycles())
	assert.Equal(t, 1, g.HardResets())
	assert.Equal(t, 1, g.SoftOffs())

	t.Run("Faults", func(t *testing.T) {
		g.SetFault(FaultStuck)
		require.NoError(t, control(t, c, chassis.ChassisControlPowerDown))
		assert.Equal(t, fence.StateOn, g.Truth(), "stuck")
		g.SetFault(FaultRefuse)
		err := control(t, c, chassis.ChassisControlPowerDown)
		var re *types.ResponseError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, types.CodeNodeBusy, re.CompletionCode())
		g.SetFault(FaultMalformed)
		_, err = c.GetChassisStatus(t.Context())
		require.ErrorAs(t, err, &re)
		assert.Contains(t, err.Error(), "unpack response failed")
		g.SetFault(FaultNone)
		assert.Equal(t, fence.StateOn, power(t, c))
	})

	t.Run("Restart", func(t *testing.T) {
		require.NoError(t, g.Restart())
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := c.GetChassisStatus(ctx)
		assert.Error(t, err, "the old session is gone")
		c2 := connect(t, g.Port, DefaultUser, DefaultPassword)
		assert.Equal(t, fence.StateOn, power(t, c2), "the chassis survives")
	})
}

func TestGoBMCCycleOffTime(t *testing.T) {
	g := StartGoBMC(t, GoBMCOptions{CycleOffTime: 50 * time.Millisecond})
	c := connect(t, g.Port, DefaultUser, DefaultPassword)
	require.NoError(t, control(t, c, chassis.ChassisControlPowerCycle))
	assert.Equal(t, fence.StateOff, g.Truth())
	require.Eventually(t, func() bool { return g.Truth() == fence.StateOn }, 5*time.Second, 5*time.Millisecond)
}

func TestIPMISim(t *testing.T) {
	s := StartIPMISim(t, SimOptions{Initial: fence.StateOff})
	st, err := s.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	c := connect(t, s.Port, s.User, s.Password)
	assert.Equal(t, fence.StateOff, power(t, c))
	require.NoError(t, control(t, c, chassis.ChassisControlPowerUp))
	st, err = s.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "the chassis-control script acted before the reply")

	require.NoError(t, s.SetTruth(fence.StateOff))
	assert.Equal(t, fence.StateOff, power(t, c))

	require.NoError(t, s.SetStuck(true))
	require.NoError(t, control(t, c, chassis.ChassisControlPowerUp))
	st, _ = s.Truth()
	assert.Equal(t, fence.StateOff, st, "stuck")
	require.NoError(t, s.SetStuck(false))

	require.NoError(t, control(t, c, chassis.ChassisControlHardReset))
	assert.Equal(t, 1, s.Resets())

	if _, err := exec.LookPath("ipmitool"); err == nil {
		out, err := exec.Command("ipmitool", "-I", "lanplus", "-C", "3", "-H", Host, "-p", strconv.Itoa(s.Port),
			"-U", s.User, "-P", s.Password, "chassis", "power", "status").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, "Chassis Power is off", strings.TrimSpace(string(out)))
	}

	s.Stop()
	s.Stop()
	assert.True(t, udpPortFree(s.Port), "the port is free after Stop")
}

func TestGoIPMIServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := BuildGoIPMIServer(t)
	p := StartGoIPMIServer(t, bin)
	st, err := p.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "the reference program starts powered off")
	require.NoError(t, p.SetTruth(fence.StateOn))
	st, err = p.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	p.Stop()
	assert.True(t, udpPortFree(p.Port))
}
