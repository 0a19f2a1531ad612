package fencekube_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// node returns a Node with a Ready condition of status ready (none when
// empty) that last changed at since.
func node(name string, ready corev1.ConditionStatus, since time.Time, labels map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		CreationTimestamp: metav1.NewTime(since.Add(-time.Hour))}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}
	if ready != "" {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since)})
	}
	return n
}

func TestNodeHealthOf(t *testing.T) {
	since := t0.Add(-10 * time.Minute)
	tests := []struct {
		name string
		node *corev1.Node
		want controller.NodeHealth
	}{
		{"ready", node("a", corev1.ConditionTrue, since, nil),
			controller.NodeHealth{Name: "a", Ready: true, Since: since}},
		{"not ready", node("a", corev1.ConditionFalse, since, nil),
			controller.NodeHealth{Name: "a", Since: since}},
		{"unknown is not ready", node("a", corev1.ConditionUnknown, since, nil),
			controller.NodeHealth{Name: "a", Since: since}},
		{"no Ready condition: not ready since creation", node("a", "", since, nil),
			controller.NodeHealth{Name: "a", Since: since.Add(-time.Hour)}},
		{"control plane", node("a", corev1.ConditionTrue, since, map[string]string{fencekube.LabelControlPlane: ""}),
			controller.NodeHealth{Name: "a", Ready: true, Since: since, ControlPlane: true, Labels: map[string]string{fencekube.LabelControlPlane: ""}}},
		{"master", node("a", corev1.ConditionTrue, since, map[string]string{fencekube.LabelMaster: "true", "zone": "x"}),
			controller.NodeHealth{Name: "a", Ready: true, Since: since, ControlPlane: true, Labels: map[string]string{fencekube.LabelMaster: "true", "zone": "x"}}},
		{"worker", node("a", corev1.ConditionTrue, since, map[string]string{"node-role.kubernetes.io/worker": ""}),
			controller.NodeHealth{Name: "a", Ready: true, Since: since, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fencekube.NodeHealthOf(tt.node)
			assert.Equal(t, tt.want.Name, got.Name)
			assert.Equal(t, tt.want.Ready, got.Ready)
			assert.True(t, tt.want.Since.Equal(got.Since), "since %v, want %v", got.Since, tt.want.Since)
			assert.Equal(t, tt.want.ControlPlane, got.ControlPlane)
			assert.Equal(t, tt.want.Labels, got.Labels)
		})
	}
}

func TestHealthInformer(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(
		node("b", corev1.ConditionTrue, t0, nil),
		node("a", corev1.ConditionFalse, t0, map[string]string{fencekube.LabelControlPlane: ""}),
	)
	h := fencekube.NewHealth()
	assert.Nil(t, h.Nodes(), "nothing before an informer is given")
	runHealth(t, client, h)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, h.WaitForSync(wctx))

	nodes := h.Nodes()
	require.Len(t, nodes, 2)
	slices.SortFunc(nodes, func(x, y controller.NodeHealth) int { return strings.Compare(x.Name, y.Name) })
	assert.Equal(t, "a", nodes[0].Name)
	assert.False(t, nodes[0].Ready)
	assert.True(t, nodes[0].ControlPlane)
	assert.True(t, nodes[1].Ready)

	later := t0.Add(time.Minute)
	_, err := client.CoreV1().Nodes().UpdateStatus(ctx, node("b", corev1.ConditionFalse, later, nil), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, n := range h.Nodes() {
			if n.Name == "b" {
				return !n.Ready && n.Since.Equal(later)
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
}

// OnChange is called once the informer holds the change: what Nodes
// returns from within the call already shows it. A change of anything but
// the Ready condition calls nothing. The node is created after the
// informer has synced: the calls for the nodes of the initial list may
// come before HasSynced turns true, when Nodes still returns nil by
// design (a gate must not count from a partial list).
func TestHealthOnChangeAfterTheCache(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	h := fencekube.NewHealth()
	var mu sync.Mutex
	var seen []bool // b's readiness as Nodes shows it at each call
	h.OnChange(func() {
		for _, n := range h.Nodes() {
			if n.Name == "b" {
				mu.Lock()
				seen = append(seen, n.Ready)
				mu.Unlock()
			}
		}
	})
	runHealth(t, client, h)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, h.WaitForSync(wctx))
	calls := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node("b", corev1.ConditionTrue, t0, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(calls()) == 1 }, 10*time.Second, 5*time.Millisecond, "added")

	labelled := node("b", corev1.ConditionTrue, t0, map[string]string{"rack": "r1"})
	_, err = client.CoreV1().Nodes().Update(ctx, labelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node("b", corev1.ConditionUnknown, t0.Add(time.Minute), map[string]string{"rack": "r1"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(calls()) == 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []bool{true, false}, calls(), "the label alone calls nothing; the Ready change is in the cache at the call")
}

// The node's system UUID, which a method's device must match before an
// off, is read from status.nodeInfo and survives the summary.
func TestNodeHealthSystemUUID(t *testing.T) {
	n := node("a", corev1.ConditionFalse, time.Now(), nil)
	n.Status.NodeInfo.SystemUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	n.Status.NodeInfo.KernelVersion = "6.1.0"
	out, err := fencekube.SummarizeNode(n)
	require.NoError(t, err)
	s := out.(*fencekube.NodeSummary)
	assert.Equal(t, n.Status.NodeInfo.SystemUUID, s.Health().SystemUUID)
	assert.Equal(t, fencekube.NodeHealthOf(n), s.Health())
}

// A summary keeps what the controller reads of a Node and nothing else;
// it is a client.Object that names its Node, its labels' strings are
// shared between nodes, and a copy owns its addresses and device condition.
func TestSummarizeNode(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	mk := func(name string) *corev1.Node {
		n := node(name, corev1.ConditionFalse, t0, map[string]string{"kubernetes.io/hostname": name, "rack": "r1", fencekube.LabelControlPlane: ""})
		n.UID, n.ResourceVersion = "u-"+types.UID(name), "7"
		n.Spec.Unschedulable = true
		n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"img"}}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name},
			{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeExternalIP, Address: "192.0.2.5"}}
		n.Status.Conditions = append(n.Status.Conditions,
			corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			corev1.NodeCondition{Type: fencekube.DeviceConditionType, Status: corev1.ConditionFalse, Reason: "DeviceDown", Message: "m", LastTransitionTime: metav1.NewTime(t0)})
		return n
	}
	out, err := fencekube.SummarizeNode(mk("w1"))
	require.NoError(t, err)
	s := out.(*fencekube.NodeSummary)
	assert.Equal(t, "w1", s.GetName())
	assert.Equal(t, types.UID("u-w1"), s.GetUID())
	assert.Equal(t, "7", s.GetResourceVersion())
	assert.Equal(t, corev1.SchemeGroupVersion.WithKind("Node"), s.GetObjectKind().GroupVersionKind())
	assert.True(t, s.Unschedulable)
	assert.Equal(t, corev1.ConditionFalse, s.Ready)
	assert.Equal(t, t0, s.ReadySince.UTC())
	assert.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeExternalIP, Address: "192.0.2.5"}}, s.Addresses)
	require.NotNil(t, s.Device)
	assert.Equal(t, "DeviceDown", s.Device.Reason)
	h := s.Health()
	assert.True(t, h.ControlPlane)
	assert.Equal(t, []string{"10.0.0.5"}, h.Addresses)
	assert.Equal(t, "r1", h.Labels["rack"])

	other, _ := fencekube.SummarizeNode(mk("w2"))
	o := other.(*fencekube.NodeSummary)
	assert.Equal(t, unsafe.StringData(s.Labels["rack"]), unsafe.StringData(o.Labels["rack"]), "one copy of a value")
	assert.Equal(t, unsafe.StringData(o.Name), unsafe.StringData(o.Labels["kubernetes.io/hostname"]), "the hostname is the name")

	c := s.DeepCopyObject().(*fencekube.NodeSummary)
	c.Addresses[0].Address = "x"
	c.Device.Reason = "y"
	assert.Equal(t, "10.0.0.5", s.Addresses[0].Address)
	assert.Equal(t, "DeviceDown", s.Device.Reason)

	same, _ := fencekube.SummarizeNode(s)
	assert.Same(t, s, same, "a summary is kept as it is")
	assert.False(t, fencekube.NodeReadyChanged(mk("w1"), s))
	assert.True(t, fencekube.NodeReadyChanged(s, node("w1", corev1.ConditionTrue, t0, nil)))
	assert.True(t, fencekube.NodeReadyChanged(s, "not a node"))
}
