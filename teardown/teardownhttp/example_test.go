package teardownhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardownhttp"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// A deployment tool decommissions a node through the API, authenticated by
// a bearer token over TLS. The executor's ports are in-memory here; in a
// cluster they are kube/teardownkube and teardown/etcdv3.
func Example() {
	cluster := teardowntest.NewCluster()
	cluster.AddNode(teardown.Node{Name: "node-3", Labels: map[string]string{"ceph-osd": "enabled"}},
		teardown.Pod{Namespace: "shop", Name: "web-1"})
	clock := fencetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	x := &teardown.Executor{Cluster: cluster, Now: clock.Now, Sleep: clock.Sleep}

	auth, err := apiauth.NewTokens("a-long-random-token")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewTLSServer(teardownhttp.NewHandler(x, teardownhttp.HandlerOptions{Auth: auth}))
	defer srv.Close()

	hc := *srv.Client()
	hc.Transport = &apiauth.Transport{Signer: apiauth.Bearer("a-long-random-token"), Base: hc.Transport}
	client := &teardownhttp.Client{BaseURL: srv.URL, HTTPClient: &hc}
	ref := teardownhttp.NewDesignRef("deckhand+https://deckhand.example/api/v1.0", 7)

	st, err := client.Decommission(context.Background(), "node-3", ref, teardown.Timeouts{Drain: 600 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Code, st.Reason, st.Message)
	for _, m := range st.Details.MessageList {
		fmt.Printf("  %s: %s\n", m.Name, m.Message)
	}

	// Anonymous: refused, nothing done.
	resp, err := srv.Client().Post(srv.URL+"/nodes/node-3/remove-from-cluster", "", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, http.StatusText(resp.StatusCode))
	// Output:
	// 200 Success decommission of node node-3: 3 done, 2 skipped
	//   drain: done: cordoned; 1 pod evicted or deleted
	//   clear-labels: done: removed the labels ceph-osd; no pod terminating
	//   remove-etcd: skipped: no etcd cluster configured
	//   etcd-ready: skipped: no etcd cluster configured
	//   shutdown-kubelet: done: labelled promenade-decomission=enabled; the kubelet has not reported for 6m0s
	// 401 Unauthorized
}
