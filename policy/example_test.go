package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/policy"
)

// clusterOf returns n nodes named node-1 ... node-n; the first u are
// unresponsive.
func clusterOf(now time.Time, n, u int) policy.Cluster {
	cl := policy.Cluster{Now: now}
	for i := range n {
		cl.Nodes = append(cl.Nodes, policy.Node{Name: fmt.Sprintf("node-%d", i+1), Unresponsive: i < u})
	}
	return cl
}

// The default policy, asked at each pass of a controller: one node stops
// answering and is admitted; while it is being fenced a second one waits;
// then a switch fails and half of the cluster goes silent, and fencing
// stops until five minutes after the storm.
func ExampleDefault() {
	ctx := context.Background()
	gate := policy.Default() // built once: the storm guard remembers storms
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

	cl := clusterOf(now, 10, 1)
	fmt.Println(gate.Admit(ctx, policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl))

	cl = clusterOf(now.Add(time.Minute), 10, 2)
	cl.Nodes[0].Fencing = true
	fmt.Println(gate.Admit(ctx, policy.Candidate{Node: cl.Nodes[1], Step: "isolation"}, cl))

	cl = clusterOf(now.Add(2*time.Minute), 10, 6)
	fmt.Println(gate.Admit(ctx, policy.Candidate{Node: cl.Nodes[1], Step: "isolation"}, cl))

	cl = clusterOf(now.Add(3*time.Minute), 10, 1)
	d := gate.Admit(ctx, policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl)
	fmt.Println(d, "- ask again in", d.RetryAfter)

	cl = clusterOf(now.Add(7*time.Minute), 10, 1)
	fmt.Println(gate.Admit(ctx, policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl))
	// Output:
	// admitted
	// refused by max-in-flight: 1 fencing in flight (node-1), at the limit of 1
	// refused by storm-guard: 6 of 10 nodes unresponsive (60%), over the limit of 50%; fencing resumes 5m0s after the storm ends
	// refused by storm-guard: storm last seen at 12:02:00 (6 of 10 nodes unresponsive), cooling down until 12:07:00; now 1 of 10 nodes unresponsive - ask again in 4m0s
	// admitted
}

// A policy written by an operator, read over the defaults: a stricter storm
// guard with a bound on the number of silent nodes, two fencings at a time.
func ExampleParseConfig() {
	cfg, err := policy.ParseConfig([]byte(`
stormGuard:
  maxUnresponsivePercent: 30
  maxUnresponsive: 10
  cooldown: 10m
maxInFlight: 2
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	gate, err := cfg.Gate()
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cl := clusterOf(now, 20, 7)
	fmt.Println(gate.Admit(context.Background(), policy.Candidate{Node: cl.Nodes[0], Step: "power-management"}, cl))

	_, err = policy.ParseConfig([]byte("maxInflight: 2\nstormGuard: {cooldown: 600}"))
	fmt.Println(err)
	// Output:
	// refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%; fencing resumes 10m0s after the storm ends
	// policy config: maxInflight: unknown field (did you mean maxInFlight? names are case-sensitive)
	// policy config: stormGuard.cooldown: 600 is not a duration (want a Go duration such as "5m" or "90s")
}

// Gates of the caller's join the package's in All: here a maintenance
// window in which no fencing starts. The first refusal wins.
func ExampleAll() {
	maintenance := policy.GateFunc(func(_ context.Context, _ policy.Candidate, cl policy.Cluster) policy.Decision {
		if cl.Now.Hour() == 3 {
			d := policy.Refuse("maintenance", "the nightly maintenance window runs from 03:00 to 04:00")
			d.RetryAfter = cl.Now.Truncate(time.Hour).Add(time.Hour).Sub(cl.Now)
			return d
		}
		return policy.Admitted()
	})
	gate := policy.All(&policy.StormGuard{MaxUnresponsivePercent: 40}, maintenance, policy.MaxInFlight{N: 2})

	cl := clusterOf(time.Date(2024, 5, 1, 3, 20, 0, 0, time.UTC), 5, 1)
	d := gate.Admit(context.Background(), policy.Candidate{Node: cl.Nodes[0], Step: "isolation"}, cl)
	fmt.Println(d, "- ask again in", d.RetryAfter)
	// Output:
	// refused by maintenance: the nightly maintenance window runs from 03:00 to 04:00 - ask again in 40m0s
}
