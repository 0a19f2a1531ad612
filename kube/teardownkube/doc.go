// Package teardownkube is the Kubernetes side of a node teardown
// (teardown.Cluster) over a client-go clientset, which kubectl's drain
// library takes: it reads a node, its Lease and its pods, drains it with
// kubectl drain's semantics, sets and removes its labels, and deletes it.
//
//	c := teardownkube.New(clientset, teardownkube.Options{Logger: logger})
//	err := c.Drain(ctx, "node-2", teardown.DrainOptions{
//		Timeout: time.Hour, GracePeriod: 30 * time.Minute,
//		IgnoreDaemonSets: true, DeleteEmptyDirData: true,
//	}, func(p teardown.DrainProgress) { fmt.Println(p.Message) })
//
// BareMetalHosts is the teardown's provisioner on a metal3 cluster
// (teardown.Provisioner), over a controller-runtime client as the other
// BareMetalHost parts (kube/rebootkube): the baremetal-operator
// deprovisions the host (its disks cleaned, or kept with
// preserve-local-storage) and the host is released from its machine's
// claim once the teardown confirmed it off.
//
// The package is named teardownkube, not teardown, so that a controller
// can import it beside package teardown without renaming either.
//
// # Drain
//
// Drain is k8s.io/kubectl/pkg/drain: it cordons the node (a strategic
// merge patch of spec.unschedulable, checked on the node the server
// returns), picks the pods to evict with kubectl's filters and evicts them
// through the eviction API, which enforces PodDisruptionBudgets. The
// options are kubectl drain's flags: DrainOptions.Timeout is --timeout,
// GracePeriod is --grace-period (zero means each pod's own
// terminationGracePeriodSeconds, kubectl's default of -1), Force is
// --force, IgnoreDaemonSets is --ignore-daemonsets, DeleteEmptyDirData is
// --delete-emptydir-data; kubectl's messages that name those flags mean
// these fields.
//
// A budget that allows no disruption makes the server answer 429 Too Many
// Requests; the drain tries again every Options.EvictionRetryDelay (5 s,
// as kubectl) until the timeout, and then fails with an *Error whose
// Remaining names each pod left and why: the server's explanation of the
// refusal ("The disruption budget web needs 2 healthy pods and has 2
// currently") and the budgets that select the pod with the disruptions
// they allow. The timeout bounds every request of the drain, not only the
// waits between them: a drain outlives it only by the pause between two
// attempts at an eviction that it may be in (EvictionRetryDelay) and by
// the reads that explain a failure (at most 10 s). A failed drain leaves
// the node cordoned.
//
// A pod counts as gone when the server no longer has it (or has a new pod
// of the same name): an evicted pod bound to a node is deleted gracefully,
// and only its kubelet ends it. A pod whose node has no running kubelet
// therefore stays Terminating, and the drain fails at its timeout naming
// it, unless Options.SkipWaitForDeleteTimeout lets it stop waiting for
// pods whose grace period ended long ago (kubectl's
// --skip-wait-for-delete-timeout). Observed on kube-apiserver v1.37.1 with
// no kubelet (the package's integration tests): an eviction with a grace
// period of zero (GracePeriod zero and a pod whose
// terminationGracePeriodSeconds is 0) removes the pod at once; with a
// positive grace period the pod gets a deletion timestamp at the end of
// that period and its deletionGracePeriodSeconds, and is never removed; a
// finished pod (Succeeded, Failed) is removed at once whatever the grace
// period; a pod with a finalizer stays until the finalizer is removed, and
// the drain waits for it. An evicted pod carries the DisruptionTarget
// condition (reason EvictionByEvictionAPI) while it terminates.
//
// After a round of evictions the drain lists the node's pods again and
// evicts those that arrived meanwhile, at most three rounds: Drain
// returns nil only when no pod that the options cover is left.
//
// # Progress and output
//
// The progress callback receives, in order and never concurrently: the
// cordon, the start of each pod's eviction, each refusal (once per pod and
// reason), each pod that left the node (DrainProgress.Done), kubectl's
// warnings, and the end ("node/NAME drained"). Nothing is printed: what
// kubectl drain would print goes to Options.Logger, one record per line
// with the node's name.
//
// # Errors
//
// Every error of the package is an *Error naming the node, the operation
// (OpGet, OpCordon, OpDrain, ...) and, for bad input, the field. A node
// that does not exist gives an error wrapping teardown.ErrNodeNotFound,
// from every method. Setting labels is one JSON merge patch naming only
// the labels asked for (null removes), checked on the node the server
// returns; deleting a node is preconditioned on its UID and confirmed by a
// read that no longer finds it.
package teardownkube
