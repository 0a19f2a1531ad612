//go:build linux

package cephblock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/cephblock"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/internal/cephtest"
)

// truth reads the blocklist as the cluster's admin does, not through the
// driver.
func truth(c *cephtest.Cluster) func(ctx context.Context, plug string) (fence.State, error) {
	return func(ctx context.Context, plug string) (fence.State, error) {
		out, err := c.TryRun("ceph", "-c", c.Conf, "--connect-timeout", "10", "osd", "blocklist", "ls", "--format", "json")
		if err != nil {
			return fence.StateUnknown, err
		}
		// ceph prints "listed N entries" on standard error, after the lists.
		out = out[:strings.LastIndex(out, "]")+1]
		b, err := cephblock.ParseBlocklist([]byte(out))
		if err != nil {
			return fence.StateUnknown, err
		}
		ps, err := cephblock.Prefixes(plug, 16)
		if err != nil {
			return fence.StateUnknown, err
		}
		if b.Has(ps[0]) {
			return fence.StateOff, nil
		}
		return fence.StateOn, nil
	}
}

// On a real one-host Ceph (Debian's Ceph 16.2, memstore OSDs on loopback):
// the conformance suite over addresses, a range and an IPv6 address; then
// the off of a node at 127.0.0.1, the address of every client here: a
// client there is refused I/O by the OSDs (ESHUTDOWN, as a fenced RBD
// client is), and allowed again after the on; the monitors still take the
// admin's commands meanwhile.
func TestRealCeph(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Ceph cluster")
	}
	c := cephtest.Start(t, "worker-0", "worker-1")
	cli := fencegroup.CLI{Conf: c.Conf, ID: "admin", Keyring: c.Keyring, Timeout: 20 * time.Second}
	open := func(t *testing.T) *cephblock.Device {
		d, err := cephblock.New(cephblock.Options{CLI: cli})
		require.NoError(t, err)
		return d
	}
	t.Run("conformance", func(t *testing.T) {
		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
			return &fencetest.Fixture{
				Device: open(t),
				Plugs:  []string{"10.9.0.1", "10.9.0.4/30", "fd00::5"},
				Truth:  truth(c),
			}
		})
	})

	rados := func(args ...string) (string, error) {
		return c.TryRun("timeout", append([]string{"60", "rados", "-c", c.Conf, "--rados_osd_op_timeout", "10", "-p", "rbd"}, args...)...)
	}
	out, err := rados("put", "before", c.Conf)
	require.NoError(t, err, "%s", out)

	// Through the registry, as a configured method opens it.
	m, err := fence.Open(t.Context(), "", &fence.MethodOptions{Node: "worker-0", Name: "ceph-blocklist", Driver: "cephblock",
		Params: fence.Params{"plug": "127.0.0.1", "allow_loopback": "true", "conf": c.Conf, "id": "admin", "keyring": c.Keyring}})
	require.NoError(t, err)
	defer m.Close()
	res, err := fence.Do(t.Context(), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.OffConfirmed)
	out, err = rados("put", "during", c.Conf)
	require.Error(t, err, "a blocklisted client wrote: %s", out)
	assert.Contains(t, out, "Cannot send after transport endpoint shutdown")
	out, err = rados("get", "before", "/dev/null")
	require.Error(t, err, "a blocklisted client read: %s", out)
	assert.Contains(t, c.Ceph("osd", "blocklist", "ls"), "127.0.0.1:0/0", "the monitors still answer the admin")

	_, err = fence.Do(t.Context(), m, fence.ActionOn)
	require.NoError(t, err)
	out, err = rados("put", "after", c.Conf)
	require.NoError(t, err, "unfenced, the client writes again: %s", out)

	// An entry that lapses sooner than half the method's expiry, however it
	// came there (an administrator's with Ceph's default hour, another
	// tool's short one), is no isolation: the status reads it as none, not
	// off, and the off writes it again with the method's expiry.
	c.Ceph("osd", "blocklist", "add", "10.9.1.1", "3600")
	c.Ceph("osd", "blocklist", "range", "add", "10.9.1.8/30", "60")
	for _, plug := range []string{"10.9.1.1", "10.9.1.8/30", "10.9.1.1,10.9.1.8/30"} {
		d := open(t)
		st, err := d.Status(t.Context(), plug)
		require.NoError(t, err, plug)
		assert.Equal(t, fence.StateOn, st, "%s: a lapsing entry is not an isolation", plug)
	}
	short, err := fence.Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "ceph-blocklist", Driver: "cephblock",
		Params: fence.Params{"plug": "10.9.1.1,10.9.1.8/30", "conf": c.Conf, "id": "admin", "keyring": c.Keyring}})
	require.NoError(t, err)
	defer short.Close()
	res, err = fence.Do(t.Context(), short, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.OffConfirmed)
	assert.False(t, res.Already, "a lapsing entry is written again, not taken as an off already")
	b, err := open(t).List(t.Context())
	require.NoError(t, err)
	for _, plug := range []string{"10.9.1.1", "10.9.1.8/30"} {
		ps, err := cephblock.Prefixes(plug, 16)
		require.NoError(t, err)
		until, ok := b.Until(ps[0])
		require.True(t, ok, plug)
		assert.Greater(t, time.Until(until), 4*365*24*time.Hour, "%s: the entry lasts the method's expiry (five years)", plug)
	}
	_, err = fence.Do(t.Context(), short, fence.ActionOn)
	require.NoError(t, err)

	// A CIDR wider than max_addresses, and a node without addresses:
	// refused, nothing written.
	before := c.Ceph("osd", "blocklist", "ls")
	for _, plug := range []string{"127.0.0.0/8", ""} {
		d := open(t)
		err := d.Set(t.Context(), plug, fence.StateOff)
		require.ErrorIs(t, err, fence.ErrUnknownPlug, plug)
		assert.True(t, fence.IsNotDone(err), plug)
	}
	assert.Equal(t, before, c.Ceph("osd", "blocklist", "ls"), "nothing written")
	// The fence controller's storage isolation of a node whose storage
	// runs on another network (a CSIAddonsNode reports 10.9.2.7 while its
	// InternalIP is 10.9.3.7): the blocklist holds the address the storage
	// sees, not the InternalIP, and the record says which and who said so.
	t.Run("storage addresses", func(t *testing.T) {
		cfg, err := config.Parse([]config.ConfigMap{
			{Name: "fence-method-bl-worker-1", Data: map[string]string{"method.properties": "driver=cephblock\nplug=" + fence.PlugNodeAddresses +
				"\naction=off\nconf=" + c.Conf + "\nid=admin\nkeyring=" + c.Keyring + "\n"}},
			{Name: "fence-config-worker-1", Data: map[string]string{"config.properties": "node_name=worker-1\nisolation=bl\n"}},
		})
		require.NoError(t, err)
		now := time.Now()
		ctl := &controller.Controller{
			Health: staticHealth{{Name: "worker-1", Since: now.Add(-time.Hour), Addresses: []string{"10.9.3.7"}},
				{Name: "worker-0", Ready: true, Since: now.Add(-time.Hour), Addresses: []string{"10.9.3.6"}}},
			Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg}, Pods: noPods{},
			StorageAddresses: reported{"worker-1": {"10.9.2.7"}},
			Options: controller.Options{Identity: "test", UnhealthyAfter: time.Minute,
				Flow: flow.Options{MaxRetries: -1, JobTimeout: time.Minute}},
		}
		require.NoError(t, ctl.Pass(t.Context()))
		ctl.Wait()
		r, err := ctl.Store.Get(t.Context(), "worker-1")
		require.NoError(t, err)
		assert.True(t, r.Isolated, "%s", r.Message)
		assert.Contains(t, r.Message, "cut off: 10.9.2.7 (CSIAddonsNode rook-ceph/csi-worker-1)")
		bl := c.Ceph("osd", "blocklist", "ls")
		assert.Contains(t, bl, "10.9.2.7:0/0", "the address the storage sees")
		assert.NotContains(t, bl, "10.9.3.7", "not the InternalIP")
		c.Ceph("osd", "blocklist", "rm", "10.9.2.7")
	})
}

// staticHealth is a controller.Health with fixed nodes.
type staticHealth []controller.NodeHealth

func (h staticHealth) Nodes() []controller.NodeHealth { return h }

// noPods is a controller.Pods that releases nothing.
type noPods struct{}

func (noPods) Release(context.Context, string, flow.Release) error { return nil }
func (noPods) Restore(context.Context, string) error               { return nil }

// reported is a controller.StorageAddresses with fixed answers, as
// kube/networkfence.Clients gives them from CSIAddonsNodes.
type reported map[string][]string

func (r reported) StorageAddresses(_ context.Context, node string) ([]string, string, error) {
	if a := r[node]; len(a) > 0 {
		return a, "CSIAddonsNode rook-ceph/csi-" + node, nil
	}
	return nil, "", nil
}
