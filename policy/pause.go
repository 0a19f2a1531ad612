package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Names of the gates of this file, as they appear in Decision.Gate.
const (
	// GatePause names the refusals of Paused.
	GatePause = "pause"
	// GateExcluded names the refusals of Excluded.
	GateExcluded = "excluded"
	// GateDetectOnly names the refusals of DetectOnly.
	GateDetectOnly = "detect-only"
)

// Pause is a request that holds every fencing: who asked, and why.
type Pause struct {
	// Name names the request (the ConfigMap fence-pause-NAME of the
	// Kubernetes controller).
	Name string
	// By is who asked for it, as the API server authenticated them
	// (deploy/pause-policy.yaml makes the annotation fencekit.io/paused-by
	// equal the requester's user name).
	By string
	// Reason says why, in the requester's words.
	Reason string
	// Since is when it was made.
	Since time.Time
}

// PauseSource returns the pause requests in force.
type PauseSource func(ctx context.Context) ([]Pause, error)

// Paused refuses every fencing while src returns a pause request, naming
// who asked and why (the first, by name, and how many more). A fencing it
// refuses is not lost: it is asked again at every pass, and admitted once
// the last request is gone, when the node is still unresponsive. A source
// that cannot be read refuses too: a pause may be in force.
func Paused(src PauseSource) Gate {
	return GateFunc(func(ctx context.Context, _ Candidate, cl Cluster) Decision {
		ps, err := src(ctx)
		if err != nil {
			return Refuse(GatePause, "the pause requests cannot be read, so fencing is held: %v", err)
		}
		if len(ps) == 0 {
			return Admitted()
		}
		slices.SortFunc(ps, func(a, b Pause) int { return strings.Compare(a.Name, b.Name) })
		p := ps[0]
		by, why := p.By, p.Reason
		if by == "" {
			by = "an unnamed user"
		}
		if why == "" {
			why = "no reason given"
		}
		msg := fmt.Sprintf("fencing paused by %s (request %s", by, p.Name)
		if !p.Since.IsZero() {
			loc := time.UTC
			if !cl.Now.IsZero() {
				loc = cl.Now.Location()
			}
			msg += ", since " + p.Since.In(loc).Format(time.DateTime)
		}
		msg += "): " + why
		if len(ps) > 1 {
			msg += fmt.Sprintf(" (and %s)", plural(len(ps)-1, "more request", "more requests"))
		}
		return Refuse(GatePause, "%s", msg)
	})
}

// The node labels that exclude a node from fencing (Excluded): fencekit's
// own, and the one Node Health Check honours, so that a node an operator
// took out of remediation is not fenced by fencekit either.
const (
	ExcludeLabel      = "fencekit.io/exclude-from-fencing"
	MedikExcludeLabel = "remediation.medik8s.io/exclude-from-remediation"
)

// Excluded refuses to fence a node that carries one of Labels (any value
// but "false"); nil Labels means ExcludeLabel and MedikExcludeLabel.
type Excluded struct {
	Labels []string
}

// Admit refuses a candidate excluded by a label, naming the label.
func (e Excluded) Admit(_ context.Context, c Candidate, cl Cluster) Decision {
	labels := e.Labels
	if labels == nil {
		labels = []string{ExcludeLabel, MedikExcludeLabel}
	}
	nl := c.labels(cl)
	for _, l := range labels {
		if v, ok := nl[l]; ok && !strings.EqualFold(v, "false") {
			return Refuse(GateExcluded, "node %s carries the label %s=%s: excluded from fencing (remove the label to allow it)", c.Node.Name, l, v)
		}
	}
	return Admitted()
}

// DetectOnly refuses every fencing that the gates before it admitted,
// saying what would have started: put it last (All), so that a record
// tells whether the node would have been fenced now or refused by another
// gate and why, while no device is switched and no pod released. For a
// first deployment, to see what the controller would do.
func DetectOnly() Gate {
	return GateFunc(func(_ context.Context, c Candidate, _ Cluster) Decision {
		step := c.Step
		if step == "" {
			step = "fencing"
		}
		return Refuse(GateDetectOnly, "detect-only mode: %s of node %s would start now; no device is switched and no pod released", step, c.Node.Name)
	})
}
