package teardownkube_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/teardownkube"
	"github.com/fencekit/fencekit/teardown"
)

// bmhOperator plays the baremetal-operator's part for one host, as far as
// a teardown needs it: a host whose spec has lost its image is
// deprovisioning, then (its disks cleaned as spec.automatedCleaningMode
// says) available; status.poweredOn follows spec.online.
type bmhOperator struct {
	hosts dynamic.ResourceInterface
	name  string

	mu       sync.Mutex
	cleaning []string // the cleaning mode of each deprovisioning
}

func (o *bmhOperator) run(ctx context.Context, t testing.TB) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := o.pass(ctx); err != nil && ctx.Err() == nil {
			t.Logf("operator: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (o *bmhOperator) pass(ctx context.Context) error {
	h, err := o.hosts.Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	_, hasImage, _ := unstructured.NestedFieldNoCopy(h.Object, "spec", "image")
	online, _, _ := unstructured.NestedBool(h.Object, "spec", "online")
	state, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "state")
	prov := map[string]any{"state": state}
	switch {
	case !hasImage && state == "provisioned":
		prov["state"] = "deprovisioning"
	case !hasImage && state == "deprovisioning":
		mode, _, _ := unstructured.NestedString(h.Object, "spec", "automatedCleaningMode")
		o.mu.Lock()
		o.cleaning = append(o.cleaning, mode)
		o.mu.Unlock()
		prov["state"] = "available"
		prov["image"] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"poweredOn": online, "provisioning": prov}})
	if err != nil {
		return err
	}
	_, err = o.hosts.Patch(ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func (o *bmhOperator) cleanings() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.cleaning...)
}

// withHost gives the site's node a provisioned BareMetalHost of the same
// name, claimed by a Metal3Machine, its operator, and the BareMetalHosts
// provisioner.
func (s *site) withHost() (dynamic.ResourceInterface, *bmhOperator) {
	t := s.t
	c := kubetest.Shared(t)
	c.InstallCRD(t, "../rebootkube/testdata/baremetalhost-crd.yaml")
	hosts := c.Dynamic().Resource(teardownkube.BareMetalHostKind.GroupVersion().WithResource("baremetalhosts")).Namespace(s.ns)
	h := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"name": s.node, "namespace": s.ns},
		"spec": map[string]any{
			"online":                true,
			"image":                 map[string]any{"url": "http://images.example/ubuntu-24.04.qcow2", "checksum": "sha256:0"},
			"consumerRef":           map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Machine", "name": s.node, "namespace": s.ns},
			"automatedCleaningMode": "metadata",
		},
	}}
	_, err := hosts.Create(s.ctx(), h, metav1.CreateOptions{})
	require.NoError(t, err)
	patch := []byte(`{"status":{"poweredOn":true,"provisioning":{"state":"provisioned","image":{"url":"http://images.example/ubuntu-24.04.qcow2"}}}}`)
	_, err = hosts.Patch(s.ctx(), s.node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	require.NoError(t, err)

	op := &bmhOperator{hosts: hosts, name: s.node}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); op.run(ctx, t) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	prov, err := teardownkube.NewBareMetalHosts(c.Objects(), teardownkube.BareMetalHostOptions{Namespace: s.ns, Poll: 50 * time.Millisecond})
	require.NoError(t, err)
	s.x.Provisioner = prov
	return hosts, op
}

// A whole teardown whose provisioner is metal3's: the host deprovisioned
// with the cleaning mode the wipe asks for and the design revision
// recorded, powered off (verified through the node's fence levels) before
// its release, then released.
func TestE2ETeardownBareMetalHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		preserve bool
		cleaning string
	}{
		{"wipe every disk", false, teardownkube.CleaningMetadata},
		{"preserve local storage", true, teardownkube.CleaningDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t)
			hosts, op := s.withHost()
			consumerAtPowerOff := "unset"
			observe := s.x.Observer
			s.x.Observer = func(e teardown.StepEvent) {
				observe(e)
				if e.Step == teardown.StepPowerOff && e.Type == teardown.EventStart {
					h, err := hosts.Get(context.Background(), s.node, metav1.GetOptions{})
					if err == nil {
						_, has, _ := unstructured.NestedFieldNoCopy(h.Object, "spec", "consumerRef")
						consumerAtPowerOff = map[bool]string{true: "claimed", false: "released"}[has]
					}
				}
			}
			req := s.request()
			req.PreserveLocalStorage = tc.preserve
			_, rep := s.run(req)
			require.NoError(t, rep.Err())
			assert.Equal(t, allSteps(teardown.Done, nil), stepsOf(rep))

			assert.Equal(t, []string{tc.cleaning}, op.cleanings(), "deprovisioned once, with the cleaning mode of the wipe")
			assert.Equal(t, "claimed", consumerAtPowerOff, "not released before the power-off")
			h, err := hosts.Get(s.ctx(), s.node, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "1", h.GetAnnotations()[teardownkube.RevisionAnnotation])
			_, has, _ := unstructured.NestedFieldNoCopy(h.Object, "spec", "consumerRef")
			assert.False(t, has, "released")
			online, _, _ := unstructured.NestedBool(h.Object, "spec", "online")
			assert.False(t, online)
			state, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "state")
			assert.Equal(t, "available", state)

			// Again: nothing more is asked of the operator.
			require.NoError(t, s.x.Provisioner.Destroy(s.ctx(), s.node, teardown.DestroyOptions{Wipe: map[bool]teardown.Wipe{false: teardown.WipeAll, true: teardown.WipeOSDisk}[tc.preserve], Revision: 1}))
			// The other cleaning mode, on a host deprovisioned already:
			// refused, never a wipe (or a keep) reported that did not run.
			err = s.x.Provisioner.Destroy(s.ctx(), s.node, teardown.DestroyOptions{Wipe: map[bool]teardown.Wipe{true: teardown.WipeAll, false: teardown.WipeOSDisk}[tc.preserve], Revision: 1})
			require.ErrorIs(t, err, teardown.ErrNotReady)
			assert.Contains(t, err.Error(), "already deprovisioned with cleaning mode")
			require.NoError(t, s.x.Provisioner.Release(s.ctx(), s.node))
			h, err = hosts.Get(s.ctx(), s.node, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, []string{tc.cleaning}, op.cleanings())
			assert.Equal(t, "1", h.GetAnnotations()[teardownkube.RevisionAnnotation])
		})
	}
}

// An operator that reports an error fails the destroy with its message; a
// host that does not exist fails it at once.
func TestBareMetalHostsErrors(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	hosts, _ := s.withHost()
	patch := []byte(`{"status":{"errorType":"provisioning error","errorMessage":"cleaning failed: disk sdb not found"}}`)
	_, err := hosts.Patch(s.ctx(), s.node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(s.ctx(), 5*time.Second)
	defer cancel()
	err = s.x.Provisioner.Destroy(ctx, s.node, teardown.DestroyOptions{Wipe: teardown.WipeAll, Revision: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cleaning failed: disk sdb not found")
	err = s.x.Provisioner.Destroy(ctx, "no-such-host", teardown.DestroyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "BareMetalHost "+s.ns+"/no-such-host")
	require.NoError(t, s.x.Provisioner.Release(ctx, "no-such-host"), "a host that is gone is released")
	_, err = teardownkube.NewBareMetalHosts(nil, teardownkube.BareMetalHostOptions{Namespace: "x"})
	assert.Error(t, err)
}
