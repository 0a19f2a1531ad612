package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// healthy marks a recovered node healthy: with a negative healthy delay,
// the controller keeps it held (no new pods) until then.
func healthy(ctx context.Context, fs *pflag.FlagSet, flags *genericclioptions.ConfigFlags, args []string, out io.Writer) error {
	var wait time.Duration
	fs.DurationVar(&wait, "wait", time.Minute, "how long to wait for the controller to end the hold; 0 returns once the mark is written")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("healthy takes one NODE, got %d arguments", len(pos))
	}
	node := pos[0]
	c, nf, err := readNode(ctx, flags, node, wait, func(ready *corev1.NodeCondition) error {
		if ready == nil || ready.Status != "True" {
			return fmt.Errorf("node %s is not Ready: only a ready node may be marked healthy (nothing written)", node)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if nf == nil || !nf.Status.Hold && !nf.Status.Held {
		fmt.Fprintf(out, "node %s: not held, nothing to mark (nothing written)\n", node)
		return nil
	}
	if nf.Status.Step != "recovery" {
		return fmt.Errorf("node %s: its fencing is not over (%s %s): it is marked healthy once it has recovered (nothing written)", node, nf.Status.Step, nf.Status.Status)
	}
	// Made since the recovery began, whatever this machine's clock says.
	at := time.Now().UTC()
	if s := nf.Status.StepStarted; s != nil && at.Before(s.Time) {
		at = s.Time.Add(time.Microsecond)
	}
	mark := metav1.NewMicroTime(at)
	if err := c.patchSpec(ctx, node, map[string]any{"markedHealthy": mark}); err != nil {
		return fmt.Errorf("node %s: the mark was not written: %w", node, err)
	}
	fmt.Fprintf(out, "node %s: marked healthy\n", node)
	if wait == 0 {
		return nil
	}
	deadline := time.Now().Add(wait)
	for {
		nf, err := c.nodeFence(ctx, node)
		if err != nil {
			return err
		}
		if nf == nil || !nf.Status.Hold && !nf.Status.Held {
			fmt.Fprintf(out, "node %s: takes pods again\n", node)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: still held %v after the mark (is the controller running with a negative --healthy-delay? kubectl fence status %s)", node, wait, node)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(confirmPoll):
		}
	}
}
