package teardowntest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

func TestClusterDrainRules(t *testing.T) {
	pods := []teardown.Pod{
		{Namespace: "a", Name: "web"},
		{Namespace: "a", Name: "bare"},
		{Namespace: "k", Name: "ds", DaemonSet: true},
		{Namespace: "k", Name: "static", Mirror: true},
	}
	tests := []struct {
		name    string
		opts    teardown.DrainOptions
		wantErr string
		left    []string
	}{
		{"kubectl drain --force --ignore-daemonsets", teardown.DrainOptions{Force: true, IgnoreDaemonSets: true}, "", []string{"ds", "static"}},
		{"without force", teardown.DrainOptions{IgnoreDaemonSets: true}, "a/bare: not managed by a controller", []string{"bare", "ds", "static"}},
		{"without ignore-daemonsets", teardown.DrainOptions{Force: true}, "DaemonSet-managed pod k/ds", []string{"ds", "static"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := teardowntest.NewCluster()
			c.AddNode(teardown.Node{Name: "n"}, pods...)
			c.Unmanaged("a/bare")
			var progress []teardown.DrainProgress
			err := c.Drain(t.Context(), "n", tt.opts, func(p teardown.DrainProgress) { progress = append(progress, p) })
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
			var left []string
			for _, p := range c.PodsOf("n") {
				left = append(left, p.Name)
			}
			assert.ElementsMatch(t, tt.left, left)
			n, _ := c.Get("n")
			assert.True(t, n.Unschedulable, "cordoned in every case")
			require.Len(t, progress, 1)
			assert.Contains(t, progress[0].Done, "a/web")
		})
	}
}

func TestClusterNotFoundAndHook(t *testing.T) {
	ctx := t.Context()
	c := teardowntest.NewCluster()
	_, err := c.Node(ctx, "x")
	assert.ErrorIs(t, err, teardown.ErrNodeNotFound)
	assert.ErrorIs(t, c.DeleteNode(ctx, "x"), teardown.ErrNodeNotFound)
	assert.ErrorIs(t, c.SetLabels(ctx, "x", nil), teardown.ErrNodeNotFound)
	_, err = c.Pods(ctx, "x")
	assert.ErrorIs(t, err, teardown.ErrNodeNotFound)

	boom := errors.New("boom")
	c.Hook = func(op, node string) error {
		if op == teardowntest.OpSetLabels {
			return boom
		}
		return nil
	}
	c.AddNode(teardown.Node{Name: "n"})
	assert.ErrorIs(t, c.SetLabels(ctx, "n", nil), boom)
	assert.Equal(t, []string{"node x", "delete-node x", "set-labels x", "pods x", "set-labels n"}, c.Calls())
}

func TestClusterKubelet(t *testing.T) {
	ctx := t.Context()
	clock := fencetest.NewClock(time.Unix(1000, 0))
	c := teardowntest.NewCluster()
	c.Now = clock.Now
	c.AddNode(teardown.Node{Name: "n"})
	n, err := c.Node(ctx, "n")
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1000, 0), n.LeaseRenewed)

	v := teardown.DecommissionValue
	require.NoError(t, c.SetLabels(ctx, "n", map[string]*string{teardown.DecommissionLabel: &v}))
	require.NoError(t, clock.Sleep(ctx, time.Minute))
	n, _ = c.Node(ctx, "n")
	assert.Equal(t, time.Unix(1000, 0), n.LeaseRenewed, "stopped by the label")

	c.KeepKubelet("n", true)
	n, _ = c.Node(ctx, "n")
	assert.Equal(t, time.Unix(1060, 0), n.LeaseRenewed)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, clock.Sleep(cancelled, time.Hour), context.Canceled)
	assert.Equal(t, time.Unix(1060, 0), clock.Now())
}

func TestProvisionerAndEtcd(t *testing.T) {
	ctx := t.Context()
	p := &teardowntest.Provisioner{}
	opts := teardown.DestroyOptions{Wipe: teardown.WipeOSDisk, Revision: 7}
	require.NoError(t, p.Destroy(ctx, "n", opts))
	require.NoError(t, p.Destroy(ctx, "n", opts))
	w, ok := p.Destroyed("n")
	assert.True(t, ok)
	assert.Equal(t, teardown.WipeOSDisk, w)
	got, _ := p.DestroyedWith("n")
	assert.Equal(t, opts, got)
	assert.Equal(t, 2, p.Calls())
	assert.False(t, p.Released("n"))
	require.NoError(t, p.Release(ctx, "n"))
	require.NoError(t, p.Release(ctx, "n"))
	assert.True(t, p.Released("n"))

	e := teardowntest.NewEtcd(teardown.Member{ID: 1}, teardown.Member{ID: 2})
	require.NoError(t, e.RemoveMember(ctx, 1))
	assert.ErrorIs(t, e.RemoveMember(ctx, 1), teardown.ErrMemberNotFound)
	assert.ErrorIs(t, e.MemberHealth(ctx, teardown.Member{ID: 1}), teardown.ErrMemberNotFound)
	require.NoError(t, e.MemberHealth(ctx, teardown.Member{ID: 2}))
	assert.Equal(t, []uint64{1}, e.Removed())
}
