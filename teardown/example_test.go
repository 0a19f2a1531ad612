package teardown_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// exampleSite is a small site: node-3 runs a web pod, a DaemonSet pod and
// a member of the "kubernetes" etcd cluster, and is powered through a BMC.
func exampleSite() (*teardown.Executor, *teardowntest.Cluster, *fake.Device) {
	clock := fencetest.NewClock(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	cluster := teardowntest.NewCluster()
	cluster.Now = clock.Now // kubelets report until labelled promenade-decomission=enabled
	cluster.AddNode(teardown.Node{
		Name:      "node-3",
		Addresses: []string{"10.0.0.3"},
		Labels: map[string]string{
			"kubernetes.io/hostname":      "node-3",
			"kubernetes.io/os":            "linux",
			"kubernetes-apiserver":        "enabled",
			"openstack-control-plane":     "enabled",
			"topology.kubernetes.io/zone": "rack-1",
		},
	},
		teardown.Pod{Namespace: "shop", Name: "web-7d9f"},
		teardown.Pod{Namespace: "kube-system", Name: "calico-node-x2", DaemonSet: true},
	)
	etcd := teardowntest.NewEtcd(
		teardown.Member{ID: 0x1, Name: "node-1", PeerURLs: []string{"https://10.0.0.1:2380"}},
		teardown.Member{ID: 0x2, Name: "node-2", PeerURLs: []string{"https://10.0.0.2:2380"}},
		teardown.Member{ID: 0x3, Name: "etcd-c", PeerURLs: []string{"https://10.0.0.3:2380"}},
	)
	bmc := fake.New(fake.Options{Plugs: []string{""}})
	x := &teardown.Executor{
		Cluster:     cluster,
		Etcd:        map[string]teardown.Etcd{"kubernetes": etcd},
		Provisioner: &teardowntest.Provisioner{},
		Power: func(ctx context.Context, node string) ([]fence.Level, error) {
			return []fence.Level{{Methods: []*fence.Method{{Name: "ipmi", Node: node, Driver: "fake", Device: bmc,
				Options: fence.Options{PollInterval: time.Millisecond}}}}}, nil
		},
		Revisions: teardown.NewMemoryRevisions(
			teardown.Revision{ID: 1, Committed: true, Tags: []teardown.Tag{teardown.SiteActionTag(true, "deploy_site-1")}},
			teardown.Revision{ID: 2, Committed: true},
		),
		Now:   clock.Now,
		Sleep: clock.Sleep,
	}
	return x, cluster, bmc
}

// A whole teardown over in-memory ports: the plan runs every step, and the
// status is the teardown design's Airship status response.
func Example() {
	x, cluster, bmc := exampleSite()
	ctx := context.Background()

	plan, err := x.Plan(ctx, teardown.Request{Node: "node-3"})
	if err != nil {
		fmt.Println(teardown.StatusOf(err).Message)
		return
	}
	report := x.Run(ctx, plan)
	fmt.Print(report)

	st := report.Status()
	fmt.Println(st.Code, st.Reason, "errors:", st.Details.ErrorCount)
	_, exists := cluster.Get("node-3")
	fmt.Println("node in cluster:", exists, "power:", bmc.Truth(""))
	// Output:
	// drain: done: cordoned; 1 pod evicted or deleted
	// clear-labels: done: removed the labels kubernetes-apiserver, openstack-control-plane; no pod terminating
	// remove-etcd: done: removed kubernetes/etcd-c (id 3)
	// etcd-ready: done: healthy members, not counting node node-3: kubernetes 2/2
	// shutdown-kubelet: done: labelled promenade-decomission=enabled; the kubelet has not reported for 1m0s
	// destroy-node: done: wiped every local disk for design revision 1
	// power-off: done: powered off, confirmed by ipmi (level 1)
	// release-node: done: released from the provisioner
	// remove-from-cluster: done: Node node-3 deleted
	// 200 Success errors: 0
	// node in cluster: false power: off
}

// A dry run says what each step will do and changes nothing.
func ExamplePlan_DryRun() {
	x, _, _ := exampleSite()
	plan, err := x.Plan(context.Background(), teardown.Request{
		Node:                 "node-3",
		PreserveLocalStorage: true,
		Timeouts:             teardown.Timeouts{Drain: 600 * time.Second},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := plan.DryRun(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// teardown of node node-3, design revision 1 (successful-site-action)
	//   1. drain [timeout 10m0s, stops the plan on failure]: cordon node-3 and evict its pods (PodDisruptionBudgets respected, DaemonSet pods ignored, emptyDir data deleted, unmanaged pods deleted) with a grace period of 5m0s
	//   2. clear-labels [timeout 30m0s, stops the plan on failure]: remove every label but the kubelet's own from node-3 (now kubernetes-apiserver, openstack-control-plane), then wait until no pod on it is terminating
	//   3. remove-etcd [timeout 30m0s, stops the plan on failure]: in etcd clusters kubernetes: find the members on node-3 (by name or a URL host among node-3, 10.0.0.3), refuse when removing one would leave no healthy majority, remove them
	//   4. etcd-ready [timeout 10m0s, stops the plan on failure]: in etcd clusters kubernetes: poll every 30s until the members not on node-3 are healthy
	//   5. shutdown-kubelet [timeout 10m0s, best effort]: label node-3 promenade-decomission=enabled and wait until its kubelet stops renewing its lease and heartbeat
	//   6. destroy-node [timeout 1h0m0s, stops the plan on failure]: wipe only the OS disk of node-3 (preserve-local-storage) for design revision 1 through the provisioner
	//   7. power-off [timeout 5m0s, stops the plan on failure]: power node-3 off through its fence levels; only an off the device confirms counts
	//   8. release-node [timeout 10m0s, stops the plan on failure]: release node-3, confirmed off, from the provisioner
	//   9. remove-from-cluster [timeout 2m0s, stops the plan on failure]: delete Node node-3 if it is cordoned, drained and has no label but the kubelet's own and promenade-decomission=enabled (else 409 Conflict)
}

// Query parameters with the teardown design's names; a bad one is a 400
// naming it.
func ExampleParseRequest() {
	q, _ := url.ParseQuery("drain-node-timeout=600&drain-node-grace-period=900&preserve-local-storage=true")
	_, err := teardown.ParseRequest("node-3", q)
	st := teardown.StatusOf(err)
	fmt.Println(st.Code, st.Reason)
	fmt.Println(st.Details.MessageList[0].Name+":", st.Details.MessageList[0].Message)
	// Output:
	// 400 BadRequest
	// drain-node-grace-period: teardown: node node-3, field drain-node-grace-period: grace period 15m0s must be less than the drain timeout 10m0s
}

// A status response as JSON: remove-from-cluster refuses a node that still
// runs pods.
func ExampleStepResult_Status() {
	x, _, _ := exampleSite()
	ctx := context.Background()
	plan, err := x.Plan(ctx, teardown.Request{Node: "node-3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan = plan.Only(teardown.StepRemoveFromCluster) // as its own API
	report := x.Run(ctx, plan)
	out, _ := json.MarshalIndent(report.Steps[0].Status(), "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "kind": "Status",
	//   "apiVersion": "v1.0",
	//   "metadata": {},
	//   "status": "Failure",
	//   "message": "teardown: node node-3, step remove-from-cluster: node not ready for removal: not cordoned; not drained: 1 pod on it: shop/web-7d9f; labels left: kubernetes-apiserver, openstack-control-plane",
	//   "reason": "Conflict",
	//   "details": {
	//     "errorCount": 1,
	//     "messageList": [
	//       {
	//         "message": "failed (Conflict): teardown: node node-3, step remove-from-cluster: node not ready for removal: not cordoned; not drained: 1 pod on it: shop/web-7d9f; labels left: kubernetes-apiserver, openstack-control-plane",
	//         "error": true,
	//         "kind": "StepResult",
	//         "name": "remove-from-cluster"
	//       }
	//     ]
	//   },
	//   "code": 409
	// }
}
