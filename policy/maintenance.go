package policy

import (
	"context"
	"maps"
	"slices"
	"strings"
)

// GateMaintenance names the refusals of UnderMaintenance.
const GateMaintenance = "maintenance"

// MaintenanceConfig says when a node counts as under maintenance, and is
// not fenced (UnderMaintenance): a node that stops answering because
// someone is working on it, or an upgrade reboots it, must not be switched
// off under their hands.
type MaintenanceConfig struct {
	// NodeMaintenance: a NodeMaintenance object (medik8s'
	// node-maintenance-operator, nodemaintenance.medik8s.io) names the
	// node, or (as kube/fencectrl reads them) one of its node lifecycle
	// conditions (MaintenanceInProgress, DrainInProgress,
	// GracefulNodeShutdownInProgress: Kubernetes' KEP-5683) is True. On by
	// default.
	NodeMaintenance bool `json:"nodeMaintenance" yaml:"nodeMaintenance"`
	// Cordoned: the node is unschedulable (cordoned, as a drain for an
	// upgrade or a maintenance leaves it). Off by default: a cordoned node
	// that dies is then never fenced.
	Cordoned bool `json:"cordoned" yaml:"cordoned"`
	// Labels: the node carries one of these labels, with this value ("" for
	// any value), such as the label an upgrade tool puts on the node it
	// works on.
	Labels map[string]string `json:"labels" yaml:"labels"`
}

// Maintenance is a maintenance of a node that a MaintenanceSource reports.
type Maintenance struct {
	// Node is the node under maintenance.
	Node string
	// Kind says what reports it: "" for a NodeMaintenance object,
	// "condition" for a node lifecycle condition that is True
	// (MaintenanceInProgress, DrainInProgress,
	// GracefulNodeShutdownInProgress).
	Kind string
	// Name names the maintenance (the NodeMaintenance object, or the
	// condition's type).
	Name string
	// Reason says why, in the words of whoever started it.
	Reason string
}

// MaintenanceSource returns the maintenances in force.
type MaintenanceSource func(ctx context.Context) ([]Maintenance, error)

// UnderMaintenance refuses to fence a node under maintenance as c says,
// naming what makes it so; src gives the NodeMaintenance objects (nil: none
// are read). A source that cannot be read refuses, as a pause does: the
// node may be under maintenance.
func UnderMaintenance(c MaintenanceConfig, src MaintenanceSource) Gate {
	return GateFunc(func(ctx context.Context, cand Candidate, cl Cluster) Decision {
		n := cand.Node
		if c.NodeMaintenance && src != nil {
			ms, err := src(ctx)
			if err != nil {
				return Refuse(GateMaintenance, "the NodeMaintenance objects cannot be read, so node %s may be under maintenance: %v", n.Name, err)
			}
			for _, m := range ms {
				if m.Node == n.Name {
					why := m.Reason
					if why == "" {
						why = "no reason given"
					}
					if m.Kind == "condition" {
						return Refuse(GateMaintenance, "node %s is taken out of service on purpose (its condition %s is True): %s", n.Name, m.Name, why)
					}
					return Refuse(GateMaintenance, "node %s is under maintenance (NodeMaintenance %s): %s (delete it when the work is done)", n.Name, m.Name, why)
				}
			}
		}
		if c.Cordoned && (n.Unschedulable || cand.node(cl).Unschedulable) {
			return Refuse(GateMaintenance, "node %s is cordoned (unschedulable): taken as drained for maintenance or an upgrade (uncordon it to allow fencing)", n.Name)
		}
		nl := cand.labels(cl)
		for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
			want := c.Labels[k]
			if v, ok := nl[k]; ok && (want == "" || v == want) {
				return Refuse(GateMaintenance, "node %s carries the label %s=%s: under maintenance", n.Name, k, v)
			}
		}
		return Admitted()
	})
}

// validate checks the labels of c.
func (c MaintenanceConfig) validate(bad func(field, format string, args ...any)) {
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if !labelKey.MatchString(k) || len(k) > 317 {
			bad("maintenance.labels", "%q is not a label key", clipKey(k))
		}
		if v := c.Labels[k]; len(v) > 63 || strings.ContainsAny(v, " \t\n") {
			bad("maintenance.labels."+clipKey(k), "%q is not a label value", clipKey(v))
		}
	}
}

func clipKey(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
