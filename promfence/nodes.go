package promfence

import (
	"context"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/prometheus/client_golang/prometheus"
)

// nodesCollector counts the records by step and status at each scrape.
type nodesCollector struct {
	desc    *prometheus.Desc
	fenced  *prometheus.Desc
	foundOn *prometheus.Desc
	timeout time.Duration

	mu   sync.Mutex
	list func(context.Context) ([]*flow.NodeFence, error)
}

func (c *nodesCollector) set(list func(context.Context) ([]*flow.NodeFence, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = list
}

func (c *nodesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.fenced
	ch <- c.foundOn
}

func (c *nodesCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	list := c.list
	c.mu.Unlock()
	if list == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	recs, err := list(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		ch <- prometheus.NewInvalidMetric(c.fenced, err)
		ch <- prometheus.NewInvalidMetric(c.foundOn, err)
		return
	}
	type key struct{ step, status string }
	counts := map[key]int{}
	var byDevices, byPerson, foundOn int
	for _, r := range recs {
		counts[key{r.Step.String(), string(r.Status)}]++
		if r.FoundOn != "" {
			foundOn++
		}
		switch {
		case r.Isolated || r.PoweredOff:
			byDevices++
		case r.ConfirmedOff:
			byPerson++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, float64(byDevices), "devices")
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, float64(byPerson), "person")
	ch <- prometheus.MustNewConstMetric(c.foundOn, prometheus.GaugeValue, float64(foundOn))
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.step, k.status)
	}
}
