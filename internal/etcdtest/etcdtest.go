package etcdtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testtool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// DefaultReadyTimeout bounds the wait of StartCluster and StartNamed for
// every member to serve.
const DefaultReadyTimeout = 20 * time.Second

// maxAttempts bounds the starts of a cluster whose ports were taken.
const maxAttempts = 3

// Options configure Start.
type Options struct {
	// Names are the members' names, in order; they must be distinct and
	// not empty. When nil, the members are etcd-1 to etcd-Size.
	Names []string
	// Size is the number of members when Names is nil; default 1.
	Size int
	// Dir holds the members' data directories (one per member, under its
	// name). Empty: a new temporary directory, removed by Close.
	Dir string
	// Cuttable puts a relay (testtool.Relay) in front of each member's
	// peer port, the address the other members reach it at, so that
	// Member.Cut can part it from them.
	Cuttable bool
	// ElectionMs is the members' election timeout, their heartbeat a
	// tenth of it: default 100 ms, fast elections on an idle machine; a
	// test whose members must keep a leader on a loaded one gives more.
	ElectionMs int
}

// names returns the members' names.
func (o Options) names() ([]string, error) {
	if o.Names == nil {
		n := max(o.Size, 1)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("etcd-%d", i+1)
		}
		return names, nil
	}
	if len(o.Names) == 0 {
		return nil, errors.New("etcdtest: Options.Names is empty")
	}
	seen := map[string]bool{}
	for i, n := range o.Names {
		if n == "" || strings.ContainsAny(n, "=,/ ") {
			return nil, fmt.Errorf("etcdtest: Options.Names[%d]: %q is not a member name", i, n)
		}
		if seen[n] {
			return nil, fmt.Errorf("etcdtest: Options.Names[%d]: %q given twice", i, n)
		}
		seen[n] = true
	}
	return o.Names, nil
}

// Cluster is a running etcd cluster of in-process members.
type Cluster struct {
	// Members are the members, in the order of their names.
	Members []*Member

	ownDir    string // removed by Close when not empty
	closeOnce sync.Once
}

// Member is one in-process etcd server of a Cluster. Its methods are safe
// for concurrent use.
type Member struct {
	name    string
	dir     string
	peer    url.URL // where the others reach it: relay's address when cuttable
	listen  url.URL // where it listens for them
	relay   *testtool.Relay
	client  url.URL
	initial string // the initial cluster, name=peer,...
	token   string
	electMs int

	mu sync.Mutex
	e  *embed.Etcd // nil when stopped
}

// StartCluster starts a cluster of n members named etcd-1 to etcd-n, waits
// until every member serves, and closes it when t ends. It fails t when
// the cluster does not start.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: StartCluster: %d members (want at least 1)", n)
	}
	return start(t, Options{Size: n})
}

// StartNamed starts a cluster of members with the given names (node names,
// for example), waits until every member serves, and closes it when t
// ends. It fails t when the cluster does not start.
func StartNamed(t testing.TB, names ...string) *Cluster {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("etcdtest: StartNamed: no member name")
	}
	return start(t, Options{Names: names})
}

// StartWith starts a cluster with opts (Dir is set to a directory of
// t's), waits until every member serves, and closes it when t ends.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	return start(t, opts)
}

func start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	opts.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultReadyTimeout)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Start starts a cluster and waits until every member serves or ctx ends.
// Close it when done.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	names, err := opts.names()
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "etcdtest-"); err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		c.ownDir = dir
	}
	for attempt := 1; ; attempt++ {
		err = c.startMembers(filepath.Join(dir, fmt.Sprintf("run-%d", attempt)), names, opts)
		if err == nil {
			break
		}
		c.stopMembers()
		if !portTaken(err) || attempt == maxAttempts {
			c.removeDir()
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := m.WaitReady(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// startMembers makes and starts the members on fresh ports, their data
// under dir.
func (c *Cluster) startMembers(dir string, names []string, opts Options) error {
	ports, err := freePorts(2 * len(names))
	if err != nil {
		return err
	}
	token := "etcdtest-" + randomHex(8)
	c.Members = c.Members[:0]
	initial := make([]string, 0, len(names))
	for i, name := range names {
		m := &Member{
			name:   name,
			dir:    filepath.Join(dir, name),
			peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
			client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
			token:  token,
		}
		m.electMs = cmp.Or(opts.ElectionMs, 100)
		m.listen = m.peer
		if opts.Cuttable {
			r, err := testtool.NewRelay(m.listen.Host)
			if err != nil {
				return fmt.Errorf("etcdtest: member %s: relay: %w", name, err)
			}
			m.relay = r
			m.peer.Host = r.Addr()
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.name+"="+m.peer.String())
	}
	for _, m := range c.Members {
		m.initial = strings.Join(initial, ",")
		if err := m.Restart(); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every member at once and removes the data directory that
// Start made. It may be called more than once.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		c.stopMembers()
		c.removeDir()
	})
}

func (c *Cluster) stopMembers() {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Go(m.Stop)
	}
	wg.Wait()
	for _, m := range c.Members {
		if m.relay != nil {
			m.relay.Close()
		}
	}
}

func (c *Cluster) removeDir() {
	if c.ownDir != "" {
		os.RemoveAll(c.ownDir)
	}
}

// Endpoints returns every member's client URL, in the members' order.
func (c *Cluster) Endpoints() []string {
	out := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.ClientURL())
	}
	return out
}

// Member returns the member of that name, or nil.
func (c *Cluster) Member(name string) *Member {
	for _, m := range c.Members {
		if m.name == name {
			return m
		}
	}
	return nil
}

// NewClient returns an etcd v3 client over every member's client URL, with
// its logs discarded. Close it when done.
func (c *Cluster) NewClient() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client: %w", err)
	}
	return cli, nil
}

// Name returns the member's name.
func (m *Member) Name() string { return m.name }

// ClientURL returns the URL clients reach the member at
// (http://127.0.0.1:PORT).
func (m *Member) ClientURL() string { return m.client.String() }

// PeerURL returns the URL the other members reach it at.
func (m *Member) PeerURL() string { return m.peer.String() }

// Etcd returns the member's embedded server, for calls a client cannot
// make (raising an alarm, say); nil when the member is stopped.
func (m *Member) Etcd() *embed.Etcd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.e
}

// config is the member's embed configuration: fast elections, no fsync, no
// logs.
func (m *Member) config() *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.listen}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.InitialCluster = m.initial
	cfg.InitialClusterToken = m.token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = uint(max(m.electMs/10, 1))
	cfg.ElectionMs = uint(m.electMs)
	cfg.UnsafeNoFsync = true
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// Cut parts the member from the others, as a network partition would:
// nothing of theirs reaches it (its relay cut) and nothing of its reaches
// them (etcd's PauseSending, as etcd's own tests pause a member). Its
// clients still reach it; it commits nothing. The cluster must be
// Cuttable.
func (m *Member) Cut() error {
	e := m.Etcd()
	if m.relay == nil || e == nil {
		return fmt.Errorf("etcdtest: member %s: not running in a Cuttable cluster", m.name)
	}
	m.relay.Cut()
	e.Server.PauseSending()
	return nil
}

// Join ends a Cut.
func (m *Member) Join() error {
	e := m.Etcd()
	if m.relay == nil || e == nil {
		return fmt.Errorf("etcdtest: member %s: not running in a Cuttable cluster", m.name)
	}
	e.Server.ResumeSending()
	m.relay.Join()
	return nil
}

// Restart starts the member again from its data directory, with the same
// name and URLs, and returns without waiting for it to serve (see
// WaitReady). The member must be stopped (by Stop, or by itself after its
// removal); a member that runs is an error.
func (m *Member) Restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e != nil {
		select {
		case <-m.e.Server.StopNotify():
			m.e.Close()
			m.e = nil
		default:
			return fmt.Errorf("etcdtest: member %s: already running", m.name)
		}
	}
	e, err := embed.StartEtcd(m.config())
	if err != nil {
		return fmt.Errorf("etcdtest: member %s: start: %w", m.name, err)
	}
	m.e = e
	return nil
}

// WaitReady waits until the member serves (it joined its cluster and
// published its name), fails, stops, or ctx ends.
func (m *Member) WaitReady(ctx context.Context) error {
	e := m.Etcd()
	if e == nil {
		return fmt.Errorf("etcdtest: member %s: stopped", m.name)
	}
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err, ok := <-e.Err():
		if !ok {
			return fmt.Errorf("etcdtest: member %s: closed before it served", m.name)
		}
		return fmt.Errorf("etcdtest: member %s: %w", m.name, err)
	case <-e.Server.StopNotify():
		return fmt.Errorf("etcdtest: member %s: stopped before it served", m.name)
	case <-ctx.Done():
		return fmt.Errorf("etcdtest: member %s: not ready: %w", m.name, ctx.Err())
	}
}

// WaitStopped waits until the member's server has stopped, as a member
// does by itself once it learns it was removed, or ctx ends. A member
// stopped with Stop has stopped.
func (m *Member) WaitStopped(ctx context.Context) error {
	e := m.Etcd()
	if e == nil {
		return nil
	}
	select {
	case <-e.Server.StopNotify():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("etcdtest: member %s: still running: %w", m.name, ctx.Err())
	}
}

// Stop stops the member's server at once, as a crash would, then releases
// its ports and files. Stopping a stopped member does nothing.
func (m *Member) Stop() {
	m.mu.Lock()
	e := m.e
	m.e = nil
	m.mu.Unlock()
	if e != nil {
		e.Server.HardStop()
		e.Close()
	}
}

// portTaken reports whether err says a port was taken meanwhile.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
