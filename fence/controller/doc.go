// Package controller is the fence controller of the node fencing design:
// it watches the nodes' health, and fences each node that stays not ready,
// step by step (isolation, power management, recovery), through the
// verified actions of package fence.
//
// It is built from ports, so that it runs the same in a test, in a process
// outside the cluster and in a pod:
//
//   - Health: the nodes and their Ready condition (an informer in
//     kube/fencekube).
//   - Store: the NodeFence records (MemoryStore here, a custom resource with
//     optimistic concurrency in kube/fencekube).
//   - ConfigSource: the node-fencing design's ConfigMaps, parsed by
//     config.Parse.
//   - policy.Gate: admits or refuses each fencing step (storm guard,
//     fencings in flight, control-plane nodes, Ceph fence groups). In the
//     cluster view the gates see, every node that is not ready counts as
//     unresponsive at once; only candidates must have been not ready for
//     Options.UnhealthyAfter. The nodes of one failure turn not ready
//     spread over a heartbeat interval, and the first must not be fenced
//     before the others are counted.
//   - Pods: the pod treatment after a verified fence (out-of-service taint
//     or pod deletion) and its undoing; a PodsWaiter also tells when the
//     released pods are gone.
//   - Events and Kdump.
//
// The flow itself is flow.Advance, a pure function; the Controller only
// persists what it returns, then carries out its commands. Every transition
// is persisted before it is acted on, and a step's level runs one switch
// (one job: a method's off or its on, in the order of fence.PlanLevel) at a
// time with each result persisted, so the controller keeps nothing that
// matters in memory: a new instance resumes from the records, and a switch
// that happened before a crash is found done by the next run (every switch
// reads the device first) instead of being made again. A reboot is never
// run again as a whole.
//
// Power management follows the Kubernetes non-graceful node shutdown design
// (KEP-2268): every device of the level is switched off and confirmed off;
// the node is then fenced (NodeFence.FencedAt) and its pods are released
// (the out-of-service taint, or their deletion) while it is off; the
// controller waits, at most flow.Options.PodsTimeout, for them to be
// gone (PodsWaiter); only then are the level's devices switched on again.
// A device that cannot switch the node on again leaves it fenced, off and
// released (NodeFence.OnError, a FencePowerOnFailed event); its recovery
// waits for the node to be ready.
//
// Two controllers racing on one node are kept apart by the store: only one
// of two writes with the same version succeeds, and the loser drops its
// work on the node. Leader election (kube/fencekube) keeps one controller
// busy, but it is the store that prevents a double fencing. The gates see
// the fencings this instance admitted even before its store shows them.
package controller
