// Package fencekube is the Kubernetes adapter of the fence controller
// (package fence/controller): implementations of its ports on
// controller-runtime clients, and the NodeFence custom resource. Package
// kube/fencectrl runs them on a controller-runtime manager's cache (its
// informers, its event recorder, its leader election): the one way
// fencekit runs on Kubernetes.
//
// # Parts
//
//   - NodeFence (group fencekit.io, version v1alpha1, cluster-scoped, named
//     after its node) is the custom resource that persists one node's
//     fencing; its Go types are package api/v1alpha1's, and
//     config/crd/fencekit.io_nodefences.yaml, generated from them, defines
//     it, with a status subresource, the conditions Processing, Fenced,
//     PodsReleased and Succeeded (Conditions), and the printer columns
//     Node, Step, Status, Fenced, Retries and Age. Record and FromRecord
//     convert between the Go type and flow.NodeFence.
//   - Store keeps the records in NodeFence objects through a
//     controller-runtime client of the typed API (controller.Store): a
//     manager's client and APIReader, or a host's fake client in its
//     tests.
//   - Health tells the nodes' health from a Node informer
//     (controller.Health).
//   - ConfigSource reads the ConfigMaps of the Kubernetes node-fencing
//     design (fence-config-*, fence-method-*, fence-method-template-*) of
//     one namespace, parses them and checks them against the drivers
//     with config.ParseFor
//     (controller.ConfigSource).
//   - Remediations reads the NodeFenceRemediation objects that Node Health
//     Check and Cluster API's MachineHealthCheck create for unhealthy nodes,
//     tells the controller which nodes to fence (controller.Requests), and
//     keeps their status (conditions Processing, Fenced, PodsReleased,
//     Succeeded) and finalizer: a controller-runtime reconciler keyed by
//     remediation, which kube/fencectrl sets up on its manager.
//   - Secrets reads the Secrets that fence methods name for their
//     credentials (config.SecretSource).
//   - TaintPods and DeletePods are the two pod treatments after a verified
//     fence (controller.Pods): the out-of-service taint, or force deletion.
//   - RecorderEvents records events on the Node objects through an event
//     recorder of the events.k8s.io API (a controller-runtime manager's)
//     (controller.Events).
//
// # Concurrency: why two controllers never fence a node twice
//
// Every write of a NodeFence carries the resourceVersion it was read at,
// and the API server refuses a stale one (409 Conflict, reported as an
// error wrapping controller.ErrConflict); a create of an object that
// exists is refused too. The controller persists each transition (a job
// started, a job finished) before acting on it, so of two controllers
// racing on one node only the one whose write succeeded runs the job; the
// other drops its work on the node. Leader election only keeps the
// replicas from doing the same work: a lease is not fencing (a leader that
// lost its lease may still act until it notices).
//
// # Reading is strict
//
// A NodeFence that does not convert (an unknown step or status, spec.node
// that is not the object's name, a negative count) is never guessed at:
// Store.Get returns an *Error wrapping ErrMalformed that names the object
// and the field; Store.List leaves the object out, logs it and reports it
// as a warning event (NodeFenceMalformed) on its node, so that one bad
// object never stops the controller's passes over the other nodes. The node
// is not fenced through that object until a user fixes or deletes it. The
// CRD's schema refuses the rest (a field of the wrong type, a time that is
// not RFC 3339 with six digits of fraction, a step outside its enum): a
// typed client could not decode them, and one such object would stop the
// whole list.
//
// # Spec, status and finalizer
//
// The controller writes spec only when it creates the object (spec.node,
// the node), and status only through the status subresource. A user asks
// for a Failed fencing to be retried by raising spec.retry: the record
// reads Clear while spec.retry is above status.observedRetry, and once the
// controller has acted on it the store writes observedRetry. Every object
// is created with the finalizer fencekit.io/restore-pods: a user's delete
// leaves it in place with a deletionTimestamp (the record reads Deleting),
// the controller undoes the pod treatment (removes the out-of-service
// taint) and then Forget removes the finalizer.
//
// # Pod treatment
//
// TaintPods adds node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
// after a power fence (a device confirmed the node off, as Kubernetes
// requires of that taint) and removes it once the node is back and ready,
// or when the fencing is abandoned. DeletePods force-deletes pods as the
// node-fencing design says: after a storage fence the pods that used
// persistent storage, after a power fence all of the node's pods.
//
// # Clients and informers
//
// Every port reads and writes through a controller-runtime client of the
// typed API (a manager's, or a host's fake client in its tests): Store,
// Remediations, TaintPods and DeletePods, Admissions, ConfirmationProof,
// DeviceConditions, Secrets, NodeMaintenances, and ConfigSource before its
// informer has synced. The package runs no informer of its own: Health and
// ConfigSource read one their owner runs (UseInformer, UseCache: a
// manager's cache, as kube/fencectrl gives them; or NewNodeInformer's, for
// a host without a manager), so that a pass over 10,000 nodes reads
// memory: Health.Nodes reads the Node cache, ConfigSource.Config parses the
// ConfigMaps again only after one changed. Store.List reads its client (a
// manager's cache) and converts each NodeFence once per resourceVersion;
// Store.Get always reads the API server.
//
// One part stays apart, for two measurements: Leases reads the node
// leases through a protobuf clientset with a reflector into a map of names
// and times. Every node renews its lease every 10 s; decoding those watch
// events as JSON cost the controller 75 ms of CPU a second at 5,000 nodes,
// as protobuf 41 to 44; and an informer's Lease objects and keys took
// about 700 bytes a node of heap where the map takes about 60
// (BENCHMARKS.md).
//
// # What the controller needs of RBAC
//
// Each rule is a +kubebuilder:rbac marker beside the code that needs it,
// with the reason; scripts/generate.sh (make generate) writes
// deploy/rbac.yaml's ClusterRole and Role from them, and make test fails
// when the file is not what the markers generate.
package fencekube
