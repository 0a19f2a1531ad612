// Package fencegroup keeps fencing from taking more from a Ceph cluster
// than it can lose: a Ceph-aware fence budget, the fence-group labels of the
// machines that run OSDs, a shared health source, and a policy gate for the
// fence controller. It follows the design of Rook's managed machine
// disruption budgets: only one machine of a cluster's fence group may be
// fenced at a time, and only while Ceph is fully recovered.
//
// # The rules
//
// The budget of a cluster (Rules.Budget) is maxUnavailable 1 when every
// placement group is active+clean, else 0. A PG counts as clean when its
// state has the flags active and clean, plus at most the flags of
// Rules.CleanFlags (by default the background work that does not reduce
// redundancy: scrubbing, deep, snaptrim, snaptrim_wait, as Rook's default
// pgHealthyRegex accepts). Anything the package cannot vouch for counts as
// not clean: no status, a status older than its stale bound or never read,
// PG statistics the manager has not gathered yet, state counts that do not
// add up to the total, no PG reported while pools exist. A cluster with no
// pool and no PG is clean: it holds no data.
//
// The fence group of cluster <name> (Rules.Labels) is the set of machines
// that run its OSDs: each carries the label fencegroup.rook.io/<name> (any
// value; LabelValue is written), and machines without OSDs do not. An OSD
// runs on the host the CRUSH map links it under (ceph osd tree) or the
// hostname it reported (ceph osd metadata); hosts are matched to machines
// without case, with dots taken as dashes as Rook names CRUSH hosts, through
// a machine's other names (Machine.Hosts: a Machine's node, a node's
// hostname), and by short name when nothing matches in full. A machine
// stays in its group while any OSD of the cluster that is not destroyed is
// placed on it, up or down; Rules.ReleaseDownMachines follows the upstream
// design's first example flow instead and takes a machine whose OSDs are
// all down out of the group. When the placement was not read, no label is
// added or removed.
//
// # Input as Ceph prints it
//
// ParseStatus reads ceph status --format json (the pgmap's pgs_by_state,
// num_pgs and num_pools; the osdmap totals, flat as Pacific and later print
// them or nested one level deeper as earlier releases do). ParsePGStat
// reads ceph pg stat --format json, in its manager shape (pg_ready and
// pg_summary) or its older monitor shape. ParseOSDTree and ParseOSDMetadata
// read the placement. Every error is a *ParseError naming the command's
// output and the field at fault; the parsers are fuzzed, and testdata holds
// the outputs of real releases they are tested on.
//
// # Health
//
// A Health caches one cluster's status for the gate and the labeler: Run
// reads it every Interval (60 s by default) from a Source, Refresh reads it
// on demand, At gives a Snapshot. A refresh that fails keeps the last status
// but records the error; when no refresh has succeeded for StaleAfter (two
// intervals by default), or the first read failed, the snapshot is stale
// and its budget is 0, with a reason that says since when and why. CLI is
// the Source that runs the ceph command (ceph status --format json, then
// ceph osd tree --format json), each command bounded by a timeout that
// kills its whole process group; its errors quote the command's standard
// error, clipped and with keys removed, and never its arguments. A status
// with no PGs and no pools, which the monitors also print before the
// manager's first statistics (while pools with data exist), is checked
// against the OSD map's pools (ceph osd pool ls --format json,
// ParsePoolList): pools there and no PGs reported is not clean.
//
// # The gate
//
// Gate is a policy.Gate for the fence controller. A node outside the group
// passes through (to the other gates). A node in the group (by label, or by
// the placement in the health's status, so that a label not written yet
// does not let it slip out) is fenced only when the budget allows one more
// unavailable machine, counting the other machines of the group being
// fenced, and those unresponsive that come before it by name (so that two
// nodes failing together are fenced one after the other, not never). A
// node already being fenced is admitted for its later steps (power
// management after isolation): the PGs its own isolation degraded must not
// stall its fencing halfway. Every refusal says why: "12 of 256 PGs not active+clean (8
// active+undersized+degraded, 4 peering) in Ceph cluster rook-ceph; worker-1
// is in its fence group", "Ceph health of cluster rook-ceph is stale since
// ...", "... allows 1 unavailable machine in its fence group and worker-0
// (being fenced) is already unavailable". Gates puts the gates of several
// Ceph clusters together.
//
// The two example flows of the design, with the default rules:
//
//   - The node to fence has its OSDs down: Ceph has marked them down, the
//     PGs are degraded, and the node waits until Ceph has recovered (marked
//     the OSDs out and backfilled), then is fenced. With
//     ReleaseDownMachines, it leaves the group once Ceph reports its OSDs
//     down and is fenced at once.
//   - The node to fence has its OSDs up: the PGs are clean, the node is
//     fenced; its OSDs go down with it, the PGs degrade, and the next node
//     of the group waits until they are clean again.
//
// The Kubernetes side (writing the labels on Nodes or cluster-api Machines,
// and the budget as a PodDisruptionBudget or a MachineDisruptionBudget) is
// package kube/fencegroupkube; this package imports no client library.
package fencegroup
