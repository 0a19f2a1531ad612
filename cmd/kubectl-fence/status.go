package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/fencekit/fencekit/api/v1alpha1"
)

// status prints the NodeFences, or one node's in detail.
func status(ctx context.Context, fs *pflag.FlagSet, flags *genericclioptions.ConfigFlags, args []string, out io.Writer) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErr("at most one NODE, got %d arguments", len(pos))
	}
	c, err := newClients(flags)
	if err != nil {
		return err
	}
	now := time.Now()
	if len(pos) == 1 {
		nf, err := c.nodeFence(ctx, pos[0])
		if err != nil {
			return err
		}
		if nf == nil {
			ready, err := c.readiness(ctx, pos[0])
			if err != nil {
				return err
			}
			if ready == nil {
				return fmt.Errorf("node %s: no such node, and no NodeFence", pos[0])
			}
			fmt.Fprintf(out, "Node %s: Ready %s; no NodeFence: it is not being fenced.\n", pos[0], ready.Status)
			return nil
		}
		return detail(ctx, c, nf, now, out)
	}
	nfs, err := c.nodeFences(ctx)
	if err != nil {
		return err
	}
	if len(nfs) == 0 {
		fmt.Fprintln(out, "No NodeFences: no node is being fenced.")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tREADY\tSTEP\tSTATUS\tFENCED\tPROOF\tPODS\tINCIDENT\tMESSAGE")
	for i := range nfs {
		nf := &nfs[i]
		ready := "-"
		if r, err := c.readiness(ctx, nf.Name); err == nil && r != nil {
			ready = string(r.Status)
		}
		fenced, proof := "-", "-"
		if f := condition(nf, v1alpha1.ConditionFenced); f != nil {
			fenced, proof = string(f.Status), f.Reason
		}
		pods := "-"
		if p := condition(nf, v1alpha1.ConditionPodsReleased); p != nil {
			pods = p.Reason
		}
		inc := "-"
		if t := incident(nf); t != nil {
			inc = ago(t.Time, now)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", nf.Name, ready, orDash(nf.Status.Step), orDash(nf.Status.Status),
			fenced, proof, pods, inc, oneLine(nf.Status.Message, 80))
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detail prints one NodeFence for a person deciding what to do.
func detail(ctx context.Context, c *clients, nf *v1alpha1.NodeFence, now time.Time, out io.Writer) error {
	s := &nf.Status
	w := tabwriter.NewWriter(out, 0, 4, 1, ' ', 0)
	ready := "no such node"
	r, err := c.readiness(ctx, nf.Name)
	if err != nil {
		return err
	}
	if r != nil {
		ready = string(r.Status)
		if !r.LastTransitionTime.IsZero() {
			ready += fmt.Sprintf(" (for %s)", ago(r.LastTransitionTime.Time, now))
		}
	}
	fmt.Fprintf(w, "Node:\t%s\n", nf.Name)
	fmt.Fprintf(w, "Ready:\t%s\n", ready)
	if t := incident(nf); t != nil {
		fmt.Fprintf(w, "Incident:\t%s (%s ago)\n", t.UTC().Format(time.RFC3339), ago(t.Time, now))
	}
	fmt.Fprintf(w, "Step:\t%s %s\n", orDash(s.Step), orDash(s.Status))
	inc := incident(nf)
	current := func(t metav1.MicroTime) bool { return inc != nil && t.Equal(inc) }
	recovered := s.Step == "recovery" && s.Status == "Done"
	for _, typ := range []string{v1alpha1.ConditionFenced, v1alpha1.ConditionPodsReleased, v1alpha1.ConditionSucceeded} {
		cond := condition(nf, typ)
		if cond == nil || recovered && typ == v1alpha1.ConditionSucceeded {
			// A recovered node's Succeeded tells of its past fencing,
			// not of now (Recovered below says what is).
			continue
		}
		fmt.Fprintf(w, "%s:\t%s (%s) %s\n", typ, cond.Status, cond.Reason, oneLine(cond.Message, 120))
	}
	if recovered {
		fmt.Fprintf(w, "Recovered:\tthe node is back; its last fencing is over\n")
	}
	cf := s.Confirmation
	switch {
	case cf == nil:
	case current(cf.Incident) && !recovered:
		fmt.Fprintf(w, "Confirmed by:\t%s, %s ago: %s\n", cf.By, ago(cf.At.Time, now), oneLine(cf.Reason, 120))
	default:
		fmt.Fprintf(w, "Earlier:\tconfirmed off by %s for the incident that began %s (over; it does not count now)\n",
			cf.By, cf.Incident.UTC().Format(time.RFC3339))
	}
	if sc := nf.Spec.Confirmation; sc != nil && (cf == nil || cf.By != sc.By || !cf.Incident.Equal(&sc.Incident) || cf.Reason != sc.Reason || cf.Request != sc.Request) {
		state := "waiting for the controller"
		switch {
		case !current(sc.Incident):
			state = fmt.Sprintf("for the incident that began %s, not this one: it does not count", sc.Incident.UTC().Format(time.RFC3339))
		case s.ConfirmationRefused != "":
			state = "refused: " + s.ConfirmationRefused
		}
		fmt.Fprintf(w, "Confirmation:\tby %s: %s\n", sc.By, state)
	}
	fmt.Fprintf(w, "Message:\t%s\n", oneLine(s.Message, 200))
	if err := w.Flush(); err != nil {
		return err
	}
	if len(s.Jobs) > 0 {
		fmt.Fprintln(out, "\nSwitches of the step:")
		jw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(jw, "  LEVEL\tMETHOD\tPHASE\tRESULT\tSTARTED")
		for _, j := range s.Jobs {
			res := "running"
			switch {
			case j.Finished == nil:
			case j.OK && j.OffConfirmed && j.ByTime:
				res = "ok, off by elapsed time (no switch read back)"
			case j.OK && j.OffConfirmed:
				res = "ok, confirmed off"
			case j.OK:
				res = "ok"
			case j.Unknown:
				res = "unknown: " + oneLine(j.Error, 100)
			default:
				res = "not done: " + oneLine(j.Error, 100)
			}
			started := "-"
			if j.Started != nil {
				started = ago(j.Started.Time, now) + " ago"
			}
			fmt.Fprintf(jw, "  %d\t%s\t%s\t%s\t%s\n", j.Level+1, j.Method, orDash(j.Phase), res, started)
		}
		if err := jw.Flush(); err != nil {
			return err
		}
	}
	if n := len(s.History); n > 0 {
		fmt.Fprintln(out, "\nHistory (latest last):")
		hw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, h := range s.History[max(0, n-8):] {
			at := "-"
			if h.Time != nil {
				at = ago(h.Time.Time, now) + " ago"
			}
			fmt.Fprintf(hw, "  %s\t%s %s\t%s\n", at, h.Step, h.Status, oneLine(h.Message, 100))
		}
		if err := hw.Flush(); err != nil {
			return err
		}
	}
	fenced := condition(nf, v1alpha1.ConditionFenced)
	if s.FoundOn != "" {
		fmt.Fprintf(out, "\nSwitched on behind the controller: %s, while its pods run elsewhere.\nFind out who switched it on (an operator, or the BMC's power-restore policy), then switch it off, or let it come back and recover.\n", s.FoundOn)
		return nil
	}
	// The way out by a person's word, once the devices failed (not while
	// the first switch is still being tried).
	failed := s.Status == "Failed" || s.Status == "Error"
	if sc := condition(nf, v1alpha1.ConditionSucceeded); sc != nil && sc.Reason == v1alpha1.ReasonLevelsFailed {
		failed = true
	}
	if (fenced == nil || fenced.Status != "True") && r != nil && r.Status != "True" && s.Step != "recovery" && failed {
		fmt.Fprintf(out, "\nNo device has proved the node off. Once you have checked that it is (its power is gone):\n  kubectl fence confirm %s --reason \"what you checked\"\n", nf.Name)
	}
	return nil
}
