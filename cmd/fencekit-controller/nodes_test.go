package main

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/fencekit/fencekit/fence/kdump"
	"github.com/fencekit/fencekit/internal/testtool"
	"github.com/fencekit/fencekit/kube/fencekube"
)

func node(name string, ready corev1.ConditionStatus, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = addrs
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))},
		}
	}
	return n
}

func internal(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a}
}
func external(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a}
}

func TestNodeAddrs(t *testing.T) {
	n := node("w1", corev1.ConditionTrue,
		internal("10.0.0.5"), corev1.NodeAddress{Type: corev1.NodeHostName, Address: "w1"},
		external("2001:db8::5"), internal("::ffff:10.0.0.5"), internal("not-an-ip"), internal("0.0.0.0"),
		corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: "w1.example"}, external("fe80::1%eth0"))
	assert.Equal(t, []netip.Addr{
		netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("fe80::1"),
	}, nodeAddrs(fencekube.Summarize(n)), "IPs only, plain, without repeats")
	assert.Empty(t, nodeAddrs(fencekube.Summarize(node("w2", ""))))
}

// nodeWatch over a fake clientset: the address book follows the nodes,
// an address that moves to another node is given to it once the first
// lets it go, and a change of readiness wakes the controller.
func TestNodeWatch(t *testing.T) {
	client := kfake.NewClientset(
		node("w1", corev1.ConditionTrue, internal("10.0.0.1")),
		node("w2", corev1.ConditionTrue, internal("10.0.0.2"), external("192.0.2.2")),
	)
	var logs testtool.SyncBuffer
	var wakes atomic.Int64
	inf := informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes().Informer()
	require.NoError(t, inf.SetTransform(fencekube.SummarizeNode))
	w := &nodeWatch{inf: inf, book: &kdump.AddressBook{}, wake: func() { wakes.Add(1) },
		logger: slog.New(slog.NewTextHandler(&logs, nil))}
	synced, err := w.start()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, cache.WaitFor(ctx, "", synced))

	resolve := func(a string) string {
		n, _ := w.book.Resolve(netip.MustParseAddr(a))
		return n
	}
	require.Eventually(t, func() bool { return resolve("192.0.2.2") == "w2" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "w1", resolve("10.0.0.1"))
	assert.Equal(t, "w2", resolve("10.0.0.2"))
	assert.EqualValues(t, 2, wakes.Load(), "one wake per node added")

	nodes := client.CoreV1().Nodes()
	update := func(n *corev1.Node) {
		_, err := nodes.Update(t.Context(), n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	// w2 goes not ready: a wake; its addresses stay.
	update(node("w2", corev1.ConditionFalse, internal("10.0.0.2"), external("192.0.2.2")))
	require.Eventually(t, func() bool { return wakes.Load() == 3 }, 10*time.Second, 5*time.Millisecond)

	// w3 comes with w1's address: refused while w1 holds it.
	_, err = nodes.Create(t.Context(), node("w3", corev1.ConditionTrue, internal("10.0.0.1")), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return wakes.Load() == 4 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "w1", resolve("10.0.0.1"))
	assert.Contains(t, logs.String(), "kdump: node's addresses not recorded")
	assert.Contains(t, logs.String(), "node=w3")

	// w1 gets another address: w3 gets 10.0.0.1. A change of addresses
	// alone wakes nobody.
	update(node("w1", corev1.ConditionTrue, internal("10.0.0.11")))
	require.Eventually(t, func() bool { return resolve("10.0.0.1") == "w3" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "w1", resolve("10.0.0.11"))
	assert.EqualValues(t, 4, wakes.Load())

	// w2 is deleted: its addresses go, and a wake.
	require.NoError(t, nodes.Delete(t.Context(), "w2", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return resolve("192.0.2.2") == "" }, 10*time.Second, 5*time.Millisecond)
	assert.Empty(t, resolve("10.0.0.2"))
	assert.Equal(t, 2, w.book.Len())
	require.Eventually(t, func() bool { return wakes.Load() == 5 }, 10*time.Second, 5*time.Millisecond)
}
