package fencetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
)

// harness runs the suite on a fake device, as wrap presents it.
func harness(o fake.Options, wrap func(*fake.Device) fence.Device) fencetest.Harness {
	return func(t *testing.T) *fencetest.Fixture {
		d := fake.New(o)
		t.Cleanup(func() { d.Close() })
		return &fencetest.Fixture{
			Device:      wrap(d),
			Plugs:       d.Plugs(),
			MissingPlug: "99",
			Truth: func(_ context.Context, plug string) (fence.State, error) {
				return d.Truth(plug), nil
			},
			Settle: o.SwitchDelay,
		}
	}
}

func TestSuitePassesOnTheFake(t *testing.T) {
	fencetest.Run(t, harness(fake.Options{Plugs: []string{"1", "2", "3"}}, func(d *fake.Device) fence.Device { return d }))
}

// bare has no capability beyond fence.Device.
type bare struct{ d *fake.Device }

func (b bare) Status(ctx context.Context, plug string) (fence.State, error) {
	return b.d.Status(ctx, plug)
}

func (b bare) Set(ctx context.Context, plug string, s fence.State) error {
	return b.d.Set(ctx, plug, s)
}

func TestSuiteSkipsMissingCapabilities(t *testing.T) {
	fencetest.Run(t, harness(fake.Options{Plugs: []string{"1"}}, func(d *fake.Device) fence.Device { return bare{d} }))
}

// Broken drivers: each breaks one rule of the contract.

// unknownPlugState answers a state for a plug the device does not have.
type unknownPlugState struct{ *fake.Device }

func (u unknownPlugState) Status(ctx context.Context, plug string) (fence.State, error) {
	if plug == "99" {
		return fence.StateOn, nil
	}
	return u.Device.Status(ctx, plug)
}

// ignoresContext acts and answers whatever its context.
type ignoresContext struct{ *fake.Device }

func (i ignoresContext) Status(_ context.Context, plug string) (fence.State, error) {
	return i.Device.Status(context.Background(), plug)
}

func (i ignoresContext) Set(_ context.Context, plug string, s fence.State) error {
	return i.Device.Set(context.Background(), plug, s)
}

// actsButSaysNotDone switches the plug even when its context is done, and
// then claims it surely did not.
type actsButSaysNotDone struct{ *fake.Device }

func (a actsButSaysNotDone) Set(ctx context.Context, plug string, s fence.State) error {
	err := a.Device.Set(context.Background(), plug, s)
	if ctx.Err() != nil {
		return fence.NotDone(ctx.Err())
	}
	return err
}

// leaks switches the plug before too.
type leaks struct{ *fake.Device }

func (l leaks) Set(ctx context.Context, plug string, s fence.State) error {
	if err := l.Device.Set(ctx, plug, s); err != nil {
		return err
	}
	plugs := l.Plugs()
	if i := slices.Index(plugs, plug); i > 0 {
		l.SetTruth(plugs[i-1], s)
	}
	return nil
}

// shortList leaves the last plug out of its list.
type shortList struct{ *fake.Device }

func (s shortList) List(ctx context.Context) ([]fence.Plug, error) {
	plugs, err := s.Device.List(ctx)
	if len(plugs) > 0 {
		plugs = plugs[:len(plugs)-1]
	}
	return plugs, err
}

// allOnList reports every plug on.
type allOnList struct{ *fake.Device }

func (a allOnList) List(ctx context.Context) ([]fence.Plug, error) {
	plugs, err := a.Device.List(ctx)
	for i := range plugs {
		plugs[i].State = fence.StateOn
	}
	return plugs, err
}

// closeTwicePanics panics on a second Close.
type closeTwicePanics struct {
	*fake.Device
	closed *bool
}

func (c closeTwicePanics) Close() error {
	if *c.closed {
		panic("closed twice")
	}
	*c.closed = true
	return nil
}

// unhealthy fails its health check.
type unhealthy struct{ *fake.Device }

func (unhealthy) Monitor(context.Context) error { return errors.New("sick") }

var broken = map[string]struct {
	wrap func(*fake.Device) fence.Device
	opts fake.Options
	// fails are the subtests that must fail; mayFail those that may
	// (their failure depends on timing); every other must pass.
	fails, mayFail []string
}{
	"unknown-plug-state": {
		wrap:  func(d *fake.Device) fence.Device { return unknownPlugState{d} },
		fails: []string{"UnknownPlug"},
	},
	"ignores-context": {
		wrap:  func(d *fake.Device) fence.Device { return ignoresContext{d} },
		fails: []string{"Context"},
	},
	"acts-but-says-not-done": {
		wrap:  func(d *fake.Device) fence.Device { return actsButSaysNotDone{d} },
		fails: []string{"Context"},
	},
	"leaks": {
		wrap:    func(d *fake.Device) fence.Device { return leaks{d} },
		fails:   []string{"Isolation", "List"},
		mayFail: []string{"Concurrent"},
	},
	"short-list": {
		wrap:  func(d *fake.Device) fence.Device { return shortList{d} },
		fails: []string{"List"},
	},
	"all-on-list": {
		wrap:  func(d *fake.Device) fence.Device { return allOnList{d} },
		fails: []string{"List"},
	},
	"close-twice-panics": {
		wrap:  func(d *fake.Device) fence.Device { return closeTwicePanics{d, new(bool)} },
		fails: []string{"Close"},
	},
	"unhealthy": {
		wrap:  func(d *fake.Device) fence.Device { return unhealthy{d} },
		fails: []string{"Monitor"},
	},
	// Switching after 300 ms while the fixture (below) claims 0: Truth is
	// read once after each Set.
	"slow-switch": {
		wrap:  func(d *fake.Device) fence.Device { return d },
		opts:  fake.Options{SwitchDelay: 300 * time.Millisecond},
		fails: []string{"RoundTrip", "Idempotent", "Isolation", "Concurrent", "Do", "List"},
	},
}

const brokenEnv = "FENCETEST_BROKEN"

// TestBrokenHelper runs the suite on one broken driver, when run as a
// child of TestSuiteCatchesBrokenDrivers.
func TestBrokenHelper(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenDrivers")
	}
	b := broken[name]
	o := b.opts
	if o.Plugs == nil {
		o.Plugs = []string{"1", "2", "3"}
	}
	h := harness(o, b.wrap)
	if name == "slow-switch" {
		inner := h
		h = func(t *testing.T) *fencetest.Fixture {
			f := inner(t)
			f.Settle = 0 // the fixture understates the delay
			return f
		}
	}
	fencetest.Run(t, h)
}

// TestSuiteCatchesBrokenDrivers runs the suite on drivers that each break
// the contract, in a child process (a failing suite fails its test), and
// checks that the right subtests fail, and only those.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in a child")
	}
	all := []string{"RoundTrip", "Idempotent", "Isolation", "UnknownPlug", "Context", "Concurrent", "Do", "List", "Monitor", "Close"}
	failLine := regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenHelper/(\w+) `)
	passLine := regexp.MustCompile(`(?m)^\s*--- (?:PASS|SKIP): TestBrokenHelper/(\w+) `)
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenHelper$", "-test.v", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite passed a broken driver:\n%s", out)
			var failed, passed []string
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, m[1])
			}
			for _, m := range passLine.FindAllStringSubmatch(string(out), -1) {
				passed = append(passed, m[1])
			}
			failed = slices.DeleteFunc(failed, func(s string) bool { return slices.Contains(b.mayFail, s) })
			passed = slices.DeleteFunc(passed, func(s string) bool { return slices.Contains(b.mayFail, s) })
			slices.Sort(failed)
			want := slices.Sorted(slices.Values(b.fails))
			assert.Equal(t, want, failed, "failed subtests; output:\n%s", out)
			assert.Len(t, passed, len(all)-len(want)-len(b.mayFail), "passed or skipped subtests; output:\n%s", out)
		})
	}
}

func TestFixtureChecked(t *testing.T) {
	// A harness with no plugs fails the suite's subtests; checked in a
	// child like the broken drivers.
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in a child")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestNoPlugsHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"=no-plugs")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "Fixture.Plugs is empty")
}

func TestNoPlugsHelper(t *testing.T) {
	if os.Getenv(brokenEnv) != "no-plugs" {
		t.Skip("run by TestFixtureChecked")
	}
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		d := fake.New(fake.Options{})
		return &fencetest.Fixture{Device: d, Truth: func(context.Context, string) (fence.State, error) { return d.Truth("1"), nil }}
	})
}
