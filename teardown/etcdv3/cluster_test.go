package etcdv3_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/internal/etcdtest"
	"github.com/fencekit/fencekit/teardown/etcdv3"
)

// open returns an adapter over every member of c, closed at the end of the
// test.
func open(t *testing.T, c *etcdtest.Cluster) *etcdv3.Cluster {
	t.Helper()
	cl, err := etcdv3.New(c.Endpoints(), etcdv3.Options{DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// removed waits until the member's server has stopped itself, as a member
// does once it learns it was removed.
func removed(t *testing.T, m *etcdtest.Member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.WaitStopped(ctx), "%s still running 10 s after its removal", m.Name())
}
