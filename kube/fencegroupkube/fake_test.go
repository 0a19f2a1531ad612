package fencegroupkube_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/internal/kubefake"
	"github.com/fencekit/fencekit/kube/fencegroupkube"
)

const key = "fencegroup.rook.io/rook-ceph"

func fakeNode(name string, labels map[string]string) *corev1.Node {
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// fakeClient is controller-runtime's fake client holding objs, recording
// the requests; before, when not nil, may answer one in place of the fake.
func fakeClient(before func(r kubefake.Request) error, objs ...crclient.Object) *kubefake.Client {
	return kubefake.New(crfake.NewClientBuilder().WithObjects(objs...).Build(), before)
}

func TestReconcileNodesAndPDB(t *testing.T) {
	client := fakeClient(nil,
		fakeNode("worker-0", nil),
		fakeNode("worker-1", map[string]string{key: ""}),
		fakeNode("worker-2", nil),
		fakeNode("gpu-0", map[string]string{key: "", "example.com/team": "ml"}),
	)
	h, clk := health(t, "rook-ceph")
	h.Set(status(256, 0, "worker-0", "worker-1", "worker-2"))
	r := &fencegroupkube.Reconciler{
		Cluster:  "rook-ceph",
		Health:   h,
		Machines: &fencegroupkube.Nodes{Client: client},
		Budgets:  []fencegroupkube.BudgetWriter{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "rook-ceph"}},
		Now:      clk.Now,
	}
	res, err := r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Budget.MaxUnavailable)
	assert.Len(t, res.Applied, 3)
	assert.Equal(t, []string{
		`patch Node worker-0 {"metadata":{"labels":{"fencegroup.rook.io/rook-ceph":""}}}`,
		`patch Node worker-2 {"metadata":{"labels":{"fencegroup.rook.io/rook-ceph":""}}}`,
		`patch Node gpu-0 {"metadata":{"labels":{"fencegroup.rook.io/rook-ceph":null}}}`,
		"create PodDisruptionBudget rook-ceph/fencegroup-rook-ceph",
	}, client.TakeWrites())

	gpu := &corev1.Node{}
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Name: "gpu-0"}, gpu))
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "gpu-0", "example.com/team": "ml"}, gpu.Labels)
	pdb := &policyv1.PodDisruptionBudget{}
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "rook-ceph", Name: "fencegroup-rook-ceph"}, pdb))
	assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)
	assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}, pdb.Spec.Selector)
	assert.Equal(t, "all 256 PGs active+clean", pdb.Annotations[fencegroupkube.ReasonAnnotation])
	assert.Equal(t, "fencekit-fencegroup", pdb.Labels["app.kubernetes.io/managed-by"])

	// Nothing changed: nothing written.
	_, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Empty(t, client.TakeWrites())

	// The PGs degrade: the budget closes.
	h.Set(status(250, 6, "worker-0", "worker-1", "worker-2"))
	res, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"update PodDisruptionBudget rook-ceph/fencegroup-rook-ceph"}, client.TakeWrites())
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "rook-ceph", Name: "fencegroup-rook-ceph"}, pdb))
	assert.Equal(t, intstr.FromInt32(0), *pdb.Spec.MaxUnavailable)
	assert.Equal(t, "6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph", pdb.Annotations[fencegroupkube.ReasonAnnotation])
	assert.Equal(t, res.Budget.Reason, pdb.Annotations[fencegroupkube.ReasonAnnotation])

	// The health goes stale while the OSDs have moved off worker-2: the
	// budget stays closed, worker-2 keeps its label until a fresh read.
	h.Set(status(256, 0, "worker-0", "worker-1"))
	clk.Add(3 * time.Minute)
	res, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.True(t, res.Snapshot.Stale)
	assert.Empty(t, res.Applied)
	require.Len(t, res.Held, 1)
	assert.Equal(t, "remove "+key+" from worker-2 (runs no OSD of Ceph cluster rook-ceph)", res.Held[0].String())
	assert.Equal(t, []string{"update PodDisruptionBudget rook-ceph/fencegroup-rook-ceph"}, client.TakeWrites(), "only the reason changed")

	h.Set(status(256, 0, "worker-0", "worker-1"))
	res, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{
		`patch Node worker-2 {"metadata":{"labels":{"fencegroup.rook.io/rook-ceph":null}}}`,
		"update PodDisruptionBudget rook-ceph/fencegroup-rook-ceph",
	}, client.TakeWrites(), "label removed before the budget opens")
}

// A node's kubernetes.io/hostname is tried beside its name.
func TestNodesList(t *testing.T) {
	client := fakeClient(nil, fakeNode("n1", nil), fakeNode("n2", map[string]string{"kubernetes.io/hostname": "stor-2.example.net", "role": "storage"}))
	ms, err := (&fencegroupkube.Nodes{Client: client}).List(t.Context())
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, fencegroup.Machine{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}, ms[0])
	assert.Equal(t, []string{"stor-2.example.net"}, ms[1].Hosts)

	ms, err = (&fencegroupkube.Nodes{Client: client, Selector: "role=storage"}).List(t.Context())
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "n2", ms[0].Name)
}

func TestReconcileErrors(t *testing.T) {
	client := fakeClient(func(r kubefake.Request) error {
		switch {
		case r.Verb == "patch" && r.Name == "worker-0":
			return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "worker-0", errors.New("RBAC: not allowed"))
		case r.Verb == "create" && r.Kind == "PodDisruptionBudget":
			return apierrors.NewServiceUnavailable("etcd is down")
		}
		return nil
	}, fakeNode("worker-0", nil), fakeNode("worker-1", nil))
	h, clk := health(t, "rook-ceph")
	h.Set(status(256, 0, "worker-0", "worker-1"))
	r := &fencegroupkube.Reconciler{
		Cluster: "rook-ceph", Health: h, Machines: &fencegroupkube.Nodes{Client: client}, Now: clk.Now,
		Budgets: []fencegroupkube.BudgetWriter{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "ceph"}},
	}
	res, err := r.Reconcile(t.Context())
	require.Error(t, err)
	assert.Equal(t, "fencegroupkube: Node worker-0: label metadata.labels[fencegroup.rook.io/rook-ceph]: nodes \"worker-0\" is forbidden: RBAC: not allowed\n"+
		"fencegroupkube: PodDisruptionBudget ceph/fencegroup-rook-ceph: create: etcd is down", err.Error())
	var ke *fencegroupkube.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "worker-0", ke.Name)
	assert.True(t, apierrors.IsForbidden(err))
	require.Len(t, res.Applied, 1, "the other node is labelled all the same")
	assert.Equal(t, "worker-1", res.Applied[0].Machine)

	_, err = (&fencegroupkube.Reconciler{Cluster: "-", Health: h}).Reconcile(t.Context())
	assert.ErrorIs(t, err, fencegroup.ErrInvalidCluster)
	_, err = (&fencegroupkube.Reconciler{Cluster: "rook-ceph"}).Reconcile(t.Context())
	assert.Error(t, err)
}

// An update that conflicts with another client's write is read and tried
// again.
func TestPDBConflictRetried(t *testing.T) {
	conflicts, always := 0, false
	client := fakeClient(func(r kubefake.Request) error {
		if r.Verb == "update" && (always || conflicts < 2) {
			conflicts++
			return apierrors.NewConflict(schema.GroupResource{Resource: "poddisruptionbudgets"}, "osd-budget", errors.New("the object has been modified"))
		}
		return nil
	}, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "osd-budget", Namespace: "ceph", ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(2))},
	})
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rook-ceph-osd"}}
	w := &fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "ceph", Name: "osd-budget", Selector: sel}
	require.NoError(t, w.WriteBudget(t.Context(), "rook-ceph", fencegroup.Budget{MaxUnavailable: 1, Clean: true, Reason: "all 8 PGs active+clean"}))
	assert.Equal(t, 2, conflicts)
	pdb := &policyv1.PodDisruptionBudget{}
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "ceph", Name: "osd-budget"}, pdb))
	assert.Nil(t, pdb.Spec.MinAvailable, "minAvailable and maxUnavailable exclude each other")
	assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)
	assert.Equal(t, sel, pdb.Spec.Selector)

	// Always conflicting: a bounded number of attempts (client-go's
	// retry.DefaultRetry), then the last conflict.
	always, conflicts = true, 0
	err := w.WriteBudget(t.Context(), "rook-ceph", fencegroup.Budget{Reason: "x"})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.ErrorContains(t, err, "fencegroupkube: PodDisruptionBudget ceph/osd-budget: update spec.maxUnavailable: ")
	assert.Equal(t, 5, conflicts, "client-go's retry.DefaultRetry: five tries")
}

func TestBudgetWriterErrors(t *testing.T) {
	client := fakeClient(nil)
	for _, tc := range []struct {
		w   fencegroupkube.BudgetWriter
		b   fencegroup.Budget
		err string
	}{
		{&fencegroupkube.PodDisruptionBudget{Client: client}, fencegroup.Budget{},
			"fencegroupkube: PodDisruptionBudget fencegroup-rook-ceph: update metadata.namespace: no namespace given"},
		{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "ceph", Name: "Bad_Name"}, fencegroup.Budget{},
			"fencegroupkube: PodDisruptionBudget ceph/Bad_Name: update metadata.name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
		{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "ceph"}, fencegroup.Budget{MaxUnavailable: -1},
			"fencegroupkube: PodDisruptionBudget ceph/fencegroup-rook-ceph: update spec.maxUnavailable: invalid value -1"},
		{&fencegroupkube.MachineDisruptionBudget{Namespace: "m", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}, fencegroup.Budget{},
			"fencegroupkube: MachineDisruptionBudget m/fencegroup-rook-ceph: update spec.selector: \"Near\" is not a valid label selector operator"},
	} {
		assert.EqualError(t, tc.w.WriteBudget(t.Context(), "rook-ceph", tc.b), tc.err)
	}
	assert.Equal(t, "fencegroup-ceph-prod", fencegroupkube.BudgetName("Ceph_Prod"))
}

func TestLabelPatch(t *testing.T) {
	assert.Equal(t, `{"metadata":{"labels":{"fencegroup.rook.io/a":""}}}`, string(fencegroupkube.LabelPatch("fencegroup.rook.io/a", true)))
	assert.Equal(t, `{"metadata":{"labels":{"fencegroup.rook.io/a":null}}}`, string(fencegroupkube.LabelPatch("fencegroup.rook.io/a", false)))
}

func ptr[T any](v T) *T { return &v }

// machineObj is a Machine of the machine API in namespace ns, whose node is
// node ("" for none).
func machineObj(gvk schema.GroupVersionKind, ns, name, node string, labels map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"providerID": "baremetalhost:///openshift-machine-api/" + name},
	}}
	if node != "" {
		obj.Object["status"] = map[string]any{"nodeRef": map[string]any{"kind": "Node", "name": node, "uid": "2b4c"}}
	}
	if labels != nil {
		obj.SetLabels(labels)
	}
	return obj
}

func TestReconcileMachinesAndMDB(t *testing.T) {
	gvk := fencegroupkube.OpenShiftMachines
	client := fakeClient(nil,
		machineObj(gvk, "openshift-machine-api", "ocp-worker-0-x7k2p", "worker-0", nil),
		machineObj(gvk, "openshift-machine-api", "ocp-worker-1-9dd4q", "worker-1", map[string]string{key: "", "machine.openshift.io/cluster-api-machine-role": "worker"}),
		machineObj(gvk, "openshift-machine-api", "ocp-worker-2-b6m8z", "", nil),
		machineObj(gvk, "other", "ocp-worker-3-zzzzz", "worker-2", nil),
	)
	h, clk := health(t, "rook-ceph")
	h.Set(status(256, 0, "worker-0", "worker-1", "worker-2"))
	r := &fencegroupkube.Reconciler{
		Cluster: "rook-ceph", Health: h, Now: clk.Now,
		Machines: &fencegroupkube.Machines{Client: client, Kind: gvk, Namespace: "openshift-machine-api"},
		Budgets:  []fencegroupkube.BudgetWriter{&fencegroupkube.MachineDisruptionBudget{Client: client, Namespace: "openshift-machine-api"}},
	}
	res, err := r.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	assert.Equal(t, "add "+key+" to ocp-worker-0-x7k2p (runs osd.0, osd.1 of Ceph cluster rook-ceph)", res.Applied[0].String())
	assert.Equal(t, []string{"worker-2"}, res.Plan.UnmatchedHosts, "worker-2's machine is in another namespace")

	m := machineObj(gvk, "", "", "", nil)
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "openshift-machine-api", Name: "ocp-worker-0-x7k2p"}, m))
	assert.Equal(t, map[string]string{key: ""}, m.GetLabels())
	mdb := &unstructured.Unstructured{}
	mdb.SetGroupVersionKind(fencegroupkube.MachineDisruptionBudgetKind)
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "openshift-machine-api", Name: "fencegroup-rook-ceph"}, mdb))
	assert.Equal(t, map[string]any{
		"maxUnavailable": int64(1),
		"selector":       map[string]any{"matchExpressions": []any{map[string]any{"key": key, "operator": "Exists"}}},
	}, mdb.Object["spec"])
	assert.Equal(t, "MachineDisruptionBudget", mdb.GetKind())

	client.Take()
	_, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Empty(t, client.TakeWrites(), "nothing written when nothing changed")

	h.Set(status(200, 56, "worker-0", "worker-1", "worker-2"))
	_, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	require.NoError(t, client.Fake.Get(t.Context(), crclient.ObjectKey{Namespace: "openshift-machine-api", Name: "fencegroup-rook-ceph"}, mdb))
	v, _, _ := unstructured.NestedInt64(mdb.Object, "spec", "maxUnavailable")
	assert.Zero(t, v)
}

func TestMachinesErrors(t *testing.T) {
	gvk := fencegroupkube.ClusterAPIMachines
	client := fakeClient(nil, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": "m0", "namespace": "capi"}, "status": map[string]any{"nodeRef": map[string]any{"name": int64(3)}}}})
	_, err := (&fencegroupkube.Machines{Client: client, Kind: gvk}).List(t.Context())
	assert.EqualError(t, err, "fencegroupkube: Machine: list: no namespace given")
	_, err = (&fencegroupkube.Machines{Client: client, Kind: gvk, Namespace: "capi"}).List(t.Context())
	assert.EqualError(t, err, "fencegroupkube: Machine capi/m0: read status.nodeRef.name: not a string")
	err = (&fencegroupkube.Machines{Client: client, Kind: gvk, Namespace: "capi"}).SetLabel(t.Context(), "nope", key, true)
	assert.EqualError(t, err, `fencegroupkube: Machine capi/nope: label metadata.labels[fencegroup.rook.io/rook-ceph]: machines.cluster.x-k8s.io "nope" not found`)
	assert.True(t, apierrors.IsNotFound(err))
}

// Run reconciles at once and at every tick until its context ends.
func TestReconcilerRun(t *testing.T) {
	client := fakeClient(nil, fakeNode("worker-0", nil))
	h, clk := health(t, "rook-ceph")
	h.Set(status(8, 0, "worker-0"))
	r := &fencegroupkube.Reconciler{Cluster: "rook-ceph", Health: h, Now: clk.Now, Machines: &fencegroupkube.Nodes{Client: client}}
	assert.Error(t, r.Run(t.Context(), 0))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Run(ctx, time.Hour) }()
	require.Eventually(t, func() bool {
		n := &corev1.Node{}
		err := client.Fake.Get(t.Context(), crclient.ObjectKey{Name: "worker-0"}, n)
		_, ok := n.Labels[key]
		return err == nil && ok
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

// A list goes by pages of 500 objects, each read into a new list, and
// stops after 200 pages.
func TestNodesListPages(t *testing.T) {
	pages, endless := 0, false
	c := interceptor.NewClient(crfake.NewClientBuilder().Build(), interceptor.Funcs{
		List: func(_ context.Context, _ crclient.WithWatch, list crclient.ObjectList, opts ...crclient.ListOption) error {
			o := (&crclient.ListOptions{}).ApplyOptions(opts)
			assert.EqualValues(t, 500, o.Limit)
			nl := list.(*corev1.NodeList)
			assert.True(t, len(nl.Items) == 0 && nl.Continue == "", "a new list for each page")
			n := 0
			if o.Continue != "" {
				n, _ = strconv.Atoi(o.Continue)
			}
			assert.Equal(t, pages, n, "the continue token of the page before")
			pages++
			nl.Items = []corev1.Node{*fakeNode(fmt.Sprintf("n%d", n), nil)}
			if endless || n < 2 {
				nl.Continue = strconv.Itoa(n + 1)
			}
			return nil
		},
	})
	ms, err := (&fencegroupkube.Nodes{Client: c}).List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 3, pages)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"n0", "n1", "n2"}, names)

	pages, endless = 0, true
	_, err = (&fencegroupkube.Nodes{Client: c}).List(t.Context())
	assert.EqualError(t, err, "fencegroupkube: Node: list: more than 100000 objects")
	assert.Equal(t, 200, pages)

	_, err = (&fencegroupkube.Nodes{Client: c, Selector: "role in (a"}).List(t.Context())
	assert.ErrorContains(t, err, `fencegroupkube: Node: list: selector "role in (a": `)
}
