// Command quickstart runs a complete fencing scenario on in-process devices,
// carried out by the fence controller, and prints its timeline:
//
//	go run ./examples/quickstart
//
// A three-node cluster is described by the fence configuration of the
// Kubernetes node fencing design (cluster.yaml: ConfigMaps for templates,
// methods and node configs). A controller.Controller runs over it in real
// time, its settings shortened from minutes to fractions of a second: its
// NodeFence records live in a MemoryStore, policy.Default() is its gate,
// and the scenario gives it the nodes' health, a pod treatment that prints
// what a Kubernetes one would do, and an event sink that prints on the
// timeline. node-2 stops answering; 300 ms later the controller
//
//  1. isolates it: the gate admits the step, the FC switch port is disabled
//     and the switch confirms it disabled; the pods that used the node's
//     storage are released;
//  2. power-fences it, since it is still not ready 500 ms after its
//     isolation: the gate admits the step, and the controller tries its BMC
//     over real IPMI v2.0 on loopback (go-ipmi's reference BMC served in this
//     process). node-2's BMC refuses power commands, so the fallback level
//     runs: node-2 has two power supplies, fed by PDU A and PDU B, and the
//     level switches both outlets off (each confirmed), so that the node
//     loses power; only then, with the node verified off, the out-of-service
//     taint is applied, and then both outlets are switched on again;
//  3. recovers it once it has booted and is Ready again: enables its FC port,
//     confirmed, then removes the taint.
//
// The FC switch and the PDUs are fakes from drivers/fake that take a little
// time to switch, as real ones do. The timeline shows the gate's answers,
// with what the same policy would answer if a second node went silent (a
// fencing storm in a cluster of three), the controller's events, every
// attempt with the device reads that verified it, and the pod treatment.
// The summary is read from node-2's NodeFence record.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
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
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/policy"
)

//go:embed cluster.yaml.tmpl
var clusterTemplate string

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := run(ctx, os.Stdout, defaultScenario); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// scenario holds the controller's settings and the simulated delays.
type scenario struct {
	unhealthyAfter time.Duration // how long a node is NotReady before it is fenced
	interval       time.Duration // the time between the controller's passes
	powerDelay     time.Duration // how long an isolated node may stay NotReady before power management
	pollInterval   time.Duration // how often a power-fenced node is checked for readiness
	boot           time.Duration // how long a node takes to boot after power on
	fcSwitch       time.Duration // how long the FC switch takes to switch a port
	pdu            time.Duration // how long the PDU takes to switch an outlet
	limit          time.Duration // how long the scenario may take at most
	// bmcFault, when set, is a misbehaviour of node-2's BMC: the two-PDU
	// level then power-fences the node.
	bmcFault ipmisim.Fault
}

var defaultScenario = scenario{
	unhealthyAfter: 300 * time.Millisecond,
	interval:       50 * time.Millisecond,
	powerDelay:     500 * time.Millisecond,
	pollInterval:   100 * time.Millisecond,
	boot:           600 * time.Millisecond,
	fcSwitch:       150 * time.Millisecond,
	pdu:            250 * time.Millisecond,
	limit:          20 * time.Second,
	bmcFault:       ipmisim.FaultRefuse,
}

// report is what the scenario left behind, for its test.
type report struct {
	Record  *flow.NodeFence   // node-2's record at the end
	Records []*flow.NodeFence // every record at the end
	Jobs    []flow.Job        // every job of node-2, in order
	Pods    []string          // the pod treatment carried out, in order
	Ready   bool              // node-2 is Ready at the end
	// FCPort, Chassis, OutletA and OutletB are node-2's FC port, chassis
	// power (as its BMC has it) and PDU outlets at the end.
	FCPort, Chassis, OutletA, OutletB fence.State
	// LostPower is what node-2 saw when it lost power ("" if it never
	// did).
	LostPower string
}

const victim = "node-2"

func run(ctx context.Context, w io.Writer, sc scenario) (*report, error) {
	tl := &timeline{w: w, start: time.Now()}

	// The devices: one FC switch and two PDUs for the rack (every node has
	// two power supplies, one on each PDU), one BMC per node.
	nodes := []string{"node-1", "node-2", "node-3"}
	names := map[string]string{"1": "node-1", "2": "node-2", "3": "node-3"}
	for _, n := range []string{"fc-switch", "pdu-a", "pdu-b"} {
		fake.Forget(n)
	}
	fcSwitch := fake.NewNamed("fc-switch", fake.Options{Plugs: []string{"1", "2", "3"}, Names: names, SwitchDelay: sc.fcSwitch})
	pduA := fake.NewNamed("pdu-a", fake.Options{Plugs: []string{"1", "2", "3"}, Names: names, SwitchDelay: sc.pdu})
	pduB := fake.NewNamed("pdu-b", fake.Options{Plugs: []string{"1", "2", "3"}, Names: names, SwitchDelay: sc.pdu})
	bmcs := map[string]*ipmisim.GoBMC{}
	vars := struct {
		BMC                  map[string]string
		BMCUser, BMCPassword string
	}{BMC: map[string]string{}}
	for _, n := range nodes {
		b, err := ipmisim.NewGoBMC(ipmisim.GoBMCOptions{})
		if err != nil {
			return nil, fmt.Errorf("starting the BMC of %s: %w", n, err)
		}
		defer b.Close()
		bmcs[n] = b
		vars.BMC[n] = b.Addr()
		vars.BMCUser, vars.BMCPassword = b.User, b.Password
	}
	bmcs[victim].SetFault(sc.bmcFault)

	var clusterYAML bytes.Buffer
	if err := template.Must(template.New("cluster").Parse(clusterTemplate)).Execute(&clusterYAML, vars); err != nil {
		return nil, err
	}
	cfg, err := config.Load(bytes.NewReader(clusterYAML.Bytes()))
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(fence.DefaultRegistry()); err != nil {
		return nil, err
	}
	nc, ok := cfg.Node(victim)
	if !ok {
		return nil, fmt.Errorf("the fence configuration has no fence-config-%s", victim)
	}

	health := newHealth(nodes)
	tl.printf("cluster up: %s ready; fence configuration for %s loaded from %d ConfigMaps", strings.Join(nodes, ", "), strings.Join(cfg.Nodes(), ", "), strings.Count(clusterYAML.String(), "kind: ConfigMap"))
	for _, n := range nodes {
		tl.printf("  BMC of %s: go-ipmi reference BMC at ipmi://%s (IPMI v2.0, cipher suite 3)", n, bmcs[n].Addr())
	}
	for _, s := range fence.Steps() {
		var levels []string
		for _, l := range nc.Methods(s) {
			levels = append(levels, strings.Join(l, " + "))
		}
		tl.printf("  %s %-17s %s", victim, s.String()+":", strings.Join(levels, "  |  then  "))
	}

	// The machine: node-2 has power while its chassis is on (as its BMC
	// has it) and at least one of its two power supplies is fed. Once it
	// has lost power, it boots when its power is back, and its kubelet
	// reports Ready again. The BMC switches within a millisecond, too fast
	// to poll: at every off a device confirms, the controller's observer
	// looks at the machine, which has lost power only if every supply is
	// off at that moment.
	powerMethods := map[string]bool{}
	for _, l := range nc.Methods(fence.StepPowerManagement) {
		for _, m := range l {
			powerMethods[m] = true
		}
	}
	power := func() fence.State {
		if bmcs[victim].Truth() == fence.StateOn && (pduA.Truth("2") == fence.StateOn || pduB.Truth("2") == fence.StateOn) {
			return fence.StateOn
		}
		return fence.StateOff
	}
	poweredOff := make(chan struct{})
	var offOnce sync.Once
	var lostPower string
	observer := fence.ObserverFunc(func(e fence.Event) {
		tl.observe(e)
		off := e.Outcome == fence.OutcomeConfirmed || e.Outcome == fence.OutcomeAlready
		if e.Node == victim && powerMethods[e.Method] && e.Phase == fence.ActionOff && off && e.State == fence.StateOff && power() == fence.StateOff {
			offOnce.Do(func() {
				lostPower = fmt.Sprintf("chassis %s (BMC), outlet A %s, outlet B %s", bmcs[victim].Truth(), pduA.Truth("2"), pduB.Truth("2"))
				tl.printf("%s has lost power: %s", victim, lostPower)
				close(poweredOff)
			})
		}
	})

	store := newJournal()
	pods := &podLog{tl: tl}
	gate := &shownGate{gate: policy.Default(), tl: tl, whatIf: "node-3"}
	ctl := &controller.Controller{
		Health:   health,
		Store:    store,
		Config:   controller.StaticConfig{C: cfg},
		Pods:     pods,
		Events:   eventLog{tl: tl},
		Gate:     gate,
		Observer: observer,
		Options: controller.Options{
			UnhealthyAfter: sc.unhealthyAfter,
			Interval:       sc.interval,
			Flow: flow.Options{
				PowerDelay:   sc.powerDelay,
				PollInterval: sc.pollInterval,
				RetryBackoff: sc.powerDelay,
			},
		},
	}
	health.onChange(ctl.Wake)
	tl.printf("fence controller started: a node NotReady for %v is fenced, power management %v after isolation; gate policy.Default(): %s",
		sc.unhealthyAfter, sc.powerDelay, "no fencing while over 50% of the nodes are unresponsive (and 5m after), 1 fencing in flight, 1 control-plane node at a time")

	runCtx, stop := context.WithTimeout(ctx, sc.limit)
	defer stop()
	var wg sync.WaitGroup
	halt := func() {
		stop()
		wg.Wait()
	}
	defer halt()
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = ctl.Run(runCtx) // returns runCtx's error once halted
	}()
	go func() {
		defer wg.Done()
		select {
		case <-runCtx.Done():
			return
		case <-poweredOff:
		}
		for power() != fence.StateOn {
			if !pause(runCtx, 5*time.Millisecond) {
				return
			}
		}
		if !pause(runCtx, sc.boot) {
			return
		}
		tl.printf("%s booted after its power cycle: its kubelet reports Ready", victim)
		health.set(victim, true)
	}()

	// node-2 stops answering.
	if sc.bmcFault != ipmisim.FaultNone {
		tl.printf("%s stops answering (its kubelet and its network are gone; its BMC answers, but refuses power commands): NotReady", victim)
	} else {
		tl.printf("%s stops answering (its kubelet and its network are gone; its BMC still answers): NotReady", victim)
	}
	health.set(victim, false)

	rec, err := waitClosed(runCtx, store, victim)
	halt()
	if err != nil {
		return nil, err
	}
	tl.printf("done: %s is back, with its FC port %s, its chassis power %s (BMC) and its outlets %s (A) and %s (B)",
		victim, fcSwitch.Truth("2"), bmcs[victim].Truth(), pduA.Truth("2"), pduB.Truth("2"))

	jobs := store.jobs(victim)
	summarize(w, tl, rec, jobs, nc)

	all, err := store.List(ctx)
	if err != nil {
		return nil, err
	}
	return &report{
		Record: rec, Records: all, Jobs: jobs, Pods: pods.done(), Ready: health.ready(victim),
		FCPort: fcSwitch.Truth("2"), Chassis: bmcs[victim].Truth(), OutletA: pduA.Truth("2"), OutletB: pduB.Truth("2"),
		LostPower: lostPower,
	}, nil
}

// waitClosed waits until the node's fencing is over: it has a NodeFence
// record, and the record is closed (recovered, pods restored).
func waitClosed(ctx context.Context, store controller.Store, node string) (*flow.NodeFence, error) {
	const every = 10 * time.Millisecond
	var rec *flow.NodeFence
	for {
		r, err := store.Get(ctx, node)
		switch {
		case err == nil:
			rec = r
			if rec.Closed() {
				return rec, nil
			}
		case !errors.Is(err, controller.ErrNotFound):
			return nil, err
		}
		if !pause(ctx, every) {
			break
		}
	}
	if rec == nil {
		return nil, fmt.Errorf("%s was never fenced: no NodeFence record (%w)", node, ctx.Err())
	}
	return nil, fmt.Errorf("%s did not come back: its NodeFence is at %s %s: %s (%w)", node, rec.Step, rec.Status, rec.Message, ctx.Err())
}

// pause waits d; it reports false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// summarize prints what node's NodeFence record says: each step's outcome
// from its jobs, every job, the record's history and its final state.
func summarize(w io.Writer, tl *timeline, rec *flow.NodeFence, jobs []flow.Job, nc *config.NodeConfig) {
	fmt.Fprintf(w, "\nsummary for %s, from its NodeFence record:\n", rec.Node)
	for _, s := range fence.Steps() {
		var sj []flow.Job
		for _, j := range jobs {
			if j.Step == s {
				sj = append(sj, j)
			}
		}
		if len(sj) == 0 {
			fmt.Fprintf(w, "  %-17s not run\n", s.String()+":")
			continue
		}
		last := sj[len(sj)-1]
		verdict := "done"
		for _, j := range sj {
			if j.Level == last.Level && j.OK && fences(j) {
				verdict = "node verified fenced"
			}
		}
		if !last.OK {
			verdict = "failed"
		}
		fmt.Fprintf(w, "  %-17s level %d of %d, %s, %v\n", s.String()+":", last.Level+1, len(nc.Methods(s)), verdict, round(last.Finished.Sub(sj[0].Started)))
	}
	fmt.Fprintln(w, "  jobs:")
	for _, j := range jobs {
		fmt.Fprintf(w, "    [+%6.3fs] %-17s level %d  %-10s %-3s %s, %v\n", tl.since(j.Started), j.Step, j.Level+1, j.Method, j.Phase, jobOutcome(j), round(j.Finished.Sub(j.Started)))
	}
	fmt.Fprintln(w, "  history:")
	for _, h := range rec.History {
		fmt.Fprintf(w, "    [+%6.3fs] %-17s %-8s %s\n", tl.since(h.Time), h.Step, h.Status, h.Message)
	}
	released := string(rec.Released)
	if released == "" {
		released = "none"
	}
	fmt.Fprintf(w, "  now: %s %s, isolated %t, powered off %t, pods released: %s\n", rec.Step, rec.Status, rec.Isolated, rec.PoweredOff, released)
}

// jobOutcome says how a finished job ended.
func jobOutcome(j flow.Job) string {
	switch {
	case !j.OK && j.Unknown:
		return "outcome unknown: " + j.Error
	case !j.OK:
		return "failed: " + j.Error
	case fences(j):
		return "off confirmed, now " + j.State.String()
	case j.Already:
		return "already " + j.State.String()
	}
	return "confirmed " + j.State.String()
}

// fences reports whether a job fenced its node: the device confirmed the
// off in a step that turns the node off (a recovery's first read that finds
// the port off proves nothing).
func fences(j flow.Job) bool {
	return j.OffConfirmed && flow.StepAction(j.Step) != fence.ActionOn
}
