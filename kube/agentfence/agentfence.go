// Package agentfence counts a node off on the word of the node agents
// (cmd/fencekit-agent) when nothing can switch it: a fence driver
// ("nodeagent") whose proof is time, as SBD's is.
//
// A node's agent fences the node itself once it has not been healthy
// (reached the API server or its quorum of agents) for its self-fence
// timeout T, counted from the start of its last healthy look: it never
// kicks its watchdog past that, and the watchdog resets the machine within
// its timeout W of the last kick. Each agent says in its Lease what it
// runs with (T, W, its look interval I, the peers it counts its quorum
// among, its boot, whether it still guards the node), and a restarted
// agent goes on from its state on the node: it never runs longer cut off
// than its Lease says while the Lease is unchanged.
//
// An off writes a fence request (a fresh identity under the node's name
// in the ConfigMap fencekit-agent-requests, which only the controller
// writes); every agent reads it at each look, and reports in its own
// Lease how long since it first saw it and since it last heard the node's
// signed heartbeat. The node counts off once, as this process observed it:
//
//   - the node's agent Lease is the one it read just before the request
//     (c0: its agent has renewed nothing since, so no look of the node that
//     reached the API server began after c0), and says the agent runs, for
//     the boot the Node still reports, with timings within the method's
//     limits;
//   - of the peers that Lease lists, enough for the node to have no quorum
//     among them (more than half of the cluster they make with it) report
//     on this request that they have not heard the node since before they
//     saw it, each report of an agent's run counted from when this process
//     first saw one (c_p, before which that run saw the request); X is the
//     latest of c0 and those;
//   - each of them saw the request, as its own report says (less 1% for
//     its clock's rate), until past X + T + the margin (the request was
//     written after cw, so cw + seenFor is before the report);
//   - and this process's clock read X + T + 3W + the margin before the
//     reads that showed all of that.
//
// Then every look of the node that began after X was cut off, so its last
// healthy look began before X, its agent never kicked the watchdog after
// X + T, and the watchdog reset the machine by X + T + W (or its agent
// died, and the watchdog fired the same). The second W allows for an
// agent that stalled between its last look at the clock and its kick (SBD
// counts twice the watchdog's timeout for the same reason), the third for
// the kernel's own kick when the agent, fencing the node, closes the
// device (a close without the magic character pings the watchdog); the
// margin (two intervals, the longest a look may take and count, and 2%)
// for a late acknowledgement and the clocks' rates. A Lease that says the agent stopped (a
// clean stop disarms the watchdog only once its Lease says so), a node
// that booted again, a Lease renewed since the request, timings beyond the
// method's or a Lease without them are refused with the reason. Clocks are
// never compared across machines: every time is this process's monotonic
// clock, or a duration an agent measured with its own. A controller that
// restarts starts a new request, and waits the whole time again.
//
// Once proven, the request says so ("ID proven RESOURCEVERSION BOOT"), so
// that any process reads the node off while the Node reports that boot and
// its agent Lease is that one, or of a later boot (the machine was reset);
// the Lease renewed by the same boot reads on: the node was found running
// after it was counted off (a machine paused and resumed, or a watchdog
// that did not fire), which the controller raises as an alarm; so does a
// Node that reports another boot (the machine is back). The default action
// is a reboot, as a watchdog's reset is: its on withdraws the request. The device's state is otherwise the
// request's, as an SBD device's is its message's: on while no request
// stands (or one this process does not stand for), unknown before the
// proof; its on withdraws the request (the node comes back by itself). The
// driver needs a client of the cluster, so it is not registered at init:
// build it with Driver and register it.
package agentfence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/nodeagent"
)

// Name is the driver's name and address scheme.
const Name = "nodeagent"

// Options configures a Device.
type Options struct {
	// Namespace is the agents' (their Leases' and the requests').
	Namespace string
	// MaxSelfFenceTimeout and MaxWatchdogTimeout are the largest timings a
	// node's agent may publish for this method to count on it (zero: 120 s
	// and 60 s). What it waits is the node's agent's own.
	MaxSelfFenceTimeout, MaxWatchdogTimeout time.Duration
	// Now is the clock (time.Now when nil): its monotonic readings.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.MaxSelfFenceTimeout == 0 {
		o.MaxSelfFenceTimeout = 120 * time.Second
	}
	if o.MaxWatchdogTimeout == 0 {
		o.MaxWatchdogTimeout = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Wait is how long the proof takes after the last of its starting points
// for an agent of these timings: T + 3W and the margin.
func Wait(selfFence, watchdog, interval time.Duration) time.Duration {
	return selfFence + 3*watchdog + margin(selfFence, watchdog, interval)
}

// margin is two intervals (a look that returns later than that counts for
// nothing, so an acknowledgement a peer gave after its report can only
// belong to a look that began past the node's timeout) and 2% for the
// clocks' rates.
func margin(selfFence, watchdog, interval time.Duration) time.Duration {
	return 2*interval + (selfFence+3*watchdog)/50
}

// MaxWait is the longest an off takes with these limits (an interval is at
// most a third of the watchdog's timeout), the agents' reading of the
// request and their reports (two intervals each) included: what
// power_timeout must exceed.
func (o Options) MaxWait() time.Duration {
	o.defaults()
	i := o.MaxWatchdogTimeout / 3
	return 4*i + Wait(o.MaxSelfFenceTimeout, o.MaxWatchdogTimeout, i)
}

// Device is a fence.Device over the agents' Leases; its plugs are node
// names.
type Device struct {
	c client.Client
	o Options

	mu       sync.Mutex
	attempts map[string]*attempt    // node -> the off this process stands for
	plugs    map[string]*sync.Mutex // node -> held through each Set and Status of it
}

// lock serializes the Sets and Statuses of one plug: two offs at once
// would otherwise each write a request, and stand for the one whose
// reports never come.
func (d *Device) lock(plug string) func() {
	d.mu.Lock()
	m, ok := d.plugs[plug]
	if !ok {
		m = &sync.Mutex{}
		d.plugs[plug] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// attempt is one off: the request written, and what the proof starts from.
type attempt struct {
	request string
	lease   string // the node's agent Lease's resourceVersion when read before the request
	pub     *nodeagent.Published
	c0, cw  time.Time
	first   map[string]time.Time // "peer/incarnation" -> when a report of that run on the request was first seen
	proven  bool
	refused error // why the agents can no longer prove it for this request
}

// New returns a Device over c, a controller-runtime client that reads the
// API server (client.New; a manager's cached client would serve the agents'
// Leases and requests as its cache last saw them, and the proof reads what
// they say now). It does no I/O.
func New(c client.Client, o Options) (*Device, error) {
	if o.Namespace == "" {
		return nil, &fence.ParamError{Key: "namespace", Reason: "required: the agents' namespace"}
	}
	if o.MaxSelfFenceTimeout < 0 || o.MaxWatchdogTimeout < 0 {
		return nil, &fence.ParamError{Key: "max_self_fence_timeout", Reason: "negative"}
	}
	o.defaults()
	return &Device{c: c, o: o, attempts: map[string]*attempt{}, plugs: map[string]*sync.Mutex{}}, nil
}

// ProofByTime marks the device's offs as proven by time (fence.TimeProver).
func (d *Device) ProofByTime() bool { return true }

func badPlug() error {
	return fmt.Errorf("%w: a nodeagent plug is the node's name", fence.ErrUnknownPlug)
}

// Set writes the fence request for the node (off), after checking what its
// agent publishes, or withdraws it (on). An off again while this process's
// request still stands and may yet be proven writes the same request.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	if plug == "" {
		return fence.NotDone(badPlug())
	}
	defer d.lock(plug)()
	if s == fence.StateOn {
		if _, err := d.lease(ctx, plug); err != nil {
			return fence.NotDone(err)
		}
		d.mu.Lock()
		delete(d.attempts, plug)
		d.mu.Unlock()
		return d.request(ctx, plug, "")
	}
	d.mu.Lock()
	a := d.attempts[plug]
	d.mu.Unlock()
	if a != nil && a.proven {
		return nil // off, and the request says so
	}
	if a == nil || a.refused != nil {
		var err error
		if a, err = d.start(ctx, plug); err != nil {
			return fence.NotDone(err)
		}
		a.cw = d.o.Now()
		// Kept before the write, whose outcome may be unknown: the
		// proof holds either way, cw being before any write of it.
		d.mu.Lock()
		d.attempts[plug] = a
		d.mu.Unlock()
	}
	return d.request(ctx, plug, a.request)
}

// start reads the node and its agent's Lease, and refuses an agent that
// cannot prove the node off.
func (d *Device) start(ctx context.Context, plug string) (*attempt, error) {
	l, err := d.lease(ctx, plug)
	if err != nil {
		return nil, err
	}
	node, err := d.node(ctx, plug)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: node %s: %w", plug, err)
	}
	c0 := d.o.Now()
	pub, err := nodeagent.ParsePublished(l.Annotations[nodeagent.AgentAnnotation])
	if err != nil {
		return nil, fmt.Errorf("nodeagent: node %s's agent Lease: %w", plug, err)
	}
	t, w, _ := pub.Timings()
	switch {
	case pub.State != nodeagent.StateRunning:
		return nil, fmt.Errorf("nodeagent: node %s's agent says it is %q: nothing guards the node, no agent can prove it off", plug, pub.State)
	case node.Status.NodeInfo.BootID == "":
		return nil, fmt.Errorf("nodeagent: node %s reports no boot (status.nodeInfo.bootID): a node that booted again could not be told", plug)
	case node.Status.NodeInfo.BootID != pub.Boot:
		return nil, fmt.Errorf("nodeagent: node %s booted again (boot %s) since its agent last renewed its Lease (boot %s): no agent of this boot guards it",
			plug, node.Status.NodeInfo.BootID, pub.Boot)
	case len(pub.Peers) == 0 || slices.Contains(pub.Peers, plug):
		return nil, fmt.Errorf("nodeagent: node %s's agent lists no peer but itself: no agent can witness it cut off", plug)
	case t > d.o.MaxSelfFenceTimeout:
		return nil, fmt.Errorf("nodeagent: node %s's agent runs with a self-fence timeout of %v, more than this method's max_self_fence_timeout (%v)", plug, t, d.o.MaxSelfFenceTimeout)
	case w > d.o.MaxWatchdogTimeout:
		return nil, fmt.Errorf("nodeagent: node %s's agent runs with a watchdog timeout of %v, more than this method's max_watchdog_timeout (%v)", plug, w, d.o.MaxWatchdogTimeout)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &attempt{request: hex.EncodeToString(b[:]), lease: l.ResourceVersion, pub: pub, c0: c0, first: map[string]time.Time{}}, nil
}

// lease reads the node's agent Lease: a node without one is a plug the
// device does not have.
func (d *Device) lease(ctx context.Context, plug string) (*coordinationv1.Lease, error) {
	name := nodeagent.LeasePrefix + plug
	l := &coordinationv1.Lease{}
	err := d.c.Get(ctx, client.ObjectKey{Namespace: d.o.Namespace, Name: name}, l)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: node %s has no agent Lease (%s in %s): no agent guards it", fence.ErrUnknownPlug, plug, name, d.o.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("nodeagent: node %s's agent Lease: %w", plug, err)
	}
	return l, nil
}

// node reads the Node plug.
func (d *Device) node(ctx context.Context, plug string) (*corev1.Node, error) {
	n := &corev1.Node{}
	return n, d.c.Get(ctx, client.ObjectKey{Name: plug}, n)
}

// requests reads the fence requests' ConfigMap.
func (d *Device) requests(ctx context.Context) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	return cm, d.c.Get(ctx, client.ObjectKey{Namespace: d.o.Namespace, Name: nodeagent.RequestsConfigMap}, cm)
}

// request writes (id not empty) or withdraws the node's fence request.
func (d *Device) request(ctx context.Context, plug, id string) error {
	var err error
	for range 5 {
		var cm *corev1.ConfigMap
		cm, err = d.requests(ctx)
		switch {
		case apierrors.IsNotFound(err) && id == "":
			return nil
		case apierrors.IsNotFound(err):
			err = d.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nodeagent.RequestsConfigMap, Namespace: d.o.Namespace},
				Data: map[string]string{plug: id}})
		case err != nil:
			return fmt.Errorf("nodeagent: the fence requests: %w", err)
		case cm.Data[plug] == id:
			return nil
		case id != "" && !strings.Contains(id, " ") && nodeagent.RequestID(cm.Data[plug]) == id:
			return nil // an off again leaves what the proof added to it
		default:
			cm = cm.DeepCopy()
			if id == "" {
				delete(cm.Data, plug)
			} else {
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				cm.Data[plug] = id
			}
			err = d.c.Update(ctx, cm)
		}
		if err == nil || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			break
		}
	}
	if err != nil {
		return fence.OutcomeUnknown(fmt.Errorf("nodeagent: writing node %s's fence request: %w", plug, err))
	}
	return nil
}

// ErrRefused means the agents can no longer prove the node off for this
// request: the reason follows.
var ErrRefused = errors.New("nodeagent: the agents cannot prove the node off")

// Status is off once the agents proved the node off (by this process, or
// by any, while its agent Lease is the one they proved it with), on while
// no request of this process stands or the node was found running the boot
// counted off, unknown before the proof; an error says why the agents
// never will for this request.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if plug == "" {
		return fence.StateUnknown, badPlug()
	}
	defer d.lock(plug)()
	d.mu.Lock()
	a := d.attempts[plug]
	d.mu.Unlock()
	if a == nil || a.proven {
		return d.provenState(ctx, plug)
	}
	// The clock before the reads: whatever they show was so when it read
	// this, or later.
	before := d.o.Now()
	node, err := d.node(ctx, plug)
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("nodeagent: node %s: %w", plug, err)
	}
	l := &coordinationv1.LeaseList{}
	err = d.c.List(ctx, l, client.InNamespace(d.o.Namespace), client.MatchingLabels{nodeagent.LeaseLabel: nodeagent.LeaseLabelValue})
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("nodeagent: listing the agents' Leases: %w", err)
	}
	now := d.o.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.refused != nil {
		return fence.StateUnknown, a.refused
	}
	if b := node.Status.NodeInfo.BootID; b != a.pub.Boot {
		a.refused = fmt.Errorf("%w: node %s booted again (boot %s) since the request: it is back, its kubelet may run its pods", ErrRefused, plug, b)
		return fence.StateUnknown, a.refused
	}
	proven, err := a.check(plug, l.Items, before, now)
	if err != nil {
		a.refused = err
		return fence.StateUnknown, err
	}
	if !proven {
		return fence.StateUnknown, nil
	}
	// Read off only once the request says so, for any process to read.
	if err := d.request(ctx, plug, a.request+" proven "+a.lease+" "+a.pub.Boot); err != nil {
		return fence.StateUnknown, err
	}
	a.proven = true
	return fence.StateOff, nil
}

// provenState reads the state of the standing request: off while it says
// it was proven and the node's agent Lease is still the one it names, or
// of another boot (the machine was reset since); on otherwise.
func (d *Device) provenState(ctx context.Context, plug string) (fence.State, error) {
	l, err := d.lease(ctx, plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	cm, err := d.requests(ctx)
	if apierrors.IsNotFound(err) {
		return fence.StateOn, nil
	}
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("nodeagent: the fence requests: %w", err)
	}
	f := strings.Fields(cm.Data[plug])
	if len(f) != 4 || f[1] != "proven" {
		return fence.StateOn, nil // none, or one this process does not stand for
	}
	node, err := d.node(ctx, plug)
	switch {
	case apierrors.IsNotFound(err):
		// The Node removed: its agent Lease alone says.
	case err != nil:
		return fence.StateUnknown, fmt.Errorf("nodeagent: node %s: %w", plug, err)
	case node.Status.NodeInfo.BootID != f[3]:
		return fence.StateOn, nil // the machine is back, and its kubelet says so
	}
	if l.ResourceVersion == f[2] {
		return fence.StateOff, nil
	}
	pub, err := nodeagent.ParsePublished(l.Annotations[nodeagent.AgentAnnotation])
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("nodeagent: node %s's agent Lease: %w", plug, err)
	}
	if pub.Boot != f[3] {
		return fence.StateOff, nil // reset since it was proven off
	}
	return fence.StateOn, nil // the boot counted off runs
}

// check is the proof over the Leases, read after before, and seen at now.
func (a *attempt) check(plug string, items []coordinationv1.Lease, before, now time.Time) (bool, error) {
	byNode := map[string]*coordinationv1.Lease{}
	for i := range items {
		if n, ok := cutPrefix(items[i].Name); ok {
			byNode[n] = &items[i]
		}
	}
	own := byNode[plug]
	switch {
	case own == nil:
		return false, fmt.Errorf("%w: node %s's agent Lease is gone", ErrRefused, plug)
	case own.ResourceVersion != a.lease:
		return false, fmt.Errorf("%w: node %s's agent Lease changed since the request: its agent renewed it (the node reaches the API server, and its agent does not fence a node that does), or someone edited it", ErrRefused, plug)
	}
	t, wd, i := a.pub.Timings()
	type witness struct {
		first   time.Time
		seenFor time.Duration
	}
	var ws []witness
	for _, p := range a.pub.Peers {
		l := byNode[p]
		if l == nil {
			continue
		}
		pub, err := nodeagent.ParsePublished(l.Annotations[nodeagent.AgentAnnotation])
		if err != nil {
			continue
		}
		reports, err := nodeagent.ParseReports(l.Annotations[nodeagent.ReportsAnnotation])
		if err != nil {
			continue
		}
		r, ok := reports[plug]
		if !ok || r.Request != a.request || r.SeenFor < 0 || r.UnheardFor < r.SeenFor {
			continue // not seen, or heard since it saw it
		}
		key := p + "/" + pub.Incarnation
		if _, ok := a.first[key]; !ok {
			a.first[key] = now
		}
		// Less 1% for the agent's clock's rate.
		ws = append(ws, witness{a.first[key], time.Duration(r.SeenFor * 0.99 * float64(time.Second))})
	}
	need := nodeagent.QuorumLost(len(a.pub.Peers))
	if len(a.pub.Peers) == 0 || len(ws) < need {
		return false, nil
	}
	sort.Slice(ws, func(x, y int) bool { return ws[x].first.Before(ws[y].first) })
	ws = ws[:need]
	x := a.c0
	for _, w := range ws {
		if w.first.After(x) {
			x = w.first
		}
	}
	m := margin(t, wd, i)
	for _, w := range ws {
		if a.cw.Add(w.seenFor).Before(x.Add(t + m)) {
			return false, nil
		}
	}
	return !before.Before(x.Add(Wait(t, wd, i))), nil
}

func cutPrefix(name string) (string, bool) {
	if len(name) <= len(nodeagent.LeasePrefix) || name[:len(nodeagent.LeasePrefix)] != nodeagent.LeasePrefix {
		return "", false
	}
	return name[len(nodeagent.LeasePrefix):], true
}

const powerTimeout = 10 * time.Minute

// Driver returns the "nodeagent" driver over client c, which must read the
// API server as New says (client.New, not a manager's cached client). Its
// parameters
// beyond the common ones: plug (the node's name), namespace (the agents'),
// max_self_fence_timeout and max_watchdog_timeout (seconds: the largest
// timings a node's agent may run with for this method). power_timeout
// must exceed the longest wait they allow.
func Driver(c client.Client) fence.Driver {
	return fence.Driver{
		Name:          Name,
		Description:   "The node agents' word: a node counts off once its peers say, on a fence request, that it has not reached them for its agent's self-fence timeout and its watchdog's (the proof is time)",
		DefaultAction: fence.ActionReboot,
		IOTimeout:     10 * time.Second,
		PowerTimeout:  powerTimeout,
		Params: []fence.ParamSpec{
			{Name: "plug", Aliases: []string{"port"}, Description: "The node's name, as its agent's Lease names it", Type: "string", Required: true},
			{Name: "namespace", Description: "The agents' namespace", Type: "string", Required: true},
			{Name: "max_self_fence_timeout", Description: "The largest self-fence timeout a node's agent may run with, in seconds (default 120)", Type: "second"},
			{Name: "max_watchdog_timeout", Description: "The largest watchdog timeout a node's agent may run with, in seconds (default 60)", Type: "second"},
		},
		Check: func(_ fence.Address, p fence.Params) error {
			o, err := optionsOf(p)
			if err != nil {
				return err
			}
			if _, err := New(nil, o); err != nil {
				return err
			}
			pt, ok, _ := p.Seconds("power_timeout")
			if !ok {
				pt = powerTimeout
			}
			if pt <= o.MaxWait() {
				return &fence.ParamError{Key: "power_timeout", Value: p["power_timeout"],
					Reason: "must exceed the longest an off takes with the agents' largest timings (" + o.MaxWait().String() + "): a node is off only once they have passed"}
			}
			return nil
		},
		Open: func(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
			o, err := optionsOf(oo.Params)
			if err != nil {
				return nil, err
			}
			return New(c, o)
		},
	}
}

func optionsOf(p fence.Params) (Options, error) {
	var o Options
	o.Namespace, _ = p.Get("namespace")
	var err error
	if o.MaxSelfFenceTimeout, _, err = p.Seconds("max_self_fence_timeout"); err != nil {
		return o, err
	}
	if o.MaxWatchdogTimeout, _, err = p.Seconds("max_watchdog_timeout"); err != nil {
		return o, err
	}
	return o, nil
}

var (
	_ fence.Device     = (*Device)(nil)
	_ fence.TimeProver = (*Device)(nil)
)
