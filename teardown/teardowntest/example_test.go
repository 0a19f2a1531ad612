package teardowntest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// Drain and remove-from-cluster on the in-memory cluster, one pod blocked
// by its disruption budget at first; a fake clock makes the kubelet's
// minute of silence instant.
func Example() {
	clock := fencetest.NewClock(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	cluster := teardowntest.NewCluster()
	cluster.Now = clock.Now
	cluster.AddNode(teardown.Node{Name: "node-3", Labels: map[string]string{"kubernetes.io/hostname": "node-3"}},
		teardown.Pod{Namespace: "db", Name: "postgres-0"},
		teardown.Pod{Namespace: "kube-system", Name: "proxy-x", DaemonSet: true},
	)
	cluster.Block("db/postgres-0")
	x := &teardown.Executor{Cluster: cluster, Now: clock.Now, Sleep: clock.Sleep}

	plan, err := x.Plan(context.Background(), teardown.Request{Node: "node-3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan = plan.Only(teardown.StepDrain, teardown.StepShutdownKubelet, teardown.StepRemoveFromCluster)
	fmt.Print(x.Run(context.Background(), plan))

	cluster.SetPods("node-3", teardown.Pod{Namespace: "kube-system", Name: "proxy-x", DaemonSet: true}) // the budget allowed it
	fmt.Print(x.Run(context.Background(), plan))
	// Output:
	// drain: failed (DrainNodeError): teardown: node node-3, step drain: drain node node-3: cannot evict pod db/postgres-0: it would violate the pod's disruption budget
	// shutdown-kubelet: not run: step drain stopped the plan
	// remove-from-cluster: not run: step drain stopped the plan
	// drain: skipped: already cordoned and drained
	// shutdown-kubelet: done: labelled promenade-decomission=enabled; the kubelet has not reported for 1m0s
	// remove-from-cluster: done: Node node-3 deleted
}

// Fault injection through a Hook: the etcd cluster cannot be reached.
func ExampleEtcd() {
	e := teardowntest.NewEtcd(teardown.Member{ID: 1, Name: "node-1"}, teardown.Member{ID: 2, Name: "node-2"})
	x := &teardown.Executor{Etcd: map[string]teardown.Etcd{"kubernetes": e}}
	e.SetHealth(2, errors.New("no leader"))
	st := x.EtcdHealth(context.Background())
	fmt.Println(st.Code, st.Details.MessageList[0].Message, "/", st.Details.MessageList[1].Message)

	e.Hook = func(op string, id uint64) error { return errors.New("connection refused") }
	st = x.EtcdHealth(context.Background())
	fmt.Println(st.Code, st.Reason, st.Details.MessageList[0].Message)
	// Output:
	// 200 Healthy / Unhealthy: no leader
	// 500 EtcdNotAccessible Unable to access Etcd: connection refused
}
