package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// noBoot is a device without the boot capability.
type noBoot struct{ fence.Device }

func TestSetBootDevice(t *testing.T) {
	dev := fake.New(fake.Options{Plugs: []string{""}})
	m := &fence.Method{Name: "bmc", Node: "node-1", Driver: "fake", Device: dev,
		Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: time.Second}}
	require.NoError(t, fence.SetBootDevice(t.Context(), m, fence.BootPXE))
	assert.Equal(t, fence.BootPXE, dev.BootDevice(""))
	_, err := fence.Do(t.Context(), m, fence.ActionReboot)
	require.NoError(t, err)
	assert.Equal(t, []fence.BootDevice{fence.BootPXE}, dev.Boots(""), "the reboot booted from the network")
	_, err = fence.Do(t.Context(), m, fence.ActionReboot)
	require.NoError(t, err)
	assert.Equal(t, []fence.BootDevice{fence.BootPXE, fence.BootDisk}, dev.Boots(""), "next boot only")

	err = fence.SetBootDevice(t.Context(), &fence.Method{Name: "pdu", Node: "node-1", Device: noBoot{dev}}, fence.BootPXE)
	assert.ErrorIs(t, err, fence.ErrUnsupported)
	assert.True(t, fence.IsNotDone(err))
	assert.Contains(t, err.Error(), "method pdu")

	err = fence.SetBootDevice(t.Context(), m, "usb")
	assert.ErrorIs(t, err, fence.ErrConfig)

	dev.Inject(fake.Fault{Op: fake.OpBoot, Kind: fake.Hang})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = fence.SetBootDevice(ctx, m, fence.BootPXE)
	require.Error(t, err)
	assert.True(t, fence.IsOutcomeUnknown(err) || errors.Is(err, context.DeadlineExceeded), "%v", err)

	d, err := fence.ParseBootDevice(" PXE ")
	require.NoError(t, err)
	assert.Equal(t, fence.BootPXE, d)
}
