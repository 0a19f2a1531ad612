// Package policy decides whether a fencing may start: the cluster fence
// policies of the Kubernetes node fencing design, whose first purpose is to
// prevent fencing storms (many nodes fenced at once because a switch or the
// management network failed, not the nodes).
//
// The fence controller asks a Gate before it starts each fencing step of a
// node, with the Candidate (the node and the step) and what it sees of the
// Cluster (every node, whether it is unresponsive, control-plane or being
// fenced, and the time of the observation). The gate answers with a
// Decision: admitted, or refused by a named gate with a reason a user can
// read, such as
//
//	refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%; fencing resumes 5m0s after the storm ends
//
// A refusal is not final: the controller keeps the fencing and asks again
// at its next pass (Decision.RetryAfter hints when the answer may change).
// Gates decide from their arguments alone; they do no I/O and read no
// clock, only Cluster.Now.
//
// Gates are safe for concurrent use, but each decides on the view it is
// given: two fencings admitted on the same view do not see each other, and
// together they may exceed MaxInFlight. The controller decides about one
// candidate at a time and marks an admitted node Fencing in the view it
// passes next.
//
// # Gates
//
//   - StormGuard refuses while more than MaxUnresponsivePercent of the
//     nodes, or more than MaxUnresponsive nodes, are unresponsive, and for
//     a Cooldown after the last pass that saw such a storm. The candidate
//     counts as unresponsive, and so do unresponsive nodes that are being
//     fenced. It keeps state (the last storm seen) behind a mutex.
//   - ZoneStormGuard counts the same way within the candidate's failure
//     domain (the nodes with its value of topology.kubernetes.io/zone, or
//     of another label: a rack, a power feed), with its own cooldown per
//     domain, and names the domain when it refuses: a rack of 40 nodes
//     of a 400-node cluster is 10 % of the cluster but all of its rack.
//   - MaxInFlight refuses when N other nodes are being fenced. A fenced node
//     is in flight until it has recovered or its fencing is cleared.
//   - OneControlPlane refuses a control-plane candidate while another
//     control-plane node is being fenced.
//   - All composes gates: it asks them in order and the first refusal wins;
//     the gates after it are not asked. Put a StormGuard first, so that it
//     sees every pass.
//   - Logged logs every decision of a gate to a *slog.Logger.
//
// # Defaults
//
// Default (and DefaultConfig) is All of a storm guard at 50 % with a 5
// minute cooldown and no count bound, a zone storm guard at 55 % of a
// zone and at least 3 nodes with the same cooldown, a limit of 1 fencing
// in flight and one control-plane node at a time. Why these values:
//
//   - 50 %: when more than half of the nodes look unresponsive, the likelier
//     cause is the controller's own view (the management network, a
//     partition that leaves the controller in the minority) than half of
//     the machines failing together; fencing the majority of a cluster
//     is never the remedy. It is the design's "skip fencing if select % of
//     hosts in cluster is non-responsive", close to the node lifecycle
//     controller's own threshold for an unhealthy zone (55 %). In a cluster
//     of 3 it admits fencing one node and refuses two; of 2, it admits one.
//   - 55 % of a zone, and 3 nodes: kube-controller-manager's own rule for
//     a partly disrupted zone (its --unhealthy-zone-threshold, and more
//     than two not-ready nodes), under which it stops evicting pods there
//     too. A zone is whatever its label says: a cluster whose racks are
//     its failure domains labels them, or points Label at its own label.
//   - No count bound by default: a fixed number fits one cluster size only.
//     Large clusters should add one (MaxUnresponsive), since 50 % of 1,000
//     nodes is a storm long before it reaches 500.
//   - 5 minutes of cooldown: after a network failure heals, nodes come back
//     within a few node-monitor grace periods (40 to 50 s) and some
//     flap; 5 minutes, the default time Kubernetes waits before it evicts
//     the pods of a not-ready node, lets the cluster settle before fencing
//     resumes.
//   - 1 fencing in flight: fencing is destructive and a slow fencing
//     (power off, verify, wait for the node to come back) is usually the
//     whole story; one at a time is what an operator expects of a first
//     deployment. A node that stays fenced holds the slot until it
//     recovers or its fencing is cleared, and every other fencing waits
//     with the reason "1 fencing in flight (node-3), at the limit of 1";
//     raise MaxInFlight for large clusters.
//   - One control-plane node at a time: fencing two members of a three-member
//     control plane together loses the etcd quorum.
//
// # Configuration
//
// Config holds the same choices as JSON or YAML (ParseConfig reads it over
// the defaults, Validate names the field at fault, Config.Gate builds the
// gate):
//
//	stormGuard:
//	  maxUnresponsivePercent: 30
//	  maxUnresponsive: 10
//	  cooldown: 10m
//	zoneStormGuard:
//	  label: topology.kubernetes.io/zone
//	  maxUnresponsivePercent: 55
//	  minUnresponsive: 3
//	  cooldown: 10m
//	maxInFlight: 2
//	oneControlPlane: true
//
// In every limit 0 turns the limit off.
//
// # What the gates do not cover
//
// The design's other storm rule, "skip fencing if detected the host cannot
// connect to storage", needs an observation this package does not have
// (the host's storage paths); a Gate of the caller's (GateFunc) can add it,
// as the fencegroup package adds a Ceph-aware budget. The storm guard's
// memory lives in the process: LastStorm and RecordStorm let a controller
// keep it across restarts. The zone guard's per-domain memory is not kept
// across restarts: a new leader learns a zone's storm at its first pass
// over it, and a cooldown under way in one zone is lost.
package policy
