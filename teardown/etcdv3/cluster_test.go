package etcdv3_test

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/teardown/etcdv3"
)

// member is one in-process etcd server of a test cluster.
type member struct {
	name    string
	dir     string
	peer    url.URL
	client  url.URL
	mu      sync.Mutex
	e       *embed.Etcd
	initial string
	token   string
}

// testCluster is a real etcd cluster of in-process members on loopback
// ports, each with its own temporary directory, closed at the end of the
// test.
type testCluster struct {
	t       *testing.T
	members []*member
}

// startCluster starts n members and waits until they serve.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	c := &testCluster{t: t}
	token := fmt.Sprintf("fencekit-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	var initial []string
	for i := range n {
		m := &member{
			name:   fmt.Sprintf("etcd-%d", i+1),
			peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
			client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
			token:  token,
		}
		m.dir = filepath.Join(t.TempDir(), m.name)
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peer.String())
	}
	for _, m := range c.members {
		m.initial = strings.Join(initial, ",")
		m.start(t)
	}
	t.Cleanup(c.close)
	for _, m := range c.members {
		m.ready(t)
	}
	return c
}

// config is a member's embed configuration: fast elections, no fsync, no
// logs.
func (m *member) config() *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.InitialCluster = m.initial
	cfg.InitialClusterToken = m.token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.UnsafeNoFsync = true
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// start starts (or restarts, from its directory) the member.
func (m *member) start(t *testing.T) {
	t.Helper()
	e, err := embed.StartEtcd(m.config())
	require.NoError(t, err, "start %s", m.name)
	m.mu.Lock()
	m.e = e
	m.mu.Unlock()
}

// ready waits until the member serves.
func (m *member) ready(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	e := m.e
	m.mu.Unlock()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("%s: %v", m.name, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s not ready after 20 s", m.name)
	}
}

// stop stops the member's server at once, as a crash would (a graceful
// stop transfers the leadership first, and waits seconds for peers that are
// stopping too), then releases its ports and files.
func (m *member) stop() {
	m.mu.Lock()
	e := m.e
	m.e = nil
	m.mu.Unlock()
	if e != nil {
		e.Server.HardStop()
		e.Close()
	}
}

// removed waits until the member's server has stopped itself, as a member
// does once it learns it was removed.
func (m *member) removed(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	e := m.e
	m.mu.Unlock()
	select {
	case <-e.Server.StopNotify():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running 10 s after its removal", m.name)
	}
}

func (c *testCluster) close() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(m.stop)
	}
	wg.Wait()
}

// endpoints returns every member's client URL.
func (c *testCluster) endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.client.String())
	}
	return out
}

// open returns an adapter over every member, closed at the end of the test.
func (c *testCluster) open(t *testing.T) *etcdv3.Cluster {
	t.Helper()
	cl, err := etcdv3.New(c.endpoints(), etcdv3.Options{DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
