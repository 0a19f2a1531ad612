package flow_test

// Golden transcripts of the NodeFence flow: testdata/*.txt are scenarios in
// the small language below, each command followed by "----" and what it
// printed. Run
//
//	go test ./fence/flow -run Golden -rewrite
//
// to write what the commands print now into the files, then review the
// diff.
//
// The commands (one per line; '#' lines are comments):
//
//	level STEP M...     add a level of methods M to STEP (isolation,
//	                    power_management, recovery)
//	action M on|off     method M's own action (the design's action=)
//	node ready|down|up  the node reports Ready; stops answering; answers
//	                    but is not Ready yet
//	device M ok|notdone|unknown|besteffort
//	                    how method M's jobs end from now on
//	gate admit|refuse   the policy gate's answer from now on
//	pods gone|stay      whether the node's released pods are gone
//	tick DURATION       the clock moves
//	advance             one pass: Advance, its commands carried out
//	settle              passes until the record no longer changes
//
// A pass prints the commands Advance gave, then the record.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/transcript"
)

func TestGolden(t *testing.T) {
	transcript.RunDir(t, func(*testing.T) transcript.Runner { return newGolden().run })
}

type golden struct {
	nf      *flow.NodeFence
	now     time.Time
	obs     flow.Observation
	opts    flow.Options
	outcome map[string]string      // by method: ok, notdone, unknown, besteffort
	plugs   map[string]fence.State // by method
	admit   bool
	gone    bool
}

func newGolden() *golden {
	return &golden{now: t0, admit: true, gone: true,
		outcome: map[string]string{}, plugs: map[string]fence.State{},
		obs:  flow.Observation{Steps: map[fence.Step][][]string{}, Actions: map[string]fence.Action{}, Ready: true, Owner: "me"},
		opts: flow.Options{}.Defaults()}
}

func (g *golden) run(cmd string) ([]string, error) {
	f := strings.Fields(cmd)
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	switch f[0] {
	case "level":
		s, err := fence.ParseStep(arg(1))
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("level STEP METHOD...: %v", err)
		}
		g.obs.Steps[s] = append(g.obs.Steps[s], f[2:])
		return nil, nil
	case "action":
		a, err := fence.ParseAction(arg(2))
		if err != nil {
			return nil, err
		}
		g.obs.Actions[arg(1)] = a
		return nil, nil
	case "node":
		switch arg(1) {
		case "ready":
			g.obs.Ready, g.obs.Unresponsive = true, false
		case "down":
			g.obs.Ready, g.obs.Unresponsive = false, true
		case "up":
			g.obs.Ready, g.obs.Unresponsive = false, false
		default:
			return nil, errors.New("node ready|down|up")
		}
		return nil, nil
	case "device":
		switch arg(2) {
		case "ok", "notdone", "unknown", "besteffort":
			g.outcome[arg(1)] = arg(2)
		default:
			return nil, errors.New("device M ok|notdone|unknown|besteffort")
		}
		return nil, nil
	case "gate":
		g.admit = arg(1) == "admit"
		return nil, nil
	case "pods":
		g.gone = arg(1) == "gone"
		return nil, nil
	case "tick":
		d, err := time.ParseDuration(arg(1))
		if err != nil {
			return nil, err
		}
		g.now = g.now.Add(d)
		return []string{"now " + g.rel(g.now)}, nil
	case "advance":
		out, _ := g.advance()
		return out, nil
	case "settle":
		var out []string
		for range 50 {
			lines, changed := g.advance()
			if !changed {
				return append(out, "settled"), nil
			}
			out = append(out, lines...)
		}
		return nil, errors.New("the flow does not settle in 50 passes")
	}
	return nil, fmt.Errorf("unknown command %q", f[0])
}

// advance makes one pass as a controller does: Advance, answering the gate
// and the pods check when asked, then carrying out its commands.
func (g *golden) advance() ([]string, bool) {
	var out []string
	o := g.obs
	o.Now = g.now
	next, cmds := flow.Advance(g.nf, "n1", o, g.opts)
	for range 4 {
		asked := false
		for _, c := range cmds {
			switch c.Kind {
			case flow.CmdAdmit:
				o.Admission = &flow.Admission{Admit: g.admit, Reason: map[bool]string{false: "storm"}[g.admit]}
				out = append(out, fmt.Sprintf("gate: admit=%v", g.admit))
				asked = true
			case flow.CmdCheckPods:
				o.Pods = &flow.PodsCheck{Gone: g.gone}
				out = append(out, fmt.Sprintf("pods: gone=%v", g.gone))
				asked = true
			}
		}
		if !asked {
			break
		}
		next, cmds = flow.Advance(g.nf, "n1", o, g.opts)
	}
	before := ""
	if g.nf != nil {
		before = g.record(g.nf)
	}
	acted := false
	g.nf = next
	for _, c := range cmds {
		switch c.Kind {
		case flow.CmdEvent:
			kind := "event"
			if c.Warning {
				kind = "warning"
			}
			out = append(out, fmt.Sprintf("%s %s: %s", kind, c.Reason, c.Message))
		case flow.CmdRunJob:
			j := g.nf.Jobs[c.Job]
			res := g.job(j)
			out = append(out, fmt.Sprintf("job %s %s %s: %s", j.Step, j.Method, j.Phase, g.outcome[j.Method]+map[bool]string{true: "ok"}[g.outcome[j.Method] == ""]))
			g.nf.FinishJob(c.Job, res, g.now)
			acted = true
		case flow.CmdReleasePods:
			out = append(out, "release pods: "+string(c.Release))
			g.nf.ReleasedPods(c.Release)
			acted = true
		case flow.CmdRestorePods:
			out = append(out, "restore pods")
			g.nf.RestoredPods()
			acted = true
		case flow.CmdHold:
			out = append(out, "hold node (NoSchedule)")
			g.nf.HeldNode(true)
			acted = true
		case flow.CmdUnhold:
			out = append(out, "unhold node")
			g.nf.HeldNode(false)
			acted = true
		case flow.CmdForget:
			out = append(out, "forget record")
			g.nf = nil
			acted = true
		}
	}
	after := ""
	if g.nf != nil {
		after = g.record(g.nf)
	}
	if after != "" {
		out = append(out, after)
	}
	return out, acted || before != after
}

// job runs a job against its method's plug, ending as the device was told.
func (g *golden) job(j flow.Job) flow.JobOutcome {
	switch g.outcome[j.Method] {
	case "notdone":
		return flow.JobOutcome{Err: fence.NotDone(errors.New("device unreachable"))}
	case "unknown":
		return flow.JobOutcome{Err: fence.OutcomeUnknown(errors.New("no answer after the set"))}
	case "besteffort":
		return flow.JobOutcome{Err: fence.NotDone(errors.New("device unreachable")), BestEffort: true}
	}
	want := j.Phase.Target()
	st, ok := g.plugs[j.Method]
	if !ok {
		st = fence.StateOn
	}
	g.plugs[j.Method] = want
	return flow.JobOutcome{Result: &fence.Result{Action: j.Action, State: want, Already: st == want, OffConfirmed: want == fence.StateOff}}
}

func (g *golden) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return "t+" + t.Sub(t0).String()
}

func (g *golden) record(nf *flow.NodeFence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "record: %s %s", nf.Step, nf.Status)
	if nf.Retries > 0 {
		fmt.Fprintf(&b, " retries=%d", nf.Retries)
	}
	if nf.Isolated {
		b.WriteString(" isolated")
	}
	if nf.PoweredOff {
		b.WriteString(" powered-off")
	}
	if nf.Released != flow.ReleaseNone {
		fmt.Fprintf(&b, " released=%s", nf.Released)
	}
	if nf.Held {
		b.WriteString(" held")
	}
	if !nf.FencedAt.IsZero() {
		fmt.Fprintf(&b, " fenced-at=%s", g.rel(nf.FencedAt))
	}
	if nf.OnError != "" {
		fmt.Fprintf(&b, " on-error=%q", nf.OnError)
	}
	if nf.Message != "" {
		fmt.Fprintf(&b, " message=%q", nf.Message)
	}
	return b.String()
}
