// Package promfence exports fencekit's progress as Prometheus metrics
// (github.com/prometheus/client_golang), so that the library packages stay
// free of that dependency: a fence.Observer for every attempt of every
// method, a policy.Gate wrapper for the gates' refusals, and a collector of
// the nodes by step and status from the NodeFence records.
//
//	m := promfence.New(prometheus.DefaultRegisterer, promfence.Options{})
//	ctl.Observer = m                       // attempts and their durations
//	ctl.Gate = m.Gate(gate)                // refusals by gate
//	m.WatchRecords(store.List)             // nodes by step and status
//
// The metrics:
//
//	fencekit_attempts_total{driver,phase,outcome}            counter
//	fencekit_attempt_duration_seconds{driver,phase}          histogram
//	fencekit_gate_refusals_total{gate}                       counter
//	fencekit_nodes{step,status}                              gauge
//	fencekit_nodes_fenced{proof}                             gauge
//	fencekit_nodes_found_on                                  gauge
//	fencekit_force_detach_on_timeout{state}                  gauge
//	fencekit_device_up{node,method,driver}                   gauge
//	fencekit_device_check_duration_seconds{driver}           histogram
//
// fencekit_nodes_fenced counts the nodes that count as fenced now, by what
// proved it: "devices" (every required device of a level confirmed the
// node off or cut from its storage) or "person" (a person confirmed it off
// when no device could: kubectl fence confirm).
//
// fencekit_nodes_found_on counts the fenced nodes, their pods released,
// that a device that fenced them reads on again (NodeFence.FoundOn): an
// operator or a power-restore policy switched them on behind the
// controller.
//
// fencekit_force_detach_on_timeout is 1 for what the cluster's
// kube-controller-manager does with the volumes of a node unhealthy for 6
// minutes once their pods are gone (state enabled: it detaches them without
// proof; disabled; unknown), 0 for the other states (ForceDetach).
//
// fencekit_device_up is 1 while a node's fence method answers its health
// check (fence/healthcheck), 0 while it does not: the one metric with a
// node label, so that an alert names the node whose device is down (one
// series per configured method: 10,000 at 5,000 nodes of two methods, as
// kube-state-metrics has per node). No label holds a plug or an error
// text, and nothing secret can reach them.
package promfence

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fence/healthcheck"
	"github.com/fencekit/fencekit/policy"
)

// Options configures New. The zero value is ready to use.
type Options struct {
	// Buckets are the attempt duration histogram's buckets, in seconds.
	// Nil means 0.05 s to about 100 s, doubling.
	Buckets []float64
	// ListTimeout bounds one read of the records by the nodes collector.
	// Zero means 5 s.
	ListTimeout time.Duration
}

// Metrics holds fencekit's collectors. It implements fence.Observer.
type Metrics struct {
	attempts  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	refusals  *prometheus.CounterVec
	nodes     *nodesCollector
	detach    *prometheus.GaugeVec
	deviceUp  *prometheus.GaugeVec
	checks    *prometheus.HistogramVec
	reg       prometheus.Registerer
}

// New returns the metrics, registered with reg (prometheus.NewRegistry()
// for a registry of one's own). It panics, as prometheus.MustRegister
// does, when they are registered there already.
func New(reg prometheus.Registerer, o Options) *Metrics {
	if o.Buckets == nil {
		o.Buckets = prometheus.ExponentialBuckets(0.05, 2, 12)
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = 5 * time.Second
	}
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencekit_attempts_total",
			Help: "Attempts of fencing methods, by driver, phase (status, off, on) and outcome.",
		}, []string{"driver", "phase", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fencekit_attempt_duration_seconds",
			Help:    "Duration of the attempts of fencing methods, from the command to the verified state, by driver and phase.",
			Buckets: o.Buckets,
		}, []string{"driver", "phase"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencekit_gate_refusals_total",
			Help: "Fencings refused by the policy gates, by gate.",
		}, []string{"gate"}),
		nodes: &nodesCollector{timeout: o.ListTimeout, desc: prometheus.NewDesc("fencekit_nodes",
			"Nodes with a NodeFence record, by step and status.", []string{"step", "status"}, nil),
			fenced: prometheus.NewDesc("fencekit_nodes_fenced",
				"Nodes that count as fenced now, by proof: devices (confirmed off or isolated by every required device of a level) or person (confirmed off by a person, no device could).",
				[]string{"proof"}, nil),
			foundOn: prometheus.NewDesc("fencekit_nodes_found_on",
				"Fenced nodes whose pods are released and that a device that fenced them reads on again (or their storage port enabled): switched on behind the controller.",
				nil, nil)},
		detach: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencekit_force_detach_on_timeout",
			Help: "1 for what kube-controller-manager does with the volumes of a node unhealthy for 6 minutes once their pods are gone (enabled: detached without proof; disabled; unknown), 0 for the others.",
		}, []string{"state"}),
		deviceUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencekit_device_up",
			Help: "1 while a node's fence method answers its health check (its machine the node's, its plug read), 0 while it does not.",
		}, []string{"node", "method", "driver"}),
		checks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fencekit_device_check_duration_seconds",
			Help:    "Duration of the fence methods' health checks, by driver.",
			Buckets: o.Buckets,
		}, []string{"driver"}),
		reg: reg,
	}
	reg.MustRegister(m.attempts, m.durations, m.refusals, m.nodes, m.detach, m.deviceUp, m.checks)
	return m
}

// Observe counts an attempt and its duration (fence.Observer).
func (m *Metrics) Observe(e fence.Event) {
	phase := e.Phase.String()
	m.attempts.WithLabelValues(e.Driver, phase, e.Outcome.String()).Inc()
	m.durations.WithLabelValues(e.Driver, phase).Observe(e.Duration.Seconds())
}

// Gate returns g, with each refusal counted by the gate that refused. The
// gate keeps its storm memory (policy.StormMemory) through the wrapper.
func (m *Metrics) Gate(g policy.Gate) policy.Gate { return &countingGate{g: g, m: m} }

type countingGate struct {
	g policy.Gate
	m *Metrics
}

func (c *countingGate) Admit(ctx context.Context, cand policy.Candidate, cl policy.Cluster) policy.Decision {
	d := c.g.Admit(ctx, cand, cl)
	if !d.Admit {
		c.m.refusals.WithLabelValues(d.Gate).Inc()
	}
	return d
}

func (c *countingGate) LastStorm() time.Time {
	if s, ok := c.g.(policy.StormMemory); ok {
		return s.LastStorm()
	}
	return time.Time{}
}

func (c *countingGate) RecordStorm(t time.Time) {
	if s, ok := c.g.(policy.StormMemory); ok {
		s.RecordStorm(t)
	}
}

// Devices returns the reporter of the device health checks
// (healthcheck.Checker.Reporter): fencekit_device_up and the checks'
// durations.
func (m *Metrics) Devices() healthcheck.Reporter { return devices{m} }

type devices struct{ m *Metrics }

func (d devices) Checked(r healthcheck.Result, prev *healthcheck.Result) {
	if prev != nil && prev.Driver != r.Driver {
		d.m.deviceUp.DeleteLabelValues(prev.Node, prev.Method, prev.Driver)
	}
	v := 0.0
	if r.Up {
		v = 1
	}
	d.m.deviceUp.WithLabelValues(r.Node, r.Method, r.Driver).Set(v)
	d.m.checks.WithLabelValues(r.Driver).Observe(r.Duration.Seconds())
}

func (d devices) Forget(t healthcheck.Target) {
	d.m.deviceUp.DeletePartialMatch(prometheus.Labels{"node": t.Node, "method": t.Method})
}

// ForceDetach sets fencekit_force_detach_on_timeout to state (enabled,
// disabled or unknown).
func (m *Metrics) ForceDetach(state string) {
	for _, s := range []string{"enabled", "disabled", "unknown"} {
		v := 0.0
		if s == state {
			v = 1
		}
		m.detach.WithLabelValues(s).Set(v)
	}
}

// WatchRecords has the nodes gauge read the records with list at every
// scrape (controller.Store's List: from the informer once it has synced).
func (m *Metrics) WatchRecords(list func(context.Context) ([]*flow.NodeFence, error)) {
	m.nodes.set(list)
}

var _ fence.Observer = (*Metrics)(nil)
