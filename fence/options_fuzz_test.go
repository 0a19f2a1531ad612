package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

// FuzzOptionsFromParams feeds arbitrary values to the engine's numeric
// parameters (retry_on, retry_off, delay, power_timeout, power_wait,
// stonith_status_sleep, io_timeout): the options are refused with a
// *ParamError naming the key, or lie within their bounds; and an action
// with them on a device that never confirms (its sets are ignored) never
// succeeds, whatever the numbers.
func FuzzOptionsFromParams(f *testing.F) {
	for _, v := range []string{"0", "-1", "9223372036854775807", "NaN", "1e309", "1e9", "3600", "100", "101", "0.001", "1500ms", "-0", "+5", " 7 "} {
		for _, k := range []string{"retry_on", "retry_off", "delay", "power_timeout", "power_wait", "stonith_status_sleep", "io_timeout"} {
			f.Add(k, v)
		}
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		o, err := fence.OptionsFromParams(fence.Options{}, fence.NewParams(key, value))
		if err != nil {
			var pe *fence.ParamError
			if !errors.As(err, &pe) || pe.Key == "" {
				t.Fatalf("%s=%q: error %v names no parameter", key, value, err)
			}
			return
		}
		if o.RetryOn > fence.MaxRetry || o.RetryOff > fence.MaxRetry || o.RetryOff < 0 || o.RetryOn < fence.NoRetry {
			t.Fatalf("%s=%q: retries out of bounds: %+v", key, value, o)
		}
		for _, d := range []time.Duration{o.Delay, o.PowerTimeout, o.PowerWait, o.PollInterval, o.IOTimeout} {
			if d < 0 || d > fence.MaxWait {
				t.Fatalf("%s=%q: a duration out of bounds: %+v", key, value, o)
			}
		}
		// Nothing reports success without the device confirming it.
		dev := fake.New(fake.Options{})
		dev.Inject(fake.Fault{Op: fake.OpSet, Kind: fake.Ignore})
		o.Delay = min(o.Delay, time.Millisecond)
		o.PowerWait = min(o.PowerWait, time.Millisecond)
		o.PollInterval = max(min(o.PollInterval, time.Millisecond), time.Microsecond)
		o.PowerTimeout = min(o.PowerTimeout, 5*time.Millisecond)
		m := &fence.Method{Name: "m", Node: "n", Device: dev, Options: o}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		for _, a := range []fence.Action{fence.ActionOff, fence.ActionReboot} {
			res, err := fence.Do(ctx, m, a)
			if err == nil || res.Fenced() {
				t.Fatalf("%s=%q: %v succeeded on a device that never switched: %+v", key, value, a, res)
			}
		}
	})
}
