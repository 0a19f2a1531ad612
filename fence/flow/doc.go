// Package flow is the NodeFence flow of the Kubernetes node-fencing design:
// the record of one node's fencing (NodeFence), and Advance, the pure
// function that moves it on.
//
// A fencing goes through the design's steps in order: isolation (cut the
// node from its storage), power management (switch it off, or reboot it),
// then, once the node is ready again, recovery (undo the isolation, switch
// it on). Each step has the design's statuses (New, Running, Done, Error)
// and Failed once its retries are spent. Between a verified off and the
// level's ons the node's pods are released (Release: Storage after an
// isolation, Power after an off, Dump while the node dumps its kernel);
// they are restored once the fencing is over.
//
// A host drives it as a loop (fence/controller does, and so does any other
// controller that embeds the flow):
//
//	rec, cmds := flow.Advance(rec, node, obs, opts) // pure: rec is not changed
//	// persist rec first (a crash replays from it), then carry out cmds in order
//
// The Observation is what the host saw: the time, whether the node is ready
// and since when, its configuration, the policy gate's answer, and the
// answers to the checks Advance asked for (are the released pods gone, do
// the devices still read the node off). The Commands are what the host
// must do next, in order: run a job (one method's switch), ask the gate,
// release or restore the pods, hold or unhold the node, check the pods,
// read the devices again, record an event, forget the record; each result
// goes back into the record (NodeFence.FinishJob, ReleasedPods, HeldNode,
// RestoredPods) or the next Observation. A person's confirmation arrives in
// the record (NodeFence.Confirmation); the host proves who made it
// (fence/controller's ConfirmCheck) before Advance may count it. Advance
// does no I/O and keeps no state of its own: the same inputs give the same
// outputs, which the golden transcripts under testdata record.
//
// What always holds:
//
//   - NodeFence.Fenced is true only when a device confirmed the node off or
//     isolated (every required device of the level, all off at once), or a
//     person with the right to do so confirmed it (ConfirmedOff, with the
//     confirmation's record); the record says which.
//   - An unknown outcome is a failure: a job whose outcome is not known
//     never counts as done, and a step is retried only after its back-off.
//   - Pods are released only while the node is proven fenced, and restored
//     (the out-of-service taint removed) only once the node is ready again
//     or the fencing is abandoned; recovery never runs while the node is
//     unsafe.
//   - Everything needed to resume after a crash is in the record: a host
//     that restarts reads it back and goes on.
package flow
