package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
)

var (
	capiMachines = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	capiClusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	capiMHCs     = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinehealthchecks"}
	kwokClusters = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "kwokclusters"}
	kwokMachines = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "kwokmachines"}
	remediations = schema.GroupVersionResource{Group: v1alpha1.Group, Version: v1alpha1.GroupVersion.Version, Resource: "nodefenceremediations"}
)

// TestControlPlaneClusterAPI runs Cluster API's own core manager (v1.14.2,
// built from the module proxy, as its own service account with its
// release's RBAC and deploy/remediation-rbac.yaml's aggregated rules) on
// the real control plane with kwok nodes, a Cluster and Machines of a
// stand-in infrastructure provider whose objects report provisioned, and
// a MachineHealthCheck whose remediation template is fencekit's:
//
//   - a worker's machine dies (its kwok process killed): the Machine
//     controller found its node by provider ID (status.nodeRef), the
//     MachineHealthCheck times its Ready condition out and creates a
//     NodeFenceRemediation named after the Machine, owned by it (v1beta2);
//     fencekit finds the node through the Machine, reboots it through its
//     BMC (off, pods released, on), the node comes back, the
//     MachineHealthCheck deletes the remediation, and fencekit's finalizer
//     lets it go once the node's fencing is over;
//   - a healthy worker's Machine annotated cluster.x-k8s.io/remediate-machine
//     (a person's request) is remediated the same way, once: rebooted,
//     and not again while the annotation stays; the annotation removed, the
//     remediation is deleted.
func TestControlPlaneClusterAPI(t *testing.T) {
	cpNode, w1, w2 := "cp-0", "worker-1", "worker-2"
	e := startE2E(t, e2eSpec{
		groups: map[string][]string{"cp": {cpNode}, "w1": {w1}, "w2": {w2}},
		fenced: []string{w1, w2},
		policy: "stormGuard:\n  maxUnresponsivePercent: 50\nmaxInFlight: 2\n",
		args:   []string{"--remediation"},
		crds: []string{filepath.Join(deployDir, "crd", "fencekit.io_nodefenceremediations.yaml"),
			filepath.Join(deployDir, "crd", "fencekit.io_nodefenceremediationtemplates.yaml")},
	})
	ctx := t.Context()
	cp, ns := e.cp, e.ns
	dyn := cp.Dynamic()
	capi := cp.StartClusterAPI(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Cluster API's manager:\n%s", capi.Log(60))
		}
	})
	// The external remediator's rules, aggregated into Cluster API's role.
	cp.Create(t, kubetest.Objects(t, filepath.Join(deployDir, "remediation-rbac.yaml"))...)
	cp.InstallCRD(t, filepath.Join("testdata", "capi-kwokcluster-crd.yaml"))
	cp.InstallCRD(t, filepath.Join("testdata", "capi-kwokmachine-crd.yaml"))

	// The nodes' provider IDs, as a cloud's kubelet sets them.
	for _, n := range []string{cpNode, w1, w2} {
		_, err := cp.Client().CoreV1().Nodes().Patch(ctx, n, types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"providerID":"kwok://%s"}}`, n), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	create := func(gvr schema.GroupVersionResource, obj map[string]any, status map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		u.SetNamespace(ns)
		got, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, "%s %s", gvr.Resource, u.GetName())
		if status != nil {
			got.Object["status"] = status
			_, err = dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
			require.NoError(t, err, "%s %s status", gvr.Resource, u.GetName())
		}
	}
	provisioned := map[string]any{"initialization": map[string]any{"provisioned": true}}
	const cluster = "kwok"

	// The workload cluster is this one: the ClusterCache reads it through
	// the kubeconfig Secret Cluster API looks for.
	kc, err := os.ReadFile(cp.Kubeconfig())
	require.NoError(t, err)
	_, err = cp.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": cluster}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kc},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	create(kwokClusters, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "KwokCluster",
		"metadata": map[string]any{"name": cluster}, "spec": map[string]any{}}, provisioned)
	create(capiClusters, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": cluster},
		"spec": map[string]any{"infrastructureRef": map[string]any{
			"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "KwokCluster", "name": cluster}}}, nil)
	for _, n := range []string{cpNode, w1, w2} {
		labels := map[string]any{"cluster.x-k8s.io/cluster-name": cluster}
		if n == cpNode {
			labels["cluster.x-k8s.io/control-plane"] = ""
		} else {
			labels["fencekit.io/mhc"] = "true"
		}
		create(kwokMachines, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "KwokMachine",
			"metadata": map[string]any{"name": n}, "spec": map[string]any{"providerID": "kwok://" + n}}, provisioned)
		create(capiMachines, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
			"metadata": map[string]any{"name": n, "labels": labels},
			"spec": map[string]any{"clusterName": cluster, "bootstrap": map[string]any{"dataSecretName": "none"},
				"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "KwokMachine", "name": n}}}, nil)
	}
	// Cluster API found each machine's node.
	for _, n := range []string{cpNode, w1, w2} {
		require.Eventually(t, func() bool {
			m, err := dyn.Resource(capiMachines).Namespace(ns).Get(ctx, n, metav1.GetOptions{})
			require.NoError(t, err)
			got, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			return got == n
		}, 90*time.Second, 200*time.Millisecond, "Machine %s: no status.nodeRef", n)
	}
	require.Eventually(t, func() bool {
		c, err := dyn.Resource(capiClusters).Namespace(ns).Get(ctx, cluster, metav1.GetOptions{})
		require.NoError(t, err)
		return conditionTrue(c, "ControlPlaneInitialized") && conditionTrue(c, "InfrastructureReady")
	}, 60*time.Second, 200*time.Millisecond, "the Cluster's control plane initialized, its infrastructure ready")

	// fencekit's template, and the MachineHealthCheck that uses it.
	create(templateGVR, map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.NodeFenceRemediationTemplateKind,
		"metadata": map[string]any{"name": "fencekit"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}}}, nil)
	create(capiMHCs, map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
		"metadata": map[string]any{"name": "workers", "labels": map[string]any{"cluster.x-k8s.io/cluster-name": cluster}},
		"spec": map[string]any{
			"clusterName": cluster,
			"selector":    map[string]any{"matchLabels": map[string]any{"fencekit.io/mhc": "true"}},
			"checks": map[string]any{
				"nodeStartupTimeoutSeconds": 0,
				"unhealthyNodeConditions": []any{
					map[string]any{"type": "Ready", "status": "False", "timeoutSeconds": 3},
					map[string]any{"type": "Ready", "status": "Unknown", "timeoutSeconds": 3},
				},
			},
			"remediation": map[string]any{"templateRef": map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.NodeFenceRemediationTemplateKind, "name": "fencekit"}},
		}}, nil)

	// A worker dies.
	remediation := func(name string) *unstructured.Unstructured {
		r, err := dyn.Resource(remediations).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		return r
	}
	// The remediation's conditions as Cluster API reads them, from a watch
	// opened before the worker dies.
	states := watchRemediationStates(t, dyn, ns, w1)
	killed := time.Now()
	require.NoError(t, cp.StopNodes("w1"))
	var rem *unstructured.Unstructured
	require.Eventually(t, func() bool { rem = remediation(w1); return rem != nil }, 90*time.Second, 100*time.Millisecond,
		"the MachineHealthCheck created no remediation for %s", w1)
	created := time.Since(killed)
	m1, err := dyn.Resource(capiMachines).Namespace(ns).Get(ctx, w1, metav1.GetOptions{})
	require.NoError(t, err)
	owners := rem.GetOwnerReferences()
	require.Len(t, owners, 1)
	assert.Equal(t, "cluster.x-k8s.io/v1beta2", owners[0].APIVersion)
	assert.Equal(t, "Machine", owners[0].Kind)
	assert.Equal(t, m1.GetUID(), owners[0].UID)
	assert.Equal(t, "fencekit", rem.GetAnnotations()["cluster.x-k8s.io/cloned-from-name"])
	assert.Equal(t, v1alpha1.NodeFenceRemediationTemplateKind+"."+v1alpha1.Group, rem.GetAnnotations()["cluster.x-k8s.io/cloned-from-groupkind"])

	// fencekit reboots it: off, its pods released, on; it comes back, and
	// Cluster API deletes the remediation, which goes once the fencing is
	// over.
	require.Eventually(t, func() bool {
		r := remediation(w1)
		return r == nil || conditionTrue(r, v1alpha1.ConditionSucceeded)
	}, 60*time.Second, 100*time.Millisecond, "the remediation of %s did not succeed", w1)
	succeeded := time.Since(killed)
	// Succeeded is the remediation's answer: Unknown while fencekit works,
	// then True, never False on the way (Cluster API would take False
	// for the end), and Processing not True beside it once True.
	seen := states.get()
	require.NotEmpty(t, seen)
	for i, st := range seen {
		assert.NotContains(t, st, "Succeeded=False", "%s's remediation, state %d of %v", w1, i, seen)
		if strings.Contains(st, "Succeeded=True") {
			assert.NotContains(t, st, "Processing=True", "%v", seen)
		}
	}
	t.Logf("%s's remediation: %v", w1, seen)
	require.Eventually(t, func() bool { return remediation(w1) == nil }, 120*time.Second, 200*time.Millisecond,
		"the remediation of %s not deleted once its node came back", w1)
	gone := time.Since(killed)
	power := e.bmcs[w1].PowerLog()
	require.GreaterOrEqual(t, len(power), 2, "%+v", power)
	assert.False(t, power[0].On)
	assert.True(t, power[1].On)
	nf := e.waitRecord(w1, 30*time.Second, "closed", func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.Equal(t, flow.ReleaseNone, nf.Released)
	t.Logf("%s killed: remediation created by Cluster API after %v, Succeeded after %v, deleted after %v",
		w1, created.Round(100*time.Millisecond), succeeded.Round(100*time.Millisecond), gone.Round(100*time.Millisecond))

	// A person asks Cluster API to remediate a healthy machine.
	annotate := func(value *string) {
		t.Helper()
		patch := `{"metadata":{"annotations":{"cluster.x-k8s.io/remediate-machine":null}}}`
		if value != nil {
			patch = fmt.Sprintf(`{"metadata":{"annotations":{"cluster.x-k8s.io/remediate-machine":%q}}}`, *value)
		}
		_, err := dyn.Resource(capiMachines).Namespace(ns).Patch(ctx, w2, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	empty := ""
	annotate(&empty)
	require.Eventually(t, func() bool {
		r := remediation(w2)
		if r == nil {
			return false
		}
		manual, _, _ := unstructured.NestedBool(r.Object, "status", "manual")
		return manual
	}, 60*time.Second, 100*time.Millisecond, "the annotation made no remediation for %s, marked a person's (status.manual)", w2)
	e.waitRecord(w2, 90*time.Second, "rebooted and recovered", func(nf *flow.NodeFence) bool {
		return nf.Closed() && slices.ContainsFunc(nf.History, func(h flow.Transition) bool {
			return h.Status == flow.StatusDone && h.Step.String() == "power_management"
		})
	})
	offs := len(e.bmcs[w2].PowerLog())
	require.Equal(t, 2, offs, "rebooted once: %+v", e.bmcs[w2].PowerLog())
	time.Sleep(3 * time.Second)
	assert.Len(t, e.bmcs[w2].PowerLog(), offs, "not again while the annotation stays")
	require.NotNil(t, remediation(w2), "Cluster API keeps the remediation while the annotation stays")
	annotate(nil)
	require.Eventually(t, func() bool { return remediation(w2) == nil }, 60*time.Second, 200*time.Millisecond,
		"the remediation of %s not deleted once the annotation went", w2)
}

// conditionTrue reports whether the object's status.conditions holds typ
// with status True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// remediationStates records the distinct Processing and Succeeded
// conditions a remediation goes through.
type remediationStates struct {
	mu   sync.Mutex
	seen []string
}

func (r *remediationStates) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// watchRemediationStates watches the remediation ns/name until t ends.
func watchRemediationStates(t *testing.T, dyn dynamic.Interface, ns, name string) *remediationStates {
	t.Helper()
	w, err := dyn.Resource(remediations).Namespace(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	r := &remediationStates{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			st := ""
			for _, typ := range []string{v1alpha1.ConditionProcessing, v1alpha1.ConditionSucceeded} {
				st += " " + typ + "=" + conditionStatus(u, typ)
			}
			st = strings.TrimSpace(st)
			r.mu.Lock()
			if len(r.seen) == 0 || r.seen[len(r.seen)-1] != st {
				r.seen = append(r.seen, st)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return r
}

// conditionStatus returns the status of the object's condition typ, or "".
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
