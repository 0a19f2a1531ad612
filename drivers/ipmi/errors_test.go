package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// checkErr asserts what every error of the driver must be: an error, not a
// success; naming the BMC's address (and the method, for errors of
// fence.Do); never holding the password.
func checkErr(t *testing.T, err error, addr string, passwords ...string) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, addr, "the error names the BMC")
	var fe *fence.Error
	if errors.As(err, &fe) {
		assert.Contains(t, msg, "method "+fe.Method, "the error names the method")
	}
	for _, pw := range passwords {
		assert.NotContains(t, msg, pw, "the error holds a password")
	}
	assert.NotContains(t, msg, "\n", "the error is one line")
	var ie *Error
	assert.ErrorAs(t, err, &ie, "the error is an *ipmi.Error")
}

// doOff runs a verified off through the engine.
func doOff(t *testing.T, d fence.Device, o fence.Options) (*fence.Result, error) {
	t.Helper()
	m := method(d, "bmc-off")
	if o.PowerTimeout != 0 {
		m.Options.PowerTimeout = o.PowerTimeout
	}
	if o.IOTimeout != 0 {
		m.Options.IOTimeout = o.IOTimeout
	}
	return fence.Do(ctx(t), m, fence.ActionOff)
}

func TestWrongPassword(t *testing.T) {
	g, gp := goBMCPeer(t, ipmisim.GoBMCOptions{Password: secret})
	s, sp := simPeer(t, ipmisim.SimOptions{Password: secret})
	for _, tc := range []struct {
		name string
		p    peer
		v15  bool
	}{
		{"goipmi/lanplus", gp, false},
		{"goipmi/lan", gp, true},
		{"ipmi_sim/lanplus", sp, false},
		{"ipmi_sim/lan", sp, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrong := "wrong-" + secret[:8]
			d := tc.p.open(t, func(o *Options) {
				o.Password, o.V15 = fence.NewSecret(wrong), tc.v15
				o.Timeout, o.Retries = 200*time.Millisecond, NoRetry
			})
			addr := fmt.Sprintf("127.0.0.1:%d", tc.p.port)
			start := time.Now()
			st, err := d.Status(ctx(t), "")
			assert.Equal(t, fence.StateUnknown, st)
			checkErr(t, err, addr, wrong, secret)
			assert.ErrorIs(t, err, fence.ErrLoginDenied)
			assert.Less(t, time.Since(start), 3*time.Second)

			err = d.Set(ctx(t), "", fence.StateOff)
			checkErr(t, err, addr, wrong, secret)
			assert.ErrorIs(t, err, fence.ErrLoginDenied)
			assert.True(t, fence.IsNotDone(err), "a refused login sent nothing: %v", err)

			res, err := doOff(t, d, fence.Options{})
			checkErr(t, err, addr, wrong, secret)
			assert.ErrorIs(t, err, fence.ErrLoginDenied)
			assert.False(t, res.Fenced())
			assert.True(t, fence.IsNotDone(err))
			t.Log(err)
		})
	}
	truth, err := s.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, truth, "nothing switched")
	assert.Equal(t, fence.StateOn, g.Truth(), "nothing switched")
}

func TestPrivilegeRefused(t *testing.T) {
	_, p := goBMCPeer(t, ipmisim.GoBMCOptions{UserPrivilege: bmc.PrivilegeLevelUser})
	d := p.open(t, nil) // asks for administrator
	_, err := d.Status(ctx(t), "")
	checkErr(t, err, fmt.Sprint(p.port))
	assert.ErrorIs(t, err, fence.ErrLoginDenied)
	t.Log(err)

	// As a user, the state can be read, and power control is refused.
	d = p.open(t, func(o *Options) { o.Privilege = PrivilegeUser })
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	err = d.Set(ctx(t), "", fence.StateOff)
	checkErr(t, err, fmt.Sprint(p.port))
	var ce *CompletionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, uint8(0xD4), ce.Code, "insufficient privilege")
	assert.True(t, fence.IsNotDone(err), "a refused command did not act: %v", err)
	t.Log(err)
}

func TestCipherSuiteRefused(t *testing.T) {
	_, p := simPeer(t, ipmisim.SimOptions{})
	d := p.open(t, func(o *Options) { o.CipherSuite = 17 })
	_, err := d.Status(ctx(t), "")
	checkErr(t, err, fmt.Sprint(p.port))
	assert.ErrorIs(t, err, fence.ErrUnsupported)
	assert.Contains(t, err.Error(), "cipher suite 17")
	t.Log(err)
}

func TestUnreachable(t *testing.T) {
	t.Run("PortClosed", func(t *testing.T) {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		require.NoError(t, err)
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		d, err := New(Options{Host: "127.0.0.1", Port: port, Username: "admin", Password: fence.NewSecret(secret)})
		require.NoError(t, err)
		defer d.Close()
		start := time.Now()
		_, err = d.Status(ctx(t), "")
		checkErr(t, err, fmt.Sprintf("127.0.0.1:%d", port), secret)
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		assert.Less(t, time.Since(start), time.Second, "a closed port answers at once")
		res, err := doOff(t, d, fence.Options{})
		checkErr(t, err, fmt.Sprintf("127.0.0.1:%d", port), secret)
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		assert.True(t, fence.IsNotDone(err))
		assert.False(t, res.Fenced())
		t.Log(err)
	})

	t.Run("Silent", func(t *testing.T) {
		// A socket that takes every datagram and answers none.
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		require.NoError(t, err)
		defer c.Close()
		go func() {
			buf := make([]byte, 512)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		port := c.LocalAddr().(*net.UDPAddr).Port
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		d, err := New(Options{Host: "127.0.0.1", Port: port, Username: "admin", Password: fence.NewSecret(secret),
			Timeout: 150 * time.Millisecond, Retries: 2})
		require.NoError(t, err)
		defer d.Close()

		// The driver's own limit: 3 tries of 150 ms.
		start := time.Now()
		_, err = d.Status(ctx(t), "")
		took := time.Since(start)
		checkErr(t, err, addr, secret)
		assert.ErrorIs(t, err, ErrNoReply)
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		var ie *Error
		require.ErrorAs(t, err, &ie)
		assert.True(t, ie.Timeout(), "reported as a timeout: %v", err)
		assert.Contains(t, err.Error(), "no reply within 450ms (3 tries of 150ms)")
		assert.GreaterOrEqual(t, took, 400*time.Millisecond)
		assert.Less(t, took, 450*time.Millisecond+time.Second, "within the configured limit (and a loaded machine's slack)")
		t.Log(err)

		// The engine's I/O timeout, shorter than the driver's limit.
		start = time.Now()
		res, err := doOff(t, d, fence.Options{IOTimeout: 200 * time.Millisecond})
		took = time.Since(start)
		checkErr(t, err, addr, secret)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorAs(t, err, &ie)
		assert.True(t, ie.Timeout())
		assert.Contains(t, err.Error(), "timed out")
		assert.Less(t, took, 200*time.Millisecond+time.Second, "within the I/O timeout (and a loaded machine's slack)")
		assert.False(t, res.Fenced())
		assert.True(t, fence.IsNotDone(err))
		t.Log(err)
	})

	t.Run("SilentAfterLogin", func(t *testing.T) {
		g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
		d := p.open(t, func(o *Options) { o.Timeout, o.Retries = 100*time.Millisecond, 1 })
		_, err := d.Status(ctx(t), "")
		require.NoError(t, err)
		g.SetFault(ipmisim.FaultSilent)
		start := time.Now()
		err = d.Set(ctx(t), "", fence.StateOff)
		checkErr(t, err, fmt.Sprint(p.port), secret)
		assert.ErrorIs(t, err, ErrNoReply)
		assert.True(t, fence.IsOutcomeUnknown(err), "a command without reply may have run: %v", err)
		assert.False(t, fence.IsNotDone(err))
		// 200 ms for the command; no new session is tried for a Set.
		assert.Less(t, time.Since(start), 200*time.Millisecond+time.Second)
		t.Log(err)
	})
}

func TestNeverReachesState(t *testing.T) {
	g, gp := goBMCPeer(t, ipmisim.GoBMCOptions{})
	s, sp := simPeer(t, ipmisim.SimOptions{})
	g.SetFault(ipmisim.FaultStuck)
	require.NoError(t, s.SetStuck(true))
	for _, p := range []peer{gp, sp} {
		t.Run(p.name, func(t *testing.T) {
			d := p.open(t, nil)
			start := time.Now()
			res, err := doOff(t, d, fence.Options{PowerTimeout: 300 * time.Millisecond})
			// Every read answered, so the error is the engine's, which names
			// the method and the driver; the device names the BMC.
			require.Error(t, err)
			assert.Contains(t, err.Error(), "method bmc-off, driver ipmi")
			assert.NotContains(t, err.Error(), p.password)
			assert.Contains(t, d.String(), fmt.Sprintf("127.0.0.1:%d", p.port))
			assert.ErrorIs(t, err, fence.ErrTimeout)
			assert.True(t, fence.IsOutcomeUnknown(err))
			assert.False(t, res.Fenced())
			assert.Equal(t, fence.StateOn, res.State)
			assert.Less(t, time.Since(start), 300*time.Millisecond+5*time.Second)
			st, _ := p.truth()
			assert.Equal(t, fence.StateOn, st)
			t.Log(err)
		})
	}
}

func TestMalformedReply(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	addr := fmt.Sprintf("127.0.0.1:%d", p.port)
	d := p.open(t, func(o *Options) { o.Timeout, o.Retries = 100*time.Millisecond, 1 })
	_, err := d.Status(ctx(t), "")
	require.NoError(t, err)

	t.Run("ShortBody", func(t *testing.T) {
		g.SetFault(ipmisim.FaultMalformed)
		defer g.SetFault(ipmisim.FaultNone)
		st, err := d.Status(ctx(t), "")
		assert.Equal(t, fence.StateUnknown, st)
		checkErr(t, err, addr, p.password)
		assert.ErrorIs(t, err, ErrMalformed)
		assert.Contains(t, err.Error(), "Get Chassis Status")
		err = d.Monitor(ctx(t))
		checkErr(t, err, addr, p.password)
		assert.ErrorIs(t, err, ErrMalformed)
		res, err := doOff(t, d, fence.Options{})
		checkErr(t, err, addr, p.password)
		assert.ErrorIs(t, err, ErrMalformed)
		assert.False(t, res.Fenced())
		assert.Equal(t, fence.StateOn, g.Truth(), "nothing was switched on a malformed first read")
		t.Log(err)
	})

	t.Run("NotRMCP", func(t *testing.T) {
		g.SetFault(ipmisim.FaultGarbage)
		defer g.SetFault(ipmisim.FaultNone)
		st, err := d.Status(ctx(t), "")
		assert.Equal(t, fence.StateUnknown, st)
		checkErr(t, err, addr, p.password)
		// go-ipmi drops datagrams that are not a reply to the request:
		// the request goes unanswered.
		assert.ErrorIs(t, err, ErrNoReply)
		t.Log(err)
	})

	g.SetFault(ipmisim.FaultNone)
	st, err := d.Status(ctx(t), "")
	require.NoError(t, err, "the device recovers")
	assert.Equal(t, fence.StateOn, st)
}

func TestRefusedControl(t *testing.T) {
	g, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	g.SetFault(ipmisim.FaultRefuse)
	err := d.Set(ctx(t), "", fence.StateOff)
	checkErr(t, err, fmt.Sprint(p.port), p.password)
	var ce *CompletionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, uint8(0xC0), ce.Code)
	assert.True(t, fence.IsNotDone(err), "refused with a completion code: not done: %v", err)
	assert.Contains(t, err.Error(), "Chassis Control (power down)")

	res, err := doOff(t, d, fence.Options{})
	checkErr(t, err, fmt.Sprint(p.port), p.password)
	assert.True(t, fence.IsNotDone(err))
	assert.False(t, res.Fenced())
	assert.Equal(t, fence.StateOn, g.Truth())
	t.Log(err)
}

func TestBadPlugAndState(t *testing.T) {
	_, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	_, err := d.Status(ctx(t), "node-2")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.Contains(t, err.Error(), "127.0.0.1")
	err = d.Set(ctx(t), "", fence.StateUnknown)
	assert.True(t, fence.IsNotDone(err))
	assert.Equal(t, 0, d.Sessions(), "nothing was sent")
}

func TestContextDone(t *testing.T) {
	_, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	err := d.Set(c, "", fence.StateOff)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, fence.IsNotDone(err))
	c, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = d.Status(c, "")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, strings.Contains(err.Error(), "timed out"), err.Error())
}

func TestClosed(t *testing.T) {
	_, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	_, err := d.Status(ctx(t), "")
	require.NoError(t, err)
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	_, err = d.Status(ctx(t), "")
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, fence.IsNotDone(d.Set(ctx(t), "", fence.StateOff)))
}
