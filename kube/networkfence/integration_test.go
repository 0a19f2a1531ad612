package networkfence_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/networkfence"
	"github.com/fencekit/fencekit/kube/networkfence/networkfencetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// On the real API server, with a stand-in for CSI-Addons' controller (no
// CSI-Addons controller or CSI driver runs here): the conformance suite
// over single addresses and a range, the NetworkFence written as Rook
// writes it, a failure reported by the controller read back as the
// method's failure, and a CIDR wider than max_addresses refused with
// nothing written.
func TestIntegrationNetworkFence(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, "testdata/networkfence-crd.yaml")
	dyn := c.Dynamic()
	s := networkfencetest.Start(t, c.Objects())
	open := func(t *testing.T) *networkfence.Device {
		d, err := networkfence.New(c.Objects(), networkfence.Options{Driver: "rook-ceph.rbd.csi.ceph.com",
			SecretName: "rook-csi-rbd-provisioner", SecretNamespace: "rook-ceph", Parameters: map[string]string{"clusterID": "rook-ceph"}})
		require.NoError(t, err)
		return d
	}
	truth := func(_ context.Context, plug string) (fence.State, error) {
		key := plug
		if !strings.Contains(plug, "/") {
			key = plug + "/32"
		}
		if s.Fenced(strings.Split(key, ",")...) {
			return fence.StateOff, nil
		}
		return fence.StateOn, nil
	}
	t.Run("conformance", func(t *testing.T) {
		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
			return &fencetest.Fixture{Device: open(t), Plugs: []string{"10.9.0.1", "10.9.0.4/30", "10.9.0.7"}, Truth: truth, Settle: 200 * time.Millisecond}
		})
	})

	// Through the registry, as a configured method opens it.
	reg := fence.NewRegistry()
	require.NoError(t, reg.Register(networkfence.Driver(c.Objects())))
	m, err := reg.Open(t.Context(), "", &fence.MethodOptions{Node: "worker-1", Name: "storage", Driver: networkfence.Name,
		Params: fence.Params{"plug": "10.9.1.5,10.9.1.6", "csi_driver": "rook-ceph.rbd.csi.ceph.com", "cluster_id": "rook-ceph"}})
	require.NoError(t, err)
	defer m.Close()
	m.Options.PollInterval = 100 * time.Millisecond
	res, err := fence.Do(t.Context(), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.OffConfirmed)
	l, err := dyn.Resource(networkfence.Resource).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	var written *unstructured.Unstructured
	for i := range l.Items {
		if cs, _, _ := unstructured.NestedStringSlice(l.Items[i].Object, "spec", "cidrs"); slices.Equal(cs, []string{"10.9.1.5/32", "10.9.1.6/32"}) {
			written = &l.Items[i]
		}
	}
	require.NotNil(t, written)
	spec, _, _ := unstructured.NestedMap(written.Object, "spec")
	assert.Equal(t, map[string]any{"driver": "rook-ceph.rbd.csi.ceph.com", "fenceState": "Fenced",
		"cidrs": []any{"10.9.1.5/32", "10.9.1.6/32"}, "parameters": map[string]any{"clusterID": "rook-ceph"}}, spec)
	_, err = fence.Do(t.Context(), m, fence.ActionOn)
	require.NoError(t, err)

	// The controller reports a failure: the off fails, naming it.
	d := open(t)
	m2 := &fence.Method{Name: "storage", Node: "worker-2", Driver: networkfence.Name, Device: d, Plug: networkfencetest.FailCIDR,
		Options: fence.Options{PowerTimeout: 2 * time.Second, PollInterval: 100 * time.Millisecond}}
	_, err = fence.Do(t.Context(), m2, fence.ActionOff)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the storage refused")

	// A NetworkFence asking for another state (not one this driver
	// writes): its status is no answer to an off; the off deletes it and
	// is not done until a new one answers.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": networkfence.Resource.GroupVersion().String(), "kind": networkfence.Kind,
		"metadata": map[string]any{"name": "other"},
		"spec":     map[string]any{"driver": "x", "fenceState": networkfence.StateUnfenced, "cidrs": []any{"10.9.2.1/32"}}}}
	_, err = dyn.Resource(networkfence.Resource).Create(t.Context(), other, metav1.CreateOptions{})
	require.NoError(t, err)
	named, err := networkfence.New(c.Objects(), networkfence.Options{Driver: "x", Name: "other"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		u, err := dyn.Resource(networkfence.Resource).Get(t.Context(), "other", metav1.GetOptions{})
		r, _, _ := unstructured.NestedString(u.Object, "status", "result")
		return err == nil && r == networkfence.ResultSucceeded
	}, 10*time.Second, 20*time.Millisecond, "the stand-in answered the unfence")
	st, err := named.Status(t.Context(), "10.9.2.1")
	assert.Error(t, err, "not one this driver wrote")
	assert.Equal(t, fence.StateUnknown, st, "an answer to another request is not taken")
	err = named.Set(t.Context(), "10.9.2.1", fence.StateOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err))
	nm := &fence.Method{Name: "storage", Node: "worker-3", Driver: networkfence.Name, Device: named, Plug: "10.9.2.1",
		Options: fence.Options{PowerTimeout: 5 * time.Second, PollInterval: 100 * time.Millisecond, RetryOff: 2}}
	res, err = fence.Do(t.Context(), nm, fence.ActionOff)
	require.NoError(t, err, "fenced anew once the other one is gone")
	assert.True(t, res.OffConfirmed)

	// Too wide: refused, nothing written.
	before, err := dyn.Resource(networkfence.Resource).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	err = d.Set(t.Context(), "10.0.0.0/16", fence.StateOff)
	require.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.True(t, fence.IsNotDone(err))
	after, err := dyn.Resource(networkfence.Resource).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, after.Items, len(before.Items), "nothing written")
}
