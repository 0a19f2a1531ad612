// Package teardown tears a bare-metal Kubernetes node down before it is
// redeployed, as the Airship node teardown design (the redeploy_server
// action) describes: drain it, clear its labels, take it out of its etcd
// clusters without breaking their quorum, wait for etcd to be healthy, shut
// its kubelet down, wipe the server, power it off, release it from the
// provisioner, and delete its Node.
//
// A Request (ParseRequest reads one from the teardown design's query
// parameters) is validated by Executor.Plan into a Plan: ordered steps,
// each with its timeout and whether its failure stops the plan, each saying
// what it will do (Plan.DryRun prints them; nothing is changed).
// Executor.Run runs a plan over four ports, which this package declares and
// others implement: Cluster (kube/teardownkube, client-go and kubectl's
// drain), Etcd (teardown/etcdv3, the etcd v3 client), Provisioner (the
// site's provisioner) and RevisionStore (the design revisions;
// MemoryRevisions is an in-memory one). Power goes through the fence core
// (fence.DoLevels), so any fence driver powers the node off, and only an
// off the device confirms counts. The Report of a run has each step's
// outcome (Done, Skipped, Failed, NotRun) and timing, and Report.Status is
// the teardown design's Airship status response. The package does no I/O of
// its own, reads the clock through Executor.Now and Executor.Sleep, and
// logs through an injected *slog.Logger.
//
// # Steps
//
//  1. drain: cordon and evict with kubectl drain's settings as the teardown
//     design runs it (--force --ignore-daemonsets --delete-emptydir-data,
//     the grace period and timeout of the request), PodDisruptionBudgets
//     respected; progress goes to Executor.Observer. Done only once the
//     node is seen cordoned with no pod left but DaemonSet, mirror and
//     finished ones.
//  2. clear-labels: remove the labels added to the node, then wait until
//     they are gone and no pod on the node is terminating (polled every
//     Executor.Poll).
//  3. remove-etcd: in every etcd cluster, find the members on the node and
//     remove them if the quorum allows it (see below); retried every
//     Executor.EtcdPoll until remove-etcd-timeout while it does not.
//  4. etcd-ready: poll every EtcdPoll (30 s, as in the teardown design)
//     until, in every cluster, the members not on the node are healthy, up
//     to etcd-ready-timeout.
//  5. shutdown-kubelet: set promenade-decomission=enabled (the teardown
//     design's spelling) and wait until the node's Lease and Ready
//     heartbeat stop changing for Executor.KubeletStale (60 s; 6 minutes
//     for a node without a Lease, whose heartbeat a live kubelet may leave
//     unchanged for 5 minutes). Best effort, as the design says: its
//     failure does not stop the plan, and shows as an error in the status
//     details.
//  6. destroy-node: the Provisioner wipes every local disk, or only the OS
//     disk with preserve-local-storage, for the chosen design revision
//     (Provisioner.Destroy gets both, as Drydock's destroy node does).
//  7. power-off: fence.DoLevels with fence.ActionOff over the levels
//     Executor.Power gives; the step is Done only when a device confirmed
//     the node off (fence.TopologyResult.Fenced).
//  8. release-node: the Provisioner releases the server, which is off
//     (the design: "the target node should be shut down", then "removed
//     from the provisioner"; never the other way round).
//  9. remove-from-cluster: refuse with 409 Conflict unless the node is
//     cordoned, drained and has no label left (LeftoverLabels), then delete
//     the Node and wait until it is gone.
//
// # Where the teardown design leaves a choice open
//
//   - Which labels are "the labels that have been added": every label but
//     the kubelet's own well-known ones (KubeletLabel) and
//     promenade-decomission, or exactly the keys of Request.Labels. The 409
//     check of remove-from-cluster reads "no labels other than
//     promenade-decomission: enabled" with the same rule (LeftoverLabels),
//     so a node that clear-labels has cleared passes it: the kubelet's own
//     labels, which every registered node has, are not counted.
//   - A member "on the node" (MemberOnNode): its name is the node's name,
//     or a peer or client URL's host is the node's name or one of its
//     addresses (its Node's status addresses and Request.Addresses).
//   - The quorum rule (Quorum): removing a voting member needs the healthy
//     voting members that remain, not counting any on the node, to be a
//     majority of the voting members that remain. Removing a learner needs
//     nothing; removing a cluster's last voting member is refused at once.
//     Refusals are RemoveEtcdError, and say the counts.
//   - Etcd health: a member is healthy when it serves a linearizable read
//     and has no alarm (the Etcd port). A cluster is ready when at least
//     Executor.EtcdMinHealthy of its members not on the node are healthy
//     (default: all of them; the teardown design's "minimum functionality"
//     threshold of its EtcdClusters document) and a majority of its voting
//     ones. A failure to become ready is EtcdNotAccessible.
//   - The teardown design's drain rule "grace period must be less than
//     timeout" holds after defaults: a drain timeout given alone, not above
//     the default grace period, gets half of itself as grace period instead
//     of a BadRequest. A timeout of 0 asks for the default; timeouts the
//     design does not name (shutdown-kubelet, destroy-node, power-off,
//     release-node, remove-from-cluster) have defaults of their own.
//   - The design revision: the newest (highest ID) revision with the
//     target's tag, or the newest committed one; a revision asked by
//     number must exist and be committed. A missing one, and intermediate
//     commits without allow-intermediate-commits, are 412
//     PreconditionFailed. Tagging a finished site action is TagSiteAction's
//     job, left to the caller, which knows whether its action is one.
//   - Status codes: a step of the decommission (drain to shutdown-kubelet)
//     that stops the plan makes it 500 DisassociateStepFailure;
//     destroy-node, power-off and release-node 500 DestroyNodeError;
//     remove-from-cluster
//     409 Conflict or 500 DeleteNodeError. Each step's own reason is in the
//     details, and StepResult.Status is the response of the teardown
//     design's per-step API.
//
// # Reruns
//
// Every step first looks at what is already done, so that running a plan
// again after a partial run succeeds: a node already cordoned and drained,
// labels already gone, an etcd member already removed, a node already off
// or already deleted make their step Skipped (never Done without having
// checked). The steps of the Kubernetes side skip a node that is no longer
// in the cluster; Executor.Plan, however, answers 404 NotFound for a node
// that does not exist, as the teardown design's APIs do, so keep the Plan
// to continue a run whose Node is already deleted.
package teardown
