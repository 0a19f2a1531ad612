// Package agentfence counts a node off on the word of the node agents
// (cmd/fencekit-agent) when nothing can switch it: a fence driver
// ("nodeagent") whose proof is time, as SBD's is.
//
// A node's agent fences the node itself (its watchdog kicked no more) once
// it has lost the API server and its quorum of agents for its self-fence
// timeout T; the watchdog resets the machine within its timeout W. The
// driver reports the node off once, as this process observed it:
//
//   - the node's agent Lease (fencekit-agent-NODE) has not been renewed for
//     T + W + a margin: its agent has not reached the API server since;
//   - of the agents the node counted its quorum among (the peers its own
//     Lease lists in fencekit.io/unheard; an agent's list only grows), at
//     least half of the cluster they make with the node, each renewing its
//     own Lease, say they have not heard the node's heartbeat for T + W +
//     the margin (their Leases' fencekit.io/unheard): the node cannot have
//     reached a majority since.
//
// Then the node has been cut from the API server and its quorum for at
// least T, so its agent fenced it, and W has passed since: it is off (or
// its agent died, whose watchdog fires the same). Before that the state is
// unknown, never off; while its Lease is renewed, on. The clock is this
// process's monotonic one, from when it first saw each Lease: a controller
// that restarts waits the whole time again. Off and on switch nothing: the
// node fences itself, and comes back by itself.
//
// The driver needs a client of the cluster, so it is not registered at
// init: build it with Driver and register it.
package agentfence

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/fence"
)

// Name is the driver's name and address scheme.
const Name = "nodeagent"

// The agents' Leases, as cmd/fencekit-agent writes them.
const (
	LeasePrefix       = "fencekit-agent-"
	LeaseSelector     = "app.kubernetes.io/name=fencekit-agent"
	UnheardAnnotation = "fencekit.io/unheard"
)

// Options configures a Device.
type Options struct {
	// Namespace is the agents' (their Leases').
	Namespace string
	// SelfFenceTimeout and WatchdogTimeout are the agents'
	// (--self-fence-timeout, --watchdog-timeout); Margin is added to
	// their sum (zero means the watchdog's timeout, at least 5 s).
	SelfFenceTimeout, WatchdogTimeout, Margin time.Duration
	// Fresh is how recently an agent's Lease must have been renewed for
	// its word to count (zero means 5 s: five of its intervals).
	Fresh time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Wait is how long a node must have been cut off before it counts off.
func (o Options) Wait() time.Duration {
	m := o.Margin
	if m == 0 {
		m = max(o.WatchdogTimeout, 5*time.Second)
	}
	return o.SelfFenceTimeout + o.WatchdogTimeout + m
}

// Device is a fence.Device over the agents' Leases; its plugs are node
// names.
type Device struct {
	c kubernetes.Interface
	o Options

	mu   sync.Mutex
	seen map[string]renewal // Lease name -> its last renewal, and since when this process has seen it
}

type renewal struct {
	at    time.Time // the Lease's renewTime as written
	since time.Time // when this process first saw it (monotonic)
}

// New returns a Device. It does no I/O.
func New(c kubernetes.Interface, o Options) (*Device, error) {
	if o.Namespace == "" {
		return nil, &fence.ParamError{Key: "namespace", Reason: "required: the agents' namespace"}
	}
	if o.SelfFenceTimeout <= 0 || o.WatchdogTimeout <= 0 {
		return nil, &fence.ParamError{Key: "self_fence_timeout", Reason: "self_fence_timeout and watchdog_timeout are required: the agents' own"}
	}
	if o.Fresh == 0 {
		o.Fresh = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Device{c: c, o: o, seen: map[string]renewal{}}, nil
}

// Status reports the node (plug) off once the agents prove it (see the
// package documentation), on while its agent renews its Lease, unknown
// otherwise.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	if plug == "" {
		return fence.StateUnknown, fmt.Errorf("%w: a nodeagent plug is the node's name", fence.ErrUnknownPlug)
	}
	l, err := d.c.CoordinationV1().Leases(d.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LeaseSelector})
	if err != nil {
		return fence.StateUnknown, fmt.Errorf("nodeagent: listing the agents' Leases: %w", err)
	}
	now := d.o.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	// How long each Lease has gone unrenewed, as this process saw it.
	stale := map[string]time.Duration{}
	unheard := map[string]string{}
	for _, it := range l.Items {
		var at time.Time
		if it.Spec.RenewTime != nil {
			at = it.Spec.RenewTime.Time
		}
		r, ok := d.seen[it.Name]
		if !ok || !r.at.Equal(at) {
			r = renewal{at: at, since: now}
			d.seen[it.Name] = r
		}
		stale[it.Name] = now.Sub(r.since)
		unheard[it.Name] = it.Annotations[UnheardAnnotation]
	}
	own := LeasePrefix + plug
	s, ok := stale[own]
	if !ok {
		return fence.StateUnknown, fmt.Errorf("%w: node %s has no agent Lease (%s in %s): no agent proves it off", fence.ErrUnknownPlug, plug, own, d.o.Namespace)
	}
	if s < d.o.Fresh {
		return fence.StateOn, nil // its agent reaches the API server
	}
	wait := d.o.Wait()
	if s < wait {
		return fence.StateUnknown, nil
	}
	// The agents the node counted its quorum among: the peers its own
	// Lease lists (an agent's list only grows, so the node knew at least
	// these). A majority of them must say they have not heard it.
	peers := peersOf(unheard[own])
	witnesses := 0
	for _, p := range peers {
		name := LeasePrefix + p
		if st, ok := stale[name]; !ok || st >= d.o.Fresh {
			continue // gone, or not reaching the API server: no word
		}
		if secs, ok := unheardFor(unheard[name], plug); ok && secs >= wait {
			witnesses++
		}
	}
	if 2*witnesses >= 1+len(peers) && len(peers) > 0 {
		return fence.StateOff, nil
	}
	return fence.StateUnknown, nil
}

// peersOf returns the peers an unheard annotation lists.
func peersOf(ann string) []string {
	var out []string
	for _, part := range strings.Split(ann, ",") {
		if name, _, ok := strings.Cut(part, "="); ok && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// unheardFor reads node's entry of an unheard annotation.
func unheardFor(ann, node string) (time.Duration, bool) {
	for _, part := range strings.Split(ann, ",") {
		name, v, ok := strings.Cut(part, "=")
		if !ok || name != node {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, false
		}
		return time.Duration(f * float64(time.Second)), true
	}
	return 0, false
}

// Set switches nothing: the node fences itself, and comes back by itself.
// A plug without an agent Lease is refused at the status that follows.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	if plug == "" {
		return fence.NotDone(fmt.Errorf("%w: a nodeagent plug is the node's name", fence.ErrUnknownPlug))
	}
	return ctx.Err()
}

// Driver returns the "nodeagent" driver over client c. Its parameters
// beyond the common ones: plug (the node's name, as its agent's Lease
// names it), namespace (the agents'), self_fence_timeout and
// watchdog_timeout (the agents' own, in seconds), margin (seconds).
// power_timeout must exceed their sum.
func Driver(c kubernetes.Interface) fence.Driver {
	return fence.Driver{
		Name:          Name,
		Description:   "The node agents' word: a node counts off once its agent and a majority of the others say it has been cut off for its self-fence timeout and its watchdog's (the proof is time)",
		DefaultAction: fence.ActionOff,
		IOTimeout:     10 * time.Second,
		PowerTimeout:  5 * time.Minute,
		Params: []fence.ParamSpec{
			{Name: "plug", Aliases: []string{"port"}, Description: "The node's name, as its agent's Lease names it", Type: "string", Required: true},
			{Name: "namespace", Description: "The agents' namespace", Type: "string", Required: true},
			{Name: "self_fence_timeout", Description: "The agents' --self-fence-timeout, in seconds", Type: "second", Required: true},
			{Name: "watchdog_timeout", Description: "The agents' --watchdog-timeout, in seconds", Type: "second", Required: true},
			{Name: "margin", Description: "Added to their sum, in seconds (default: the watchdog's timeout, at least 5)", Type: "second"},
		},
		Check: func(_ fence.Address, p fence.Params) error {
			o, err := optionsOf(p)
			if err != nil {
				return err
			}
			if _, err := New(nil, o); err != nil {
				return err
			}
			if pt, ok, _ := p.Seconds("power_timeout"); ok && pt <= o.Wait() {
				return &fence.ParamError{Key: "power_timeout", Value: p["power_timeout"],
					Reason: "must exceed the agents' self-fence timeout, watchdog timeout and the margin (" + o.Wait().String() + "): a node is off only once they have passed"}
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
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"self_fence_timeout", &o.SelfFenceTimeout}, {"watchdog_timeout", &o.WatchdogTimeout}, {"margin", &o.Margin}} {
		if *f.dst, _, err = p.Seconds(f.key); err != nil {
			return o, err
		}
	}
	return o, nil
}

var _ fence.Device = (*Device)(nil)
