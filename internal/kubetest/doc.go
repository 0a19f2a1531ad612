// Package kubetest runs a real Kubernetes API server (kube-apiserver backed by
// its own etcd) on loopback for tests of the Kubernetes adapters, and, for
// end-to-end tests, a whole control plane with simulated nodes
// ([StartControlPlane]).
//
// # Binaries
//
// The harness does not build anything. scripts/kube-binaries.sh builds
// kube-apiserver v1.37.1 and etcd v3.7.3 from the Go module proxy (5 to 8
// minutes and 2.4 GB of memory once; cached afterwards) into
// ${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/v1.37.1, and the harness
// looks there, or in the directory named by $FENCEKIT_KUBE_ASSETS. When the
// binaries are missing, a test that asks for a cluster is skipped with the
// command that builds them; with CI=true it fails instead, so that CI never
// passes by skipping.
//
// The script also builds kubectl of the same release there, for tests that
// compare the adapters with what an operator runs: [Kubectl] finds it (and
// skips or fails the same way), [Cluster.Kubeconfig] writes a kubeconfig
// for the cluster, and [Cluster.KubectlCommand] runs kubectl against it
// with nothing of the user's environment.
//
// # Use
//
// Starting a cluster takes about 3 seconds and 265 MB, so a test binary
// normally shares one:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := kubetest.Shared(t)
//		ns := c.Namespace(t)
//		_, err := c.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
//		...
//	}
//
// Tests that share the cluster isolate themselves by namespace
// ([Cluster.Namespace]) and give cluster-scoped objects (Nodes, CRDs) unique
// names ([UniqueName]). A test that needs a pristine cluster calls [Start],
// which starts a private one and stops it when the test ends.
//
// The client authenticates with a static token as a member of
// system:masters; RBAC is on, so a test can check what a narrower identity may
// do by setting Impersonate on a copy of [Cluster.Config].
//
// # A whole control plane
//
// [StartControlPlane] adds kube-controller-manager (every controller) and
// kube-scheduler of the same release to a private API server, and
// [ControlPlane.AddNodes] adds nodes whose kubelets kwok v0.8.0 plays: it
// makes them Ready, renews their leases and runs the pods bound to them
// (a pod turns Running at once; one being deleted goes away). Each call
// starts one kwok process for a named group of nodes, and
// [ControlPlane.StopNodes] kills it, so that a node, or a rack of them,
// dies as a machine that loses power does: its lease stops, the node
// lifecycle controller marks it Ready=Unknown after the grace period (10 s
// here, 50 s by default in a real cluster), and its pods stay until
// something proves the node is gone. [ControlPlane.StartNodes] brings the
// group back. The binaries come from the same script; a start takes about
// 4 s and 550 MB (measured in TestControlPlaneOutOfServiceChain):
//
//	cp := kubetest.StartControlPlane(t, kubetest.ControlPlaneOptions{})
//	cp.AddNodes(ctx, "rack-1", nil, "node-1", "node-2")
//	...
//	cp.StopNodes("rack-1")
//
// The controller manager's pod garbage collector runs every 20 s (a
// constant, not a flag): after the out-of-service taint of the
// non-graceful node shutdown design, the old pod disappears 0 to 20 s
// later.
//
// # What is not there (the API server alone)
//
// With [Start] and [Shared], only the API server and etcd run: no kube-controller-manager, no scheduler,
// no kubelet. Consequences that tests must allow for:
//
//   - A PodDisruptionBudget's status is never computed. Until the test writes
//     it with UpdateStatus, every eviction under the budget is refused with 429
//     and Retry-After 10, and client-go retries silently for about 100 s.
//   - The TaintNodesByCondition admission plugin adds
//     node.kubernetes.io/not-ready:NoSchedule to every Node on creation, and
//     no node lifecycle controller ever removes it: never assert an exact taint
//     list, look for the taints the code under test set.
//   - Nothing writes Node or Pod status (no kubelet): a test that needs a Ready
//     node or a Running pod writes that status itself.
//   - Deleting a namespace leaves it Terminating with its objects in place
//     (no namespace controller), and nothing garbage-collects owned objects.
//     Namespaces are therefore never deleted by the harness; the whole cluster
//     is thrown away when the test binary ends.
//   - Service accounts get no tokens (the ServiceAccount admission plugin is
//     off and no token controller runs).
//   - The default/kubernetes Service endpoints are not maintained
//     (--endpoint-reconciler-type=none, which loopback requires).
package kubetest
