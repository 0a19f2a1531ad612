package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fence/flow"
)

func newClock() *fencetest.Clock {
	return fencetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// health is a settable Health.
type health struct {
	mu    sync.Mutex
	nodes []controller.NodeHealth
}

func (h *health) Nodes() []controller.NodeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nodes)
}

func (h *health) set(name string, ready bool, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.nodes {
		if h.nodes[i].Name == name {
			h.nodes[i].Ready, h.nodes[i].Since = ready, since
			return
		}
	}
	h.nodes = append(h.nodes, controller.NodeHealth{Name: name, Ready: ready, Since: since})
}

// pods records the pod treatment.
type pods struct {
	mu       sync.Mutex
	calls    []string
	released map[string]flow.Release
	fail     error
	// hook, when set, is called (unlocked) at every Release.
	hook func(node string, r flow.Release)
}

func (p *pods) Release(ctx context.Context, node string, r flow.Release) error {
	if p.hook != nil {
		p.hook(node, r)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.calls = append(p.calls, "release "+node+" "+string(r))
	if p.released == nil {
		p.released = map[string]flow.Release{}
	}
	p.released[node] = r
	return nil
}

func (p *pods) Restore(ctx context.Context, node string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.calls = append(p.calls, "restore "+node)
	delete(p.released, node)
	return nil
}

func (p *pods) state(node string) flow.Release {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.released[node]
}

// events records events.
type events struct {
	mu  sync.Mutex
	evs []string
}

func (e *events) Event(node string, warning bool, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, node+" "+reason+": "+message)
}

func (e *events) reasons() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, s := range e.evs {
		out = append(out, strings.SplitN(s, ":", 2)[0])
	}
	return out
}

func (e *events) has(sub string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.evs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// fixture is a small cluster: nodes whose FC ports are plugs of one fake
// switch and whose power outlets are plugs of one fake PDU.
type fixture struct {
	t      *testing.T
	clock  *fencetest.Clock
	health *health
	store  *controller.MemoryStore
	pods   *pods
	events *events
	fc     *fake.Device
	pdu    *fake.Device
	pdu2   *fake.Device // the second PDU of the two-PDU shapes
	cfg    *config.Config
	names  string // prefix of the fake devices' names
}

// Shapes of the power management step of the fixture's nodes.
const (
	// shapeOffOn: power_management=pdu-off pdu-on (action=off, action=on),
	// the design's own shape.
	shapeOffOn = "off-on"
	// shapeReboot: power_management=pdu-a pdu-b, both action=reboot: a
	// node fed by two PDUs.
	shapeReboot = "two-pdus-reboot"
	// shapeNoAction: the same two PDUs without action=: the step's reboot.
	shapeNoAction = "two-pdus-no-action"
	// shapeOffOnly: power_management=pdu-off: the node stays off.
	shapeOffOnly = "off-only"
)

// configMaps returns the node-fencing design's ConfigMaps for nodes
// node-1..node-n: FC port i and outlet i; isolation fc-off, power pdu-off
// pdu-on, recovery fc-on.
func configMaps(prefix string, n int, kdump bool) []config.ConfigMap {
	return configMapsShaped(prefix, n, kdump, shapeOffOn)
}

// configMapsShaped is configMaps with the power management step in one of
// the shapes above; the second PDU is the device prefix-pdu2.
func configMapsShaped(prefix string, n int, kdump bool, shape string) []config.ConfigMap {
	cms := []config.ConfigMap{
		{Name: "fence-method-template-fc", Data: map[string]string{"template.properties": "name=fc\ndriver=fake\naddress=fake://" + prefix + "-fc\npassword=fc-secret\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
		{Name: "fence-method-template-pdu", Data: map[string]string{"template.properties": "name=pdu\ndriver=fake\naddress=fake://" + prefix + "-pdu\npassword=pdu-secret\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
		{Name: "fence-method-template-pdu2", Data: map[string]string{"template.properties": "name=pdu2\ndriver=fake\naddress=fake://" + prefix + "-pdu2\npassword=pdu-secret\nstonith_status_sleep=0\npower_timeout=0.3\n"}},
	}
	for i := 1; i <= n; i++ {
		node := fmt.Sprintf("node-%d", i)
		ms := []struct{ name, tmpl, action string }{
			{"fc-off", "fc", "off"}, {"fc-on", "fc", "on"}, {"pdu-off", "pdu", "off"}, {"pdu-on", "pdu", "on"},
		}
		power := "pdu-off pdu-on"
		switch shape {
		case shapeReboot:
			ms = append(ms[:2], struct{ name, tmpl, action string }{"pdu-a", "pdu", "reboot"}, struct{ name, tmpl, action string }{"pdu-b", "pdu2", "reboot"})
			power = "pdu-a pdu-b"
		case shapeOffOnly:
			power = "pdu-off"
		case shapeNoAction:
			ms = append(ms[:2], struct{ name, tmpl, action string }{"pdu-a", "pdu", ""}, struct{ name, tmpl, action string }{"pdu-b", "pdu2", ""})
			power = "pdu-a pdu-b"
		}
		for _, m := range ms {
			body := fmt.Sprintf("template=%s\nplug=%d\n", m.tmpl, i)
			if m.action != "" {
				body += "action=" + m.action + "\n"
			}
			cms = append(cms, config.ConfigMap{Name: "fence-method-" + m.name + "-" + node, Data: map[string]string{"method.properties": body}})
		}
		body := "node_name=" + node + "\nisolation=fc-off\npower_management=" + power + "\nrecovery=fc-on\n"
		if kdump {
			body += "kdump=yes\n"
		}
		cms = append(cms, config.ConfigMap{Name: "fence-config-" + node, Data: map[string]string{"config.properties": body}})
	}
	return cms
}

func newFixture(t *testing.T, n int) *fixture {
	return newFixtureWith(t, n, false)
}

func newFixtureWith(t *testing.T, n int, kdump bool) *fixture {
	return newFixtureShaped(t, n, kdump, shapeOffOn)
}

func newFixtureShaped(t *testing.T, n int, kdump bool, shape string) *fixture {
	t.Helper()
	prefix := strings.NewReplacer("/", "-", " ", "-", "=", "-").Replace(strings.ToLower(t.Name()))
	cfg, err := config.Parse(configMapsShaped(prefix, n, kdump, shape))
	require.NoError(t, err)
	f := &fixture{t: t, clock: newClock(), health: &health{}, store: controller.NewMemoryStore(),
		pods: &pods{}, events: &events{}, cfg: cfg, names: prefix}
	plugs := make([]string, n)
	for i := range plugs {
		plugs[i] = fmt.Sprint(i + 1)
	}
	f.fc = fake.NewNamed(prefix+"-fc", fake.Options{Plugs: plugs})
	f.pdu = fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: plugs})
	f.pdu2 = fake.NewNamed(prefix+"-pdu2", fake.Options{Plugs: plugs})
	t.Cleanup(func() { fake.Forget(prefix + "-fc"); fake.Forget(prefix + "-pdu"); fake.Forget(prefix + "-pdu2") })
	for i := 1; i <= n; i++ {
		f.health.set(fmt.Sprintf("node-%d", i), true, f.clock.Now().Add(-time.Hour))
	}
	return f
}

// controller returns a controller over the fixture; store may wrap the
// fixture's store.
func (f *fixture) controller(store controller.Store) *controller.Controller {
	if store == nil {
		store = f.store
	}
	return &controller.Controller{
		Health: f.health, Store: store, Config: controller.StaticConfig{C: f.cfg},
		Pods: f.pods, Events: f.events, Now: f.clock.Now,
		Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute,
			Flow: flow.Options{PowerDelay: 5 * time.Minute, PollInterval: 30 * time.Second, MaxPolls: 4,
				RetryBackoff: 10 * time.Second, MaxRetries: 2, MinOff: -1}},
	}
}

// pass runs one pass and waits for its workers.
func pass(t *testing.T, c *controller.Controller) {
	t.Helper()
	require.NoError(t, c.Pass(context.Background()))
	c.Wait()
}

// down makes nodes not ready now, then moves the clock 2 min on: past the
// controller's UnhealthyAfter (1 min).
func (f *fixture) down(nodes ...string) {
	for _, n := range nodes {
		f.health.set(n, false, f.clock.Now())
	}
	f.clock.Add(2 * time.Minute)
}

func (f *fixture) record(node string) *flow.NodeFence {
	r, err := f.store.Get(context.Background(), node)
	if errors.Is(err, controller.ErrNotFound) {
		return nil
	}
	require.NoError(f.t, err)
	return r
}

// sets counts the switches of a plug to s.
func sets(d *fake.Device, plug string, s fence.State) int {
	h := d.History(plug)
	n := 0
	for i := 1; i < len(h); i++ {
		if h[i] == s && h[i-1] != s {
			n++
		}
	}
	return n
}

// waitingPods is a pod treatment whose pods go some time after their
// release, as with the out-of-service taint (the controller manager's pod
// garbage collector deletes them): Gone is true from the after-th check on.
type waitingPods struct {
	*pods
	after int
	mu    sync.Mutex
	n     map[string]int
	// hook, when set, is called (unlocked) at every Gone with its answer.
	hook func(node string, gone bool)
}

func (w *waitingPods) Gone(ctx context.Context, node string, r flow.Release) (bool, string, error) {
	w.mu.Lock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[node]++
	gone := w.n[node] >= w.after
	w.mu.Unlock()
	if w.hook != nil {
		w.hook(node, gone)
	}
	if gone {
		return true, "", nil
	}
	return false, "1 pod left", nil
}
