package agent

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// These tests run the real fence_redfish through the adapter against the
// repository's Redfish responder.

func startRedfish(t testing.TB, o redfishsim.Options) *redfishsim.Server {
	t.Helper()
	if o.Password == "" {
		o.Password = secret
	}
	s := redfishsim.New(o)
	t.Cleanup(s.Close)
	return s
}

func redfishParams(s *redfishsim.Server, kv ...string) fence.Params {
	return fence.NewParams(append([]string{"ip", s.Host(), "ipport", strconv.Itoa(s.Port()),
		"username", s.Username(), "password", s.Password(), "ssl_insecure", "yes"}, kv...)...)
}

func TestConformanceRedfish(t *testing.T) {
	requireAgent(t, "fence_redfish")
	s := startRedfish(t, redfishsim.Options{})
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_redfish", Params: redfishParams(s)})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return &fencetest.Fixture{
			Device:      d.View(),
			Plugs:       []string{""},
			MissingPlug: "2",
			Truth:       func(context.Context, string) (fence.State, error) { return s.Truth("1"), nil },
			Settle:      200 * time.Millisecond,
		}
	})
}

func TestRedfishErrors(t *testing.T) {
	requireAgent(t, "fence_redfish")
	s := startRedfish(t, redfishsim.Options{})

	t.Run("WrongPassword", func(t *testing.T) {
		wrong := "Wr0ng-" + secret
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_redfish", Params: redfishParams(s, "password", wrong)})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		_, err = d.Status(ctxFor(t, time.Minute), "")
		require.Error(t, err)
		t.Logf("wrong password: %v", err)
		assert.NotContains(t, err.Error(), wrong)
		assert.NotContains(t, err.Error(), secret)
		err = d.Set(ctxFor(t, time.Minute), "", fence.StateOff)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), wrong)
		assert.Equal(t, fence.StateOn, s.Truth("1"))
	})

	t.Run("Refused", func(t *testing.T) {
		closed := redfishsim.New(redfishsim.Options{Password: secret})
		p := redfishParams(closed)
		closed.Close()
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_redfish", Params: p})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		err = d.Set(ctxFor(t, time.Minute), "", fence.StateOff)
		require.Error(t, err)
		t.Logf("connection refused: %v", err)
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		assert.True(t, fence.IsNotDone(err))
		assert.NotContains(t, err.Error(), secret)
	})

	t.Run("Hang", func(t *testing.T) {
		remove := s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang})
		defer remove()
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_redfish", Params: redfishParams(s), Timeout: 2 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		start := time.Now()
		err = d.Set(context.Background(), "", fence.StateOff)
		require.Error(t, err)
		t.Logf("hung responder, after %v: %v", time.Since(start).Round(time.Millisecond), err)
		assert.Less(t, time.Since(start), 12*time.Second)
		assert.True(t, fence.IsOutcomeUnknown(err))
		assert.NotContains(t, err.Error(), secret)
	})

	t.Run("ResetDropped", func(t *testing.T) {
		// The responder accepts the reset and never carries it out: the
		// agent times out waiting, and the engine does not confirm the
		// off.
		s.SetTruth("1", fence.StateOn)
		remove := s.Inject(redfishsim.Fault{Kind: redfishsim.FaultDropReset})
		defer remove()
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_redfish", Params: redfishParams(s)})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		m := &fence.Method{Name: "bmc", Node: "worker-1", Driver: "agent", Device: d.View(),
			Options: fence.Options{PowerTimeout: 3 * time.Second, PollInterval: 100 * time.Millisecond, IOTimeout: 8 * time.Second}}
		res, err := fence.Do(ctxFor(t, time.Minute), m, fence.ActionOff)
		require.Error(t, err)
		t.Logf("reset dropped: %v", err)
		assert.False(t, res.Fenced())
		assert.True(t, fence.IsOutcomeUnknown(err))
	})
}
