package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fakedrv "github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
)

// These tests run the real fence_dummy (--type file), which keeps its
// state in a file that the tests read as the truth.

// dummyTruth reads fence_dummy's status file as fence_dummy does: a
// missing file is off.
func dummyTruth(path string) (fence.State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fence.StateOff, nil
	}
	if err != nil {
		return fence.StateUnknown, err
	}
	return fakedrv.ParseStateFile(b)
}

// openDummy opens fence_dummy on a fresh status file holding initial.
func openDummy(t testing.TB, initial string) (*Device, string) {
	t.Helper()
	requireAgent(t, "fence_dummy")
	file := filepath.Join(t.TempDir(), "status")
	if initial != "" {
		require.NoError(t, os.WriteFile(file, []byte(initial), 0o644))
	}
	d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_dummy", Params: fence.NewParams("type", "file", "status_file", file)})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, file
}

func TestConformanceDummy(t *testing.T) {
	requireAgent(t, "fence_dummy")
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		d, file := openDummy(t, "on")
		return &fencetest.Fixture{
			Device:      d.View(),
			Plugs:       []string{""},
			MissingPlug: "2",
			Truth:       func(context.Context, string) (fence.State, error) { return dummyTruth(file) },
		}
	})
}

func TestDummyActions(t *testing.T) {
	d, file := openDummy(t, "on")
	ctx := ctxFor(t, time.Minute)
	st, err := d.Status(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)

	require.NoError(t, d.Set(ctx, "", fence.StateOff))
	st, err = dummyTruth(file)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "fence_dummy wrote off")
	st, err = d.Status(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "exit status 2 and Status: OFF")
	require.NoError(t, d.Set(ctx, "", fence.StateOff), "Success: Already OFF")
	require.NoError(t, d.Set(ctx, "", fence.StateOn))
	require.NoError(t, d.Monitor(ctx))

	m := &fence.Method{Name: "dummy", Node: "node-1", Driver: "agent", Device: d.View(),
		Options: fence.Options{PollInterval: 20 * time.Millisecond, PowerTimeout: 10 * time.Second}}
	res, err := fence.Do(ctx, m, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced(), "a reboot by off and on confirms the off")
	assert.Equal(t, fence.StateOn, res.State)
	res, err = fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())

	// Garbage in the status file: fence_dummy says "Unable to obtain
	// correct plug status": no state, and an off is not done.
	require.NoError(t, os.WriteFile(file, []byte("garbage"), 0o644))
	st, err = d.Status(ctx, "")
	assert.ErrorIs(t, err, fence.ErrBadState)
	assert.Equal(t, fence.StateUnknown, st)
	assert.Contains(t, err.Error(), "Failed: Unable to obtain correct plug status or plug is not available")
	res, err = fence.Do(ctx, m, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res.Fenced())
	assert.True(t, fence.IsNotDone(err), "the first read failed, nothing was set: %v", err)
}

// TestDummyRegistry opens fence_dummy through fence's registry, as a
// configuration does, and fences through fence.Do.
func TestDummyRegistry(t *testing.T) {
	requireAgent(t, "fence_dummy")
	file := filepath.Join(t.TempDir(), "status")
	p := fence.NewParams("driver", "agent", "agent", "fence_dummy", "type", "file", "status_file", file,
		"power_timeout", "5", "stonith_status_sleep", "0.05", "io_timeout", "30", "agent_timeout", "30")
	m, err := fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-2", Name: "dummy", Driver: "agent", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { Unwrap(m.Device).Close() })
	assert.Equal(t, "agent", m.Driver)
	res, err := fence.Do(ctxFor(t, time.Minute), m, fence.ActionOn)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, res.State)
	res, err = fence.Do(ctxFor(t, time.Minute), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	truth, err := dummyTruth(file)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, truth)

	// Parameters the agent lacks are refused, naming the key.
	_, err = fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-2", Name: "dummy", Driver: "agent", Params: p.Merge(fence.NewParams("ip", "10.0.0.1", "password", secret))})
	require.Error(t, err)
	var fe *fence.Error
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, []string{"ip", "password"}, fe.Field)
	assert.NotContains(t, err.Error(), secret)
	_, err = fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-2", Name: "dummy", Driver: "agent", Params: fence.NewParams("agent", "../fence_dummy")})
	require.Error(t, err)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "agent", fe.Field)
	_, err = fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-2", Name: "dummy", Driver: "agent", Params: fence.NewParams("agent", "fence_dummy", "agent_timeout", "0")})
	require.Error(t, err)
}

// TestDummyHang makes fence_dummy sleep (random_sleep_range): the call
// ends at its deadline, with an error.
func TestDummyHang(t *testing.T) {
	requireAgent(t, "fence_dummy")
	file := filepath.Join(t.TempDir(), "status")
	d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_dummy", Timeout: time.Second,
		Params: fence.NewParams("type", "file", "status_file", file, "random_sleep_range", "1000")})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	start := time.Now()
	err = d.Set(context.Background(), "", fence.StateOff)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 11*time.Second)
	assert.True(t, fence.IsOutcomeUnknown(err))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "fence_dummy")
}
