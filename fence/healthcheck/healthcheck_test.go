package healthcheck_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/healthcheck"
)

const (
	uuidW1 = "4c4c4544-0042-3510-8052-b4c04f4d3732"
	uuidW2 = "4c4c4544-0042-3510-8052-b4c04f4d3733"
)

// fixture: nodes w1 and w2, each with a BMC (its own fake device, whose
// machine is the node's) and an outlet of a shared fake PDU.
func fixture(t *testing.T) (cfg *config.Config, bmc1, bmc2, pdu *fake.Device) {
	t.Helper()
	p := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	bmc1 = fake.NewNamed(p+"-bmc1", fake.Options{Plugs: []string{"1"}, SystemUUID: uuidW1})
	bmc2 = fake.NewNamed(p+"-bmc2", fake.Options{Plugs: []string{"1"}, SystemUUID: uuidW1}) // w2's BMC cabled to w1's machine
	pdu = fake.NewNamed(p+"-pdu", fake.Options{Plugs: []string{"1", "2"}})
	t.Cleanup(func() { fake.Forget(p + "-bmc1"); fake.Forget(p + "-bmc2"); fake.Forget(p + "-pdu") })
	var cms []config.ConfigMap
	for i, n := range []string{"w1", "w2"} {
		plug := []string{"1", "2"}[i]
		bmc := []string{"bmc1", "bmc2"}[i]
		cms = append(cms,
			config.ConfigMap{Name: "fence-method-bmc-" + n, Data: map[string]string{"method.properties": "driver=fake\naddress=fake://" + p + "-" + bmc + "\nplug=1\npassword=s3cret\nstonith_status_sleep=0\n"}},
			config.ConfigMap{Name: "fence-method-pdu-" + n, Data: map[string]string{"method.properties": "driver=fake\naddress=fake://" + p + "-pdu\nplug=" + plug + "\nstonith_status_sleep=0\naction=off\n"}},
			config.ConfigMap{Name: "fence-config-" + n, Data: map[string]string{"config.properties": "node_name=" + n + "\npower_management=bmc\npower_management.2=pdu\n"}},
		)
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	return cfg, bmc1, bmc2, pdu
}

type nodes []controller.NodeHealth

func (n nodes) Nodes() []controller.NodeHealth { return n }

// recorder keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	checked []healthcheck.Result
	changes []string
	forgot  []healthcheck.Target
}

func (r *recorder) Checked(res healthcheck.Result, prev *healthcheck.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = append(r.checked, res)
	if prev == nil || prev.Up != res.Up {
		r.changes = append(r.changes, res.Node+"/"+res.Method+" up="+map[bool]string{true: "true", false: "false"}[res.Up])
	}
}

func (r *recorder) Forget(t healthcheck.Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgot = append(r.forgot, t)
}

// Every method of a node checked at once: the BMC that answers for another
// machine is down (WrongMachine); the PDU outlet up; a PDU that does not
// answer, down, with why and no credential; nothing switched.
func TestCheckNow(t *testing.T) {
	cfg, bmc1, _, pdu := fixture(t)
	rec := &recorder{}
	c := &healthcheck.Checker{Config: controller.StaticConfig{C: cfg}, Reporter: rec,
		Health: nodes{{Name: "w1", SystemUUID: uuidW1}, {Name: "w2", SystemUUID: uuidW2}}}

	res, err := c.CheckNow(t.Context(), "w1")
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, r := range res {
		assert.True(t, r.Up, "%+v", r)
		assert.Equal(t, "fake", r.Driver)
		assert.Equal(t, fence.StateOn, r.State)
	}

	res, err = c.CheckNow(t.Context(), "w2")
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, "bmc", res[0].Method)
	assert.False(t, res[0].Up)
	assert.True(t, res[0].WrongMachine)
	assert.Contains(t, res[0].Reason, "the device's machine is "+uuidW1+", the node's (its system UUID) is "+uuidW2)
	assert.True(t, res[1].Up, "the outlet has no identity to read")

	pdu.Inject(fake.Fault{Kind: fake.Down})
	res, err = c.CheckNow(t.Context(), "w1")
	require.NoError(t, err)
	assert.True(t, res[0].Up)
	assert.False(t, res[1].Up)
	assert.Contains(t, res[1].Reason, "unreachable")
	for _, r := range rec.checked {
		assert.NotContains(t, r.Reason, "s3cret")
	}
	assert.Equal(t, []string{"w1/bmc up=true", "w1/pdu up=true", "w2/bmc up=false", "w2/pdu up=true", "w1/pdu up=false"}, rec.changes,
		"a change is told once")
	for _, d := range []*fake.Device{bmc1, pdu} {
		assert.Zero(t, d.Calls(fake.OpSet), "a check switches nothing")
	}
	assert.Len(t, c.Results(), 4)
}

// Run checks every target within an interval, at most Concurrency at once,
// and forgets a target whose configuration is gone.
func TestRunSpreadsAndBounds(t *testing.T) {
	cfg, _, _, pdu := fixture(t)
	pdu.Inject(fake.Fault{Kind: fake.Delay, Op: fake.OpStatus, Delay: 200 * time.Millisecond})
	rec := &recorder{}
	src := &switchable{c: cfg}
	c := &healthcheck.Checker{Config: src, Reporter: rec,
		Options: healthcheck.Options{Interval: 2 * time.Second, Concurrency: 1, Rate: 100}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return len(c.Results()) == 4 }, 5*time.Second, 20*time.Millisecond)
	// One at a time: never two checks overlap.
	rec.mu.Lock()
	checked := append([]healthcheck.Result(nil), rec.checked...)
	rec.mu.Unlock()
	for i := 1; i < len(checked); i++ {
		assert.False(t, checked[i].At.Before(checked[i-1].At.Add(checked[i-1].Duration)), "checks %d and %d overlap", i-1, i)
	}

	// w2's configuration goes: its targets are forgotten.
	w1, err := config.Parse([]config.ConfigMap{
		config.ConfigMap{Name: "fence-method-bmc-w1", Data: map[string]string{"method.properties": "driver=fake\naddress=fake://x\nplug=1\n"}},
		config.ConfigMap{Name: "fence-config-w1", Data: map[string]string{"config.properties": "node_name=w1\npower_management=bmc\n"}}})
	require.NoError(t, err)
	src.set(w1)
	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.forgot) == 3
	}, 5*time.Second, 20*time.Millisecond)
	assert.ElementsMatch(t, []healthcheck.Target{{Node: "w1", Method: "pdu"}, {Node: "w2", Method: "bmc"}, {Node: "w2", Method: "pdu"}}, rec.forgot)
	cancel()
	require.NoError(t, <-done)
}

type switchable struct {
	mu sync.Mutex
	c  *config.Config
}

func (s *switchable) Config(context.Context) (*config.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c, nil
}

func (s *switchable) set(c *config.Config) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}

// Options out of range are refused with the field's name.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    healthcheck.Options
		want string
	}{
		{healthcheck.Options{Interval: time.Millisecond}, "Interval 1ms is out of range"},
		{healthcheck.Options{Interval: 48 * time.Hour}, "Interval 48h0m0s is out of range"},
		{healthcheck.Options{Concurrency: -1}, "Concurrency -1 is out of range"},
		{healthcheck.Options{Rate: -2}, "Rate -2 is out of range"},
		{healthcheck.Options{Interval: time.Minute, Timeout: 2 * time.Minute}, "Timeout 2m0s is out of range"},
	} {
		assert.ErrorContains(t, tc.o.Validate(), tc.want)
		c := &healthcheck.Checker{Options: tc.o}
		assert.ErrorContains(t, c.Run(t.Context()), tc.want, "Run refuses it")
	}
	assert.NoError(t, healthcheck.Options{}.Validate())
}
