package etcdv3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ansel1/zap2slog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/teardown"
)

// DefaultDialTimeout bounds the connection to a member.
const DefaultDialTimeout = 5 * time.Second

// Options configure a Cluster. The zero value works for a cluster without
// TLS or authentication.
type Options struct {
	// DialTimeout bounds the connection of each client (and its
	// authentication). Default DefaultDialTimeout.
	DialTimeout time.Duration
	// TLS, when set, is used for every connection (the client URLs must
	// then be https).
	TLS *tls.Config
	// Username and Password authenticate against etcd's own auth, when it
	// is enabled.
	Username, Password string
	// Logger receives the etcd client's own logs (the client logs through
	// zap; a zapcore.Core over Logger's handler, github.com/ansel1/zap2slog,
	// carries them over); nil discards them.
	Logger *slog.Logger
}

// Cluster is one etcd cluster, a teardown.Etcd. It is safe for concurrent
// use.
type Cluster struct {
	cli  *clientv3.Client
	own  bool
	opts Options
}

var _ teardown.Etcd = (*Cluster)(nil)

// New connects to the cluster through endpoints (client URLs such as
// https://10.0.0.1:2379). Close it when done.
func New(endpoints []string, opts Options) (*Cluster, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcdv3: no endpoints")
	}
	cli, err := clientv3.New(opts.config(endpoints))
	if err != nil {
		return nil, fmt.Errorf("etcdv3: connect to %v: %w", endpoints, err)
	}
	return &Cluster{cli: cli, own: true, opts: opts}, nil
}

// FromClient wraps a client the caller owns (and closes); opts are used to
// dial members for MemberHealth, and should match the client's settings.
func FromClient(cli *clientv3.Client, opts Options) *Cluster {
	return &Cluster{cli: cli, opts: opts}
}

// Close closes the client if New opened it.
func (c *Cluster) Close() error {
	if c.own {
		return c.cli.Close()
	}
	return nil
}

// config returns a client configuration for endpoints.
func (o Options) config(endpoints []string) clientv3.Config {
	lg := zap.NewNop()
	if o.Logger != nil {
		lg = zap.New(zap2slog.NewSlogCore(o.Logger.Handler(), nil))
	}
	d := o.DialTimeout
	if d <= 0 {
		d = DefaultDialTimeout
	}
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: d,
		TLS:         o.TLS,
		Username:    o.Username,
		Password:    o.Password,
		Logger:      lg,
	}
}

// Members lists the cluster's members with a linearizable read, so that a
// cluster without a quorum answers with an error rather than a stale list.
func (c *Cluster) Members(ctx context.Context) ([]teardown.Member, error) {
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcdv3: list members: %w", err)
	}
	out := make([]teardown.Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, teardown.Member{
			ID: m.ID, Name: m.Name, IsLearner: m.IsLearner,
			PeerURLs: append([]string(nil), m.PeerURLs...), ClientURLs: append([]string(nil), m.ClientURLs...),
		})
	}
	return out, nil
}

// RemoveMember removes the member with the given ID. A member the cluster
// does not know is an error wrapping teardown.ErrMemberNotFound. The
// server's own refusal (etcd's strict reconfiguration check: "unhealthy
// cluster") comes back as is.
func (c *Cluster) RemoveMember(ctx context.Context, id uint64) error {
	_, err := c.cli.MemberRemove(ctx, id)
	if errors.Is(err, rpctypes.ErrMemberNotFound) {
		return fmt.Errorf("etcdv3: remove member %x: %w: %w", id, teardown.ErrMemberNotFound, err)
	}
	if err != nil {
		return fmt.Errorf("etcdv3: remove member %x: %w", id, err)
	}
	return nil
}

// MemberHealth dials the member at its client URLs and checks it as
// etcdctl endpoint health does: a linearizable read of the key "health"
// must succeed (a permission denied counts as success: the member answered
// through the quorum), and no alarm may be raised. A member with no client
// URL has not started: unhealthy.
func (c *Cluster) MemberHealth(ctx context.Context, m teardown.Member) error {
	if len(m.ClientURLs) == 0 {
		return fmt.Errorf("etcdv3: member %s: not started (no client URL)", name(m))
	}
	cli, err := clientv3.New(c.opts.config(m.ClientURLs))
	if err != nil {
		return fmt.Errorf("etcdv3: member %s: connect: %w", name(m), err)
	}
	defer cli.Close()
	if _, err := cli.Get(ctx, "health"); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		return fmt.Errorf("etcdv3: member %s: linearizable read: %w", name(m), err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("etcdv3: member %s: list alarms: %w", name(m), err)
	}
	if len(alarms.Alarms) > 0 {
		a := alarms.Alarms[0]
		return fmt.Errorf("etcdv3: member %s: alarm %v raised on member %x (%d alarms)", name(m), a.Alarm, a.MemberID, len(alarms.Alarms))
	}
	return nil
}

// name names a member in errors.
func name(m teardown.Member) string {
	if m.Name != "" {
		return fmt.Sprintf("%s (id %x)", m.Name, m.ID)
	}
	return fmt.Sprintf("%x", m.ID)
}
