package etcdv3_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/etcdv3"
)

// The adapter over a one-member etcd (in-process, on a loopback port): its
// member is healthy, and remove-etcd refuses to remove a cluster's last
// member.
func Example() {
	dir, err := os.MkdirTemp("", "etcdv3-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "node-1", dir
	cfg.TickMs, cfg.ElectionMs, cfg.UnsafeNoFsync = 10, 100, true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	peer, client := loopback(), loopback()
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	<-e.Server.ReadyNotify()

	c, err := etcdv3.New([]string{client.String()}, etcdv3.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	x := &teardown.Executor{Etcd: map[string]teardown.Etcd{"kubernetes": c}}
	for _, m := range x.EtcdHealth(ctx).Details.MessageList {
		fmt.Println(m.Name, m.Message)
	}
	rep := x.Run(ctx, &teardown.Plan{Node: "node-1", Steps: []teardown.Step{{Kind: teardown.StepRemoveEtcd, StopsPlan: true}}})
	fmt.Println(rep.Status().Code, teardown.ReasonOf(rep.Err()))
	// Output:
	// kubernetes/node-1 Healthy
	// 500 RemoveEtcdError
}

// loopback returns an http URL on a free loopback port.
func loopback() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
