package fence_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// nullDevice is the cheapest possible device: a state in an atomic, so a
// benchmark through it measures the engine alone.
type nullDevice struct{ on atomic.Bool }

func (d *nullDevice) Status(ctx context.Context, plug string) (fence.State, error) {
	if d.on.Load() {
		return fence.StateOn, nil
	}
	return fence.StateOff, nil
}

func (d *nullDevice) Set(ctx context.Context, plug string, s fence.State) error {
	d.on.Store(s == fence.StateOn)
	return nil
}

// BenchmarkVerifiedOff measures one verified off (status, set, confirming
// status) and the verified on that restores the plug, per iteration pair:
// each op is one verified action.
func BenchmarkVerifiedOff(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, d fence.Device, uuid ...string) {
		m := &fence.Method{Name: "bench", Node: "node-1", Driver: "bench", Device: d, Plug: "1"}
		if len(uuid) > 0 {
			m.SystemUUID = uuid[0]
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			a := fence.ActionOff
			if i%2 == 1 {
				a = fence.ActionOn
			}
			if _, err := fence.Do(ctx, m, a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("device=null", func(b *testing.B) {
		d := &nullDevice{}
		d.on.Store(true)
		run(b, d)
	})
	b.Run("device=fake", func(b *testing.B) { run(b, fake.New(fake.Options{})) })
	// The identity check before each switch: one more read of the device
	// (an in-memory one here; a BMC's is a request).
	const uuid = "4c4c4544-0032-3310-8051-b7c04f333532"
	b.Run("device=fake/identity", func(b *testing.B) { run(b, fake.New(fake.Options{SystemUUID: uuid}), uuid) })
}

// BenchmarkDeviceRoundTrip is the device's part of a verified action on the
// fake (status, set, status) without the engine, to subtract from
// BenchmarkVerifiedOff/device=fake.
func BenchmarkDeviceRoundTrip(b *testing.B) {
	ctx := context.Background()
	d := fake.New(fake.Options{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		want := fence.StateOff
		if i%2 == 1 {
			want = fence.StateOn
		}
		if _, err := d.Status(ctx, "1"); err != nil {
			b.Fatal(err)
		}
		if err := d.Set(ctx, "1", want); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Status(ctx, "1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLevels measures a two-level topology whose first level fails
// at once (device down) and whose second fences.
func BenchmarkLevels(b *testing.B) {
	ctx := context.Background()
	down := fake.New(fake.Options{})
	down.Inject(fake.Fault{Op: fake.OpAny, Kind: fake.Down})
	up := &nullDevice{}
	levels := []fence.Level{
		{Methods: []*fence.Method{{Name: "ipmi", Node: "n", Device: down}}},
		{Methods: []*fence.Method{{Name: "pdu", Node: "n", Device: up, Plug: "1"}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		up.on.Store(true)
		if _, err := fence.DoLevels(ctx, "n", levels, fence.ActionOff); err != nil {
			b.Fatal(err)
		}
	}
}
