// Package rebootkube applies the decisions of package reboot (the metal3
// reboot-annotation state machine) to Kubernetes objects: a BareMetalHost
// (metal3.io/v1alpha1), or any type of the user's that carries the reboot
// annotations and the reboot interface's status fields. Power goes through
// the fence core (fence.Do, by way of reboot.Power), so any fence driver can
// reboot a host.
//
// # The operator's side, or the client's
//
// The Reconciler plays the baremetal-operator's part of the reboot
// interface: it reads the annotations and switches the host's power. Never
// run it beside a baremetal-operator (or any other controller) that manages
// the same hosts: two controllers would switch one host, each on its own
// reading of the annotations. In a cluster that runs the operator, use the
// client's side instead: Client only writes and removes the annotations and
// reads the status the operator keeps (RequestReboot, ReleaseReboot,
// Power), and the operator does the rest.
//
// The package is named rebootkube, not reboot, so that a controller can
// import it beside package reboot without renaming either; it lives under
// kube/ because it is the only part of that feature that needs a
// Kubernetes client.
//
// # Parts
//
// A Mapping says where the reboot fields live in an object (as paths into
// its JSON form): Status.PoweredOn, Spec.Online, the provisioning state and
// how its values map to reboot.Provisioning, pendingRebootSince,
// lastPoweredOn, the mark of a failed power operation, and an optional force
// flag. Metal3Mapping is the mapping of a BareMetalHost; users describe
// their own types with their own Mapping.
//
// A Store reads hosts and writes the three kinds of change a decision
// makes. Hosts is the Store of a controller-runtime client (a manager's,
// or a fake one in tests), which reads and patches the hosts as
// unstructured objects of their kind; Typed is the Store of a typed client
// (a generated clientset's Get and Patch) for users with such clients.
// Both build the same patches, described below; a user with another kind
// of client can implement Store with the helpers AnnotationRemovalPatch
// and StatusPatch.
//
// A Reconciler reads one host, reads its power from its fence device,
// decides (reboot.Decide) and applies the decision, in the order that
// reboot.Decision documents. Call Reconcile again while the returned
// decision is not Nothing, and on any error (errors.Is(err, ErrConflict)
// means at once); a host held off (Decision.HeldOff) waits for its
// annotations to change.
//
// # Where the power state comes from
//
// The fence device is the truth: every Reconcile reads the host's power
// from the device (a fence status read), and Decide sees that state, not
// the status field. The status field (Mapping.PoweredOn) is a record: the
// Reconciler writes it after every verified power operation, and whenever
// the device's answer differs from it. A device that cannot be read counts
// as powered on, as the fence core never takes an unknown state for off:
// a decision made on it can only start a reboot or power the host off (both
// of which then go through the device and fail or succeed verifiably),
// never remove a plain annotation or power the host on; the failure is
// reported, and the power failure mark makes the next power off hard.
//
// # Writes and conflicts
//
// A Decision is applied in this order, stopping at the first failure:
//
//  1. Annotations (RemoveAnnotations) are removed with a JSON patch
//     (RFC 6902) on the object itself that, for each key, first tests the
//     value the decision was made on and then removes the key (keys escaped as
//     RFC 6901 says: "~" as "~0", "/" as "~1"). Annotations the decision
//     does not name are never in the patch, so an annotation another client
//     adds meanwhile survives and does not make the patch fail; a change to
//     (or removal of) one of the named annotations makes the test fail, and
//     the removal is reported as ErrConflict with nothing removed.
//  2. pendingRebootSince is written (or cleared) with a JSON merge patch
//     carrying the resourceVersion the decision was made on, a precondition:
//     when the object changed meanwhile the write fails with ErrConflict and
//     no power operation follows. It goes through the status subresource
//     when the Store is told the resource has one.
//  3. Before a power on, the object is read again: when its resourceVersion
//     changed since the decision, nothing is powered on (ErrConflict), so a
//     keyed annotation added meanwhile is seen by the next decision before
//     the host is powered on. A power off is never held back: off is the
//     safe side of a reboot.
//  4. The power operation goes through reboot.Power: a verified off, soft
//     (the device's graceful off, then a hard off when it is refused or the
//     host is not off within Reconciler.SoftTimeout) or hard, or a verified
//     on.
//  5. What the power operation established is recorded: poweredOn, and
//     after a verified power on lastPoweredOn; on success the power failure
//     mark is cleared, on failure it is set (with the error's message). These
//     are facts about what the device already did, so this merge patch has
//     no precondition (a conflict must not lose them: a lost lastPoweredOn
//     would reboot the host a second time) and is retried a few times.
//
// Every status write is checked against the object the server returns: a
// field that did not take the value written (as when a resource with a
// status subresource is written without it, which the server silently
// ignores) is an error.
//
// # Timestamps
//
// pendingRebootSince and lastPoweredOn are written as metav1.Time writes
// them, RFC 3339 in UTC to the second, and Decide is told so
// (reboot.Input.Precision is time.Second), so the comparisons it relies on
// survive the round trip. The time is the Reconciler's clock (Now), never
// one taken from the object. A status field that cannot be read (a
// timestamp that is not RFC 3339, a flag that is not a boolean) is an error
// naming the field: the Reconciler does not guess a reboot's state.
//
// # Errors
//
// Every error of the package is an *Error naming the object (namespace and
// name), the operation and, where there is one, the field. Errors never
// hold credentials: API errors are the server's, power errors are the fence
// core's (which never quotes a device's parameters), and the Reconciler
// never includes annotation values or patch bodies in them.
package rebootkube
