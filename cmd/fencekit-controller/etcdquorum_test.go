package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/etcdtest"
)

// The etcd-quorum gate, with the program on the real API server and a real
// three-member etcd (embedded, on loopback), one member on each of the
// three control-plane nodes (named after them). w3's member stops; then w1
// and w3 stop answering. w1's member is healthy and fencing it would leave
// one of three: refused, the arithmetic in its record, nothing switched.
// w3's member is down already: w3 is fenced. w3's member back, w1 is
// fenced too.
func TestIntegrationEtcdQuorum(t *testing.T) {
	s := newScene(t, 3, 3, "action=off\n")
	admin, ctx := s.admin, t.Context()
	w1, w2, w3 := s.nodes[0], s.nodes[1], s.nodes[2]
	for _, n := range s.nodes {
		_, err := admin.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	etcd := etcdtest.StartNamed(t, w1, w2, w3)
	etcd.Member(w3).Stop()

	s.start("--etcd-endpoints="+strings.Join(etcd.Endpoints(), ","),
		"--policy-file="+writePolicy(t, "stormGuard:\n  maxUnresponsivePercent: 70\nmaxInFlight: 2\n"))
	s.down(w1, w3)
	s.record(w3, "fenced", 30*time.Second, func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	nf := s.record(w1, "refused by the etcd quorum", 30*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by etcd-quorum")
	})
	assert.Contains(t, nf.Message, "fencing node "+w1+" would take its healthy etcd member "+w1+" down and leave 1 of 3 voting members healthy, under the quorum of 2 ("+w3+": ")
	assert.Equal(t, fence.StateOn, s.pdu.Truth("1"), "w1 not switched")

	require.NoError(t, etcd.Member(w3).Restart())
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, etcd.Member(w3).WaitReady(wctx))
	s.record(w1, "fenced", 40*time.Second, func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"))
}
