package etcdtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/internal/etcdtest"
)

// A one-member cluster named after its node, outside a test.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := etcdtest.Start(ctx, etcdtest.Options{Names: []string{"node-1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	cli, err := c.NewClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "greeting", "hello"); err != nil {
		fmt.Println(err)
		return
	}
	got, err := cli.Get(ctx, "greeting")
	if err != nil {
		fmt.Println(err)
		return
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(members.Members[0].Name, string(got.Kvs[0].Value))
	// Output:
	// node-1 hello
}
