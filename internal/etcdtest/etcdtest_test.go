package etcdtest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/internal/etcdtest"
)

// client returns a client over the cluster, closed at the end of the test.
func client(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := c.NewClient()
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// memberNames lists the cluster's members as etcd sees them, sorted.
func memberNames(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	resp, err := cli.MemberList(t.Context())
	require.NoError(t, err)
	var out []string
	for _, m := range resp.Members {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

func TestStartCluster(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	require.Len(t, c.Members, 3)
	cli := client(t, c)
	assert.Equal(t, []string{"etcd-1", "etcd-2", "etcd-3"}, memberNames(t, cli))

	resp, err := cli.MemberList(t.Context())
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, m := range resp.Members {
		tm := c.Member(m.Name)
		require.NotNil(t, tm, m.Name)
		assert.Equal(t, []string{tm.PeerURL()}, m.PeerURLs)
		assert.Equal(t, []string{tm.ClientURL()}, m.ClientURLs)
		assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, tm.ClientURL())
		for _, u := range []string{tm.PeerURL(), tm.ClientURL()} {
			assert.False(t, seen[u], "%s used twice", u)
			seen[u] = true
		}
	}
	assert.Equal(t, []string{c.Members[0].ClientURL(), c.Members[1].ClientURL(), c.Members[2].ClientURL()}, c.Endpoints())
	assert.Nil(t, c.Member("etcd-4"))

	_, err = cli.Put(t.Context(), "k", "v")
	require.NoError(t, err)
	got, err := cli.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, "v", string(got.Kvs[0].Value))
}

// A stopped member is down while the others keep the quorum; restarted, it
// comes back with its data.
func TestStopRestart(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartNamed(t, "node-a", "node-b", "node-c")
	cli := client(t, c)
	ctx := t.Context()
	_, err := cli.Put(ctx, "before", "1")
	require.NoError(t, err)

	b := c.Member("node-b")
	b.Stop()
	b.Stop() // stopping again does nothing
	assert.Nil(t, b.Etcd())
	require.NoError(t, b.WaitStopped(ctx))
	assert.ErrorContains(t, b.WaitReady(ctx), "node-b: stopped")
	// Two of three members keep the quorum (after an election, if b led).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Put(pctx, "during", "2")
		assert.NoError(c, err)
	}, 10*time.Second, 50*time.Millisecond)

	require.NoError(t, b.Restart())
	assert.ErrorContains(t, b.Restart(), "node-b: already running")
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, b.WaitReady(rctx))

	one, err := clientv3.New(clientv3.Config{Endpoints: []string{b.ClientURL()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer one.Close()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		gctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		got, err := one.Get(gctx, "during") // linearizable: through the quorum
		if assert.NoError(c, err) && assert.Len(c, got.Kvs, 1) {
			assert.Equal(c, "2", string(got.Kvs[0].Value))
		}
	}, 10*time.Second, 50*time.Millisecond)
}

// A removed member stops its own server.
func TestWaitStoppedAfterRemoval(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartCluster(t, 3)
	ctx := t.Context()
	m := c.Members[2]
	// A client of the two members that stay: the removed one may stop
	// before it answers.
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()[:2], DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	resp, err := cli.MemberList(ctx)
	require.NoError(t, err)
	var id uint64
	for _, x := range resp.Members {
		if x.Name == m.Name() {
			id = x.ID
		}
	}
	require.NotZero(t, id)
	// etcd refuses a removal until the member handling it has been
	// connected to a quorum for 5 s (its strict reconfiguration check).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := cli.MemberRemove(rctx, id)
		if !errors.Is(err, rpctypes.ErrMemberNotFound) { // removed by an attempt that timed out
			assert.NoError(c, err)
		}
	}, 20*time.Second, 100*time.Millisecond)

	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, m.WaitStopped(wctx))
	assert.Equal(t, []string{"etcd-1", "etcd-2"}, memberNames(t, cli))

	short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	assert.ErrorContains(t, c.Members[0].WaitStopped(short), "etcd-1: still running")
}

func TestStartRefusesBadNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts etcdtest.Options
		want string
	}{
		{"empty list", etcdtest.Options{Names: []string{}}, "Options.Names is empty"},
		{"empty name", etcdtest.Options{Names: []string{"a", ""}}, `Options.Names[1]: "" is not a member name`},
		{"comma", etcdtest.Options{Names: []string{"a,b"}}, `Options.Names[0]: "a,b" is not a member name`},
		{"twice", etcdtest.Options{Names: []string{"a", "b", "a"}}, `Options.Names[2]: "a" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := etcdtest.Start(t.Context(), tc.opts)
			assert.Nil(t, c)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// Start outside a test, in a directory of the caller's, and Close twice.
func TestStartAndClose(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := etcdtest.Start(ctx, etcdtest.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, c.Members, 1)
	assert.Equal(t, "etcd-1", c.Members[0].Name())
	c.Close()
	c.Close()
	assert.Nil(t, c.Members[0].Etcd())
}

// A member Cut from the others still answers its clients but commits
// nothing, while the two others commit; joined again, it commits and has
// what they wrote meanwhile.
func TestCut(t *testing.T) {
	c := etcdtest.StartWith(t, etcdtest.Options{Size: 3, Cuttable: true})
	one := func(m *etcdtest.Member) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	cut, rest := one(c.Members[0]), one(c.Members[1])
	_, err := cut.Put(t.Context(), "before", "1")
	require.NoError(t, err)

	require.NoError(t, c.Members[0].Cut())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = cut.Put(ctx, "during", "cut")
	cancel()
	require.Error(t, err, "the cut member commits nothing")
	_, err = rest.Put(t.Context(), "during", "rest")
	require.NoError(t, err, "the two others are a quorum")
	_, err = cut.Status(t.Context(), c.Members[0].ClientURL())
	require.NoError(t, err, "the cut member answers its clients")

	require.NoError(t, c.Members[0].Join())
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := cut.Put(ctx, "after", "1")
		return err == nil
	}, 20*time.Second, 100*time.Millisecond, "joined again, it commits")
	resp, err := cut.Get(t.Context(), "during")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "rest", string(resp.Kvs[0].Value))
	assert.Error(t, etcdtest.StartCluster(t, 1).Members[0].Cut(), "a cluster not Cuttable")
}
