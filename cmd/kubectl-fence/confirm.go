package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/kube/confirmation"
)

// confirmPoll is how often confirm looks for the controller's answer.
const confirmPoll = 250 * time.Millisecond

// confirm writes a person's confirmation that a node is off and waits for
// the controller's answer.
func confirm(ctx context.Context, fs *pflag.FlagSet, flags *genericclioptions.ConfigFlags, args []string, out io.Writer) error {
	var reason string
	var wait time.Duration
	fs.StringVar(&reason, "reason", "", "what you checked that proves the node off (required; kept in the record)")
	fs.DurationVar(&wait, "wait", time.Minute, "how long to wait for the controller to act on it; 0 returns once it is written")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("confirm takes one NODE, got %d arguments", len(pos))
	}
	node := pos[0]
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return usageErr("node %s: --reason is required: say what you checked (the record keeps it)", node)
	case len(reason) > maxReasonSz:
		return usageErr("node %s: --reason is %d bytes long, at most %d", node, len(reason), maxReasonSz)
	}
	c, nf, err := readNode(ctx, flags, node, wait, func(ready *corev1.NodeCondition) error {
		if ready != nil && ready.Status == "True" {
			return fmt.Errorf("node %s is Ready: only a node that is not ready may be confirmed off (nothing written)", node)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if nf == nil {
		return fmt.Errorf("node %s has no NodeFence: no fencing is under way to confirm (nothing written)", node)
	}
	s := &nf.Status
	inc := incident(nf)
	switch {
	case inc == nil:
		return fmt.Errorf("the NodeFence of node %s has no status yet (its fencing has just begun): try again in a moment (nothing written)", node)
	case s.Step == "recovery":
		return fmt.Errorf("node %s is recovering: its fencing is over (nothing written)", node)
	case s.PoweredOff:
		fmt.Fprintf(out, "node %s: devices confirmed it off already; no confirmation is needed (nothing written)\n", node)
		return nil
	case s.ConfirmedOff && s.Confirmation != nil && s.Confirmation.Incident.Equal(inc):
		fmt.Fprintf(out, "node %s: confirmed off by %s already, for this incident (nothing written)\n", node, s.Confirmation.By)
		return nil
	}

	review, err := c.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("node %s: who are you? the API server did not say (kubectl auth whoami): %w", node, err)
	}
	user := review.Status.UserInfo.Username
	// First the record of who confirms: the API server writes its creator,
	// which the controller compares with by.
	csr, err := confirmation.Request(confirmation.Claim{Node: node, Incident: inc.Time, Reason: reason})
	if err != nil {
		return fmt.Errorf("node %s: %w (nothing written)", node, err)
	}
	csr, err = c.kube.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{FieldManager: "kubectl-fence"})
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("user %s may not confirm that node %s is off: the record of who confirms (a CertificateSigningRequest) may not be created; that needs ClusterRole fencekit-confirm (nothing written)", user, node)
	case err != nil:
		return fmt.Errorf("node %s: the record of who confirms (a CertificateSigningRequest) was not created: %w (nothing written)", node, err)
	}
	want := v1alpha1.NodeFenceConfirmation{By: user, Reason: reason, Incident: *inc, Request: csr.Name}
	refusedBefore := s.ConfirmationRefused
	if err := c.patchSpec(ctx, node, map[string]any{"confirmation": want}); err != nil {
		return fmt.Errorf("node %s: the confirmation was not written: %w", node, err)
	}
	fmt.Fprintf(out, "node %s: confirmation by %s written for the incident that began %s\n", node, user, inc.UTC().Format(time.RFC3339))
	if wait == 0 {
		return nil
	}

	deadline := time.Now().Add(wait)
	tick := time.NewTicker(confirmPoll)
	defer tick.Stop()
	for {
		nf, err := c.nodeFence(ctx, node)
		if err != nil {
			return err
		}
		if nf == nil {
			return fmt.Errorf("node %s: its NodeFence is gone (deleted)", node)
		}
		s := &nf.Status
		if cf := s.Confirmation; cf != nil && cf.By == user && cf.Reason == reason && cf.Incident.Equal(inc) && cf.Request == csr.Name {
			fmt.Fprintf(out, "node %s: confirmed off by %s; its pods are released as after a verified off (kubectl fence status %s)\n", node, user, node)
			return nil
		}
		if r := s.ConfirmationRefused; r != "" && r != refusedBefore {
			return fmt.Errorf("node %s: the controller refused the confirmation: %s", node, r)
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("node %s: the controller has not acted on the confirmation within %v (is it running? kubectl fence status %s)", node, wait, node)
			if r := s.ConfirmationRefused; r != "" {
				msg += "; the record says: refused: " + r
			}
			return fmt.Errorf("%s", msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
