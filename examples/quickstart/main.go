// Command quickstart runs a complete fencing scenario on in-process devices
// and prints its timeline:
//
//	go run ./examples/quickstart
//
// A three-node cluster is described by the fence configuration of the
// Kubernetes node fencing design (cluster.yaml: ConfigMaps for templates,
// methods and node configs). node-2 stops answering. fencekit then
//
//  1. isolates it: disables its FC switch port, and waits until the switch
//     confirms the port is disabled;
//  2. power-fences it, since it is still not ready: power-cycles it through
//     its BMC over real IPMI v2.0 on loopback (go-ipmi's reference BMC served
//     in this process), the off and the on each confirmed by the BMC; its
//     PDU outlet is the fallback level, used only if the BMC fails;
//  3. recovers it once it is ready again: enables its FC port, confirmed.
//
// The FC switch and the PDU are fakes from drivers/fake that take a little
// time to switch, as real ones do; the timeline shows every attempt, how
// many reads verification took, and how long each step lasted.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	_ "github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

//go:embed cluster.yaml.tmpl
var clusterTemplate string

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, defaultTiming); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// timing holds the scenario's simulated delays.
type timing struct {
	heartbeatGrace time.Duration // how long a silent node takes to be NotReady
	powerAfter     time.Duration // how long a node may stay NotReady after isolation
	boot           time.Duration // how long a node takes to boot after power on
	fcSwitch       time.Duration // how long the FC switch takes to switch a port
	pdu            time.Duration // how long the PDU takes to switch an outlet
}

var defaultTiming = timing{
	heartbeatGrace: 300 * time.Millisecond,
	powerAfter:     500 * time.Millisecond,
	boot:           600 * time.Millisecond,
	fcSwitch:       150 * time.Millisecond,
	pdu:            250 * time.Millisecond,
}

// timeline prints lines stamped with the time since the scenario started.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "[+%6.3fs] %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

// Observe prints every attempt the engine reports.
func (t *timeline) Observe(e fence.Event) {
	what := fmt.Sprintf("%-10s %-7s", e.Method, e.Phase)
	switch e.Outcome {
	case fence.OutcomeConfirmed:
		t.printf("    %s confirmed %s by the device after %d read(s), %v", what, e.State, e.Polls, round(e.Duration))
	case fence.OutcomeAlready:
		t.printf("    %s already %s: nothing to do", what, e.State)
	default:
		t.printf("    %s %s: %v", what, e.Outcome, e.Err)
	}
}

// round keeps three significant digits of a duration, at most.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// cluster simulates node readiness: a node is ready while it answers, and
// a node that was power-cycled answers again once it has booted.
type cluster struct {
	mu    sync.Mutex
	ready map[string]bool
}

func (c *cluster) set(node string, ready bool) {
	c.mu.Lock()
	c.ready[node] = ready
	c.mu.Unlock()
}

func (c *cluster) isReady(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready[node]
}

// waitReady polls the node's readiness, as a controller watching Node
// objects would, up to limit.
func (c *cluster) waitReady(ctx context.Context, node string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if c.isReady(node) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return c.isReady(node)
}

func run(ctx context.Context, w io.Writer, tm timing) error {
	tl := &timeline{w: w, start: time.Now()}

	// The devices: one FC switch and one PDU for the rack, one BMC per node.
	nodes := []string{"node-1", "node-2", "node-3"}
	names := map[string]string{"1": "node-1", "2": "node-2", "3": "node-3"}
	for _, n := range []string{"fc-switch", "pdu"} {
		fake.Forget(n)
	}
	fcSwitch := fake.NewNamed("fc-switch", fake.Options{Plugs: []string{"1", "2", "3"}, Names: names, SwitchDelay: tm.fcSwitch})
	pdu := fake.NewNamed("pdu", fake.Options{Plugs: []string{"1", "2", "3"}, Names: names, SwitchDelay: tm.pdu})
	bmcs := map[string]*ipmisim.GoBMC{}
	vars := struct {
		BMC                  map[string]string
		BMCUser, BMCPassword string
	}{BMC: map[string]string{}}
	for _, n := range nodes {
		b, err := ipmisim.NewGoBMC(ipmisim.GoBMCOptions{})
		if err != nil {
			return fmt.Errorf("starting the BMC of %s: %w", n, err)
		}
		defer b.Close()
		bmcs[n] = b
		vars.BMC[n] = b.Addr()
		vars.BMCUser, vars.BMCPassword = b.User, b.Password
	}

	var clusterYAML bytes.Buffer
	if err := template.Must(template.New("cluster").Parse(clusterTemplate)).Execute(&clusterYAML, vars); err != nil {
		return err
	}
	cfg, err := fence.LoadConfig(bytes.NewReader(clusterYAML.Bytes()))
	if err != nil {
		return err
	}
	if err := cfg.Validate(fence.DefaultRegistry()); err != nil {
		return err
	}

	cl := &cluster{ready: map[string]bool{}}
	for _, n := range nodes {
		cl.set(n, true)
	}
	tl.printf("cluster up: %s ready; fence configuration for %s loaded from %d ConfigMaps", strings.Join(nodes, ", "), strings.Join(cfg.Nodes(), ", "), strings.Count(clusterYAML.String(), "kind: ConfigMap"))
	for _, n := range nodes {
		tl.printf("  BMC of %s: go-ipmi reference BMC at ipmi://%s (IPMI v2.0, cipher suite 3)", n, bmcs[n].Addr())
	}

	const victim = "node-2"
	nc, _ := cfg.Node(victim)
	for _, s := range fence.Steps() {
		var levels []string
		for _, l := range nc.Methods(s) {
			levels = append(levels, strings.Join(l, " + "))
		}
		tl.printf("  %s %-16s %s", victim, s.String()+":", strings.Join(levels, "  |  then  "))
	}

	// A node that is powered off and on again boots and answers again: its
	// power is on when both its BMC and its PDU outlet say so.
	power := func() fence.State {
		if bmcs[victim].Truth() == fence.StateOn && pdu.Truth("2") == fence.StateOn {
			return fence.StateOn
		}
		return fence.StateOff
	}
	// The BMC switches within a millisecond, too fast to poll: the power
	// methods' observer tells when the node's power was confirmed off.
	poweredOff := make(chan struct{})
	var offOnce sync.Once
	powerWatch := fence.ObserverFunc(func(e fence.Event) {
		tl.Observe(e)
		if e.Phase == fence.ActionOff && e.Outcome == fence.OutcomeConfirmed {
			offOnce.Do(func() { close(poweredOff) })
		}
	})
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-poweredOff:
		}
		for ctx.Err() == nil && power() != fence.StateOn {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(tm.boot)
		tl.printf("%s booted and its kubelet reports Ready", victim)
		cl.set(victim, true)
	}()

	// node-2 stops answering.
	tl.printf("%s stops answering (its kubelet and its network are gone; its BMC still answers)", victim)
	cl.set(victim, false)
	time.Sleep(tm.heartbeatGrace)
	tl.printf("%s is NotReady: fencing starts", victim)

	steps := []struct {
		step   fence.Step
		action fence.Action
		title  string
	}{
		{fence.StepIsolation, fence.ActionOff, "isolation: cut the node from its storage"},
		{fence.StepPowerManagement, fence.ActionReboot, "power management: power-cycle the node"},
		{fence.StepRecovery, fence.ActionOn, "recovery: give the node its storage back"},
	}
	var summary []string
	for _, st := range steps {
		switch st.step {
		case fence.StepPowerManagement:
			if cl.waitReady(ctx, victim, tm.powerAfter) {
				tl.printf("%s is Ready again: no power fencing needed", victim)
				continue
			}
			tl.printf("%s still NotReady %v after isolation", victim, tm.powerAfter)
		case fence.StepRecovery:
			if !cl.waitReady(ctx, victim, 10*tm.boot) {
				return fmt.Errorf("%s never came back; recovery waits for it", victim)
			}
		}
		levels, err := cfg.Levels(ctx, fence.DefaultRegistry(), victim, st.step, nil)
		if err != nil {
			return err
		}
		for _, l := range levels {
			for _, m := range l.Methods {
				m.Options.Observer = tl
				if st.step == fence.StepPowerManagement {
					m.Options.Observer = powerWatch
				}
			}
		}
		tl.printf("step %s", st.title)
		res, err := fence.DoLevels(ctx, victim, levels, st.action)
		if err != nil {
			tl.printf("  FAILED: %v", err)
			return err
		}
		for _, lr := range res.Levels {
			if lr.Err != nil {
				tl.printf("  level %d had failed, so the next level ran: %v", lr.Index+1, lr.Err)
			}
		}
		verdict := "done"
		if res.Fenced {
			verdict = "node verified fenced"
		}
		line := fmt.Sprintf("%-17s level %d of %d, %s, %v", st.step.String()+":", res.Level+1, len(levels), verdict, round(res.Duration))
		tl.printf("  %s", line)
		summary = append(summary, line)
	}

	tl.printf("done: %s is back, with its FC port %s, its chassis power %s (BMC) and its outlet %s",
		victim, fcSwitch.Truth("2"), bmcs[victim].Truth(), pdu.Truth("2"))
	fmt.Fprintln(w, "\nsummary for "+victim+":")
	for _, s := range summary {
		fmt.Fprintln(w, "  "+s)
	}
	return nil
}
