package policy

import (
	"context"
	"fmt"
	"time"
)

// Node is one node of the cluster as the gates see it when they decide.
type Node struct {
	// Name is the node's name.
	Name string
	// Labels are the node's labels.
	Labels map[string]string
	// ControlPlane is true for a control-plane node.
	ControlPlane bool
	// Unresponsive is true when the node has not been ready for the
	// configured duration.
	Unresponsive bool
	// Unschedulable is true for a cordoned node (spec.unschedulable).
	Unschedulable bool
	// Fencing is true while a fencing of the node is in flight: from its
	// admission until its power management is done (see
	// fence.NodeFence.Active). A node fenced for good is no longer in
	// flight, but stays Unresponsive until it is back.
	Fencing bool
}

// Cluster is what the gates see of the cluster: every node, at one time.
type Cluster struct {
	// Now is the time of the observation.
	Now time.Time
	// Nodes lists every node of the cluster, the candidate included.
	Nodes []Node
}

// Candidate is the fencing a gate is asked to admit.
type Candidate struct {
	// Node is the node to fence; its entry in Cluster.Nodes describes it.
	Node Node
	// Step is the fencing step about to start, such as "isolation" or
	// "power-management".
	Step string
}

// labels returns the candidate's labels: its own, or, when it carries
// none, those of its entry in the cluster view.
// node returns the candidate's entry in cl, or the candidate's own Node
// when cl has none.
func (c Candidate) node(cl Cluster) Node {
	for i := range cl.Nodes {
		if cl.Nodes[i].Name == c.Node.Name {
			return cl.Nodes[i]
		}
	}
	return c.Node
}

func (c Candidate) labels(cl Cluster) map[string]string {
	if c.Node.Labels != nil {
		return c.Node.Labels
	}
	for i := range cl.Nodes {
		if cl.Nodes[i].Name == c.Node.Name {
			return cl.Nodes[i].Labels
		}
	}
	return nil
}

// Decision is a gate's answer. A refusal names the gate and says why, in
// words a user can act on.
type Decision struct {
	// Admit is true when the fencing may proceed.
	Admit bool
	// Gate names the gate that refused, empty when admitted.
	Gate string
	// Reason says why the gate refused, empty when admitted.
	Reason string
	// RetryAfter hints when asking again may give another answer; zero
	// means at the next pass. A refused fencing is re-evaluated, never
	// dropped.
	RetryAfter time.Duration
}

// Admitted is the decision that lets a fencing proceed.
func Admitted() Decision { return Decision{Admit: true} }

// Refuse returns a refusal by gate with a formatted reason.
func Refuse(gate, format string, args ...any) Decision {
	return Decision{Gate: gate, Reason: fmt.Sprintf(format, args...)}
}

// String renders the decision for logs and events: "admitted" or
// "refused by <gate>: <reason>".
func (d Decision) String() string {
	if d.Admit {
		return "admitted"
	}
	return "refused by " + d.Gate + ": " + d.Reason
}

// Gate admits or refuses one fencing. Implementations are safe for
// concurrent use; a gate that keeps state (such as a storm guard's
// cooldown) reads the time from Cluster.Now, never from the clock.
type Gate interface {
	Admit(ctx context.Context, c Candidate, cl Cluster) Decision
}

// GateFunc adapts a function to the Gate interface.
type GateFunc func(ctx context.Context, c Candidate, cl Cluster) Decision

// Admit calls f.
func (f GateFunc) Admit(ctx context.Context, c Candidate, cl Cluster) Decision {
	return f(ctx, c, cl)
}
