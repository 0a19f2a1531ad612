package agent

import (
	"context"

	"github.com/fencekit/fencekit/fence"
)

// View returns the device as a fence.Device whose optional interfaces are
// exactly the agent's capabilities: fence.Cycler when it offers a native
// cycle (Meta.CanCycle), fence.Lister when it lists its plugs
// (Meta.CanList), fence.Monitor when it has the monitor action; always
// io.Closer. The engine finds capabilities by type assertion, so this is
// what a fence.Method should hold; the driver's Open returns it. Unwrap
// recovers the *Device.
func (d *Device) View() fence.Device {
	c := core{d}
	cy, li, mo := d.meta.CanCycle(), d.meta.CanList(), d.meta.HasAction("monitor")
	switch {
	case cy && li && mo:
		return struct {
			core
			cycler
			lister
			monitor
		}{c, cycler{d}, lister{d}, monitor{d}}
	case cy && li:
		return struct {
			core
			cycler
			lister
		}{c, cycler{d}, lister{d}}
	case cy && mo:
		return struct {
			core
			cycler
			monitor
		}{c, cycler{d}, monitor{d}}
	case li && mo:
		return struct {
			core
			lister
			monitor
		}{c, lister{d}, monitor{d}}
	case cy:
		return struct {
			core
			cycler
		}{c, cycler{d}}
	case li:
		return struct {
			core
			lister
		}{c, lister{d}}
	case mo:
		return struct {
			core
			monitor
		}{c, monitor{d}}
	}
	return c
}

// Unwrap returns the *Device behind a View, or nil for any other device.
func Unwrap(dev fence.Device) *Device {
	switch v := dev.(type) {
	case *Device:
		return v
	case interface{ agentDevice() *Device }:
		return v.agentDevice()
	}
	return nil
}

// core is what every view has: fence.Device and io.Closer.
type core struct{ d *Device }

// Status is Device.Status.
func (c core) Status(ctx context.Context, plug string) (fence.State, error) {
	return c.d.Status(ctx, plug)
}

// Set is Device.Set.
func (c core) Set(ctx context.Context, plug string, s fence.State) error {
	return c.d.Set(ctx, plug, s)
}

// Close is Device.Close.
func (c core) Close() error { return c.d.Close() }

func (c core) agentDevice() *Device { return c.d }

// cycler adds fence.Cycler.
type cycler struct{ d *Device }

// Cycle is Device.Cycle.
func (c cycler) Cycle(ctx context.Context, plug string) error { return c.d.Cycle(ctx, plug) }

// lister adds fence.Lister.
type lister struct{ d *Device }

// List is Device.List.
func (l lister) List(ctx context.Context) ([]fence.Plug, error) { return l.d.List(ctx) }

// monitor adds fence.Monitor.
type monitor struct{ d *Device }

// Monitor is Device.Monitor.
func (m monitor) Monitor(ctx context.Context) error { return m.d.Monitor(ctx) }
