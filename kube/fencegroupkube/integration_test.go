package fencegroupkube_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencegroupkube"
)

// runLabel marks the Nodes of one test, which are cluster-scoped and shared
// with the other tests of the binary.
const runLabel = "fencegroupkube.fencekit.io/test-run"

// createNodes creates Nodes with the given names (and hostnames, when
// they differ), all marked with run.
func createNodes(t *testing.T, client kubernetes.Interface, run string, names []string, hostnames map[string]string) {
	t.Helper()
	for _, n := range names {
		h := n
		if hostnames[n] != "" {
			h = hostnames[n]
		}
		_, err := client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   n,
			Labels: map[string]string{runLabel: run, "kubernetes.io/hostname": h, "example.com/team": "storage"},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// group lists the nodes of the run that the budget's selector picks, as
// the API server evaluates it.
func group(t *testing.T, client kubernetes.Interface, run string) []string {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(fencegroupkube.GroupSelector("rook-ceph"))
	require.NoError(t, err)
	list, err := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: sel.String() + "," + runLabel + "=" + run})
	require.NoError(t, err)
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
		assert.Equal(t, "storage", n.Labels["example.com/team"], "another client's label kept")
	}
	return names
}

// The labels on real Nodes and the budget in a real PodDisruptionBudget:
// created, kept, closed when the PGs degrade, moved with the OSDs, nothing
// written when nothing changed.
func TestIntegrationNodesAndPDB(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	client := c.Client()
	run := kubetest.UniqueName(t)
	n := []string{kubetest.UniqueName(t), kubetest.UniqueName(t), kubetest.UniqueName(t), kubetest.UniqueName(t)}
	// n[2]'s hostname is a FQDN, which Rook's CRUSH map spells with dashes.
	createNodes(t, client, run, n, map[string]string{n[2]: n[2] + ".dc1.example.net"})
	crush := []string{n[0], n[1], n[2] + "-dc1-example-net"}

	h, clk := health(t, "rook-ceph")
	h.Set(status(256, 0, crush...))
	pdb := &fencegroupkube.PodDisruptionBudget{Client: c.Objects(), Namespace: ns}
	r := &fencegroupkube.Reconciler{
		Cluster: "rook-ceph", Health: h, Now: clk.Now,
		Machines: &fencegroupkube.Nodes{Client: c.Objects(), Selector: runLabel + "=" + run},
		Budgets:  []fencegroupkube.BudgetWriter{pdb},
	}
	res, err := r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Len(t, res.Applied, 3)
	assert.ElementsMatch(t, n[:3], group(t, client, run))
	got, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(1), *got.Spec.MaxUnavailable)
	assert.Equal(t, fencegroupkube.GroupSelector("rook-ceph"), got.Spec.Selector)
	assert.Equal(t, "all 256 PGs active+clean", got.Annotations[fencegroupkube.ReasonAnnotation])

	// Nothing changed: nothing written (the resourceVersions stay).
	versions := func() map[string]string {
		v := map[string]string{}
		for _, name := range n {
			node, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			require.NoError(t, err)
			v[name] = node.ResourceVersion
		}
		p, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
		require.NoError(t, err)
		v["pdb"] = p.ResourceVersion
		return v
	}
	before := versions()
	res, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Empty(t, res.Applied)
	assert.Equal(t, before, versions())

	// The PGs degrade: the budget closes.
	h.Set(status(170, 86, crush...))
	_, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	got, err = client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(0), *got.Spec.MaxUnavailable)
	assert.Equal(t, "86 of 256 PGs not active+clean (86 active+undersized+degraded) in Ceph cluster rook-ceph", got.Annotations[fencegroupkube.ReasonAnnotation])

	// The OSDs of n[1] move to n[3]; clean again.
	h.Set(status(256, 0, n[0], n[3], crush[2]))
	res, err = r.Reconcile(t.Context())
	require.NoError(t, err)
	assert.Len(t, res.Applied, 2)
	assert.ElementsMatch(t, []string{n[0], n[2], n[3]}, group(t, client, run))
	got, err = client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(1), *got.Spec.MaxUnavailable)
}

// capiMachinesCRD is the Machine CRD of the Cluster API release that
// scripts/kube-binaries.sh puts beside the Kubernetes binaries: v1beta2
// stored, v1beta1 served.
var capiMachinesCRD = filepath.Join(kubetest.AssetsDir(), "capi", "crds", "cluster.x-k8s.io_machines.yaml")

// machineKinds are the Machine flavours with their CRDs: OpenShift's, and
// Cluster API's real one in both its served versions.
var machineKinds = []struct {
	gvk schema.GroupVersionKind
	crd string
}{
	{fencegroupkube.OpenShiftMachines, "testdata/openshift-machine-crd.yaml"},
	{fencegroupkube.ClusterAPIMachinesV1Beta2, capiMachinesCRD},
	{fencegroupkube.ClusterAPIMachines, capiMachinesCRD},
}

// mdbs is the MachineDisruptionBudgets' resource, for the test's own reads.
var mdbs = fencegroupkube.MachineDisruptionBudgetKind.GroupVersion().WithResource("machinedisruptionbudgets")

// createMachine creates a Machine and writes its status.nodeRef through the
// status subresource, as the machine controller does.
func createMachine(t *testing.T, ri dynamic.ResourceInterface, gvk schema.GroupVersionKind, ns, name, node string) {
	t.Helper()
	obj := machineObj(gvk, ns, name, "", map[string]string{"example.com/team": "storage"})
	if gvk.Group == fencegroupkube.ClusterAPIMachines.Group {
		// What Cluster API's schema requires of a Machine.
		infra := map[string]any{"kind": "Metal3Machine", "name": name}
		if gvk.Version == "v1beta1" {
			infra["apiVersion"] = "infrastructure.cluster.x-k8s.io/v1beta1"
		} else {
			infra["apiGroup"] = "infrastructure.cluster.x-k8s.io"
		}
		obj.Object["spec"] = map[string]any{"clusterName": "c1", "bootstrap": map[string]any{"dataSecretName": name},
			"infrastructureRef": infra, "providerID": "metal3://" + ns + "/" + name}
	}
	_, err := ri.Create(t.Context(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	if node == "" {
		return
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"nodeRef": map[string]any{"kind": "Node", "name": node}}})
	require.NoError(t, err)
	_, err = ri.Patch(t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

// The labels on real Machines of both flavours and the budget in a real
// MachineDisruptionBudget, as the design has them.
func TestIntegrationMachinesAndMDB(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, "testdata/machinedisruptionbudget-crd.yaml")
	for _, m := range machineKinds {
		t.Run(m.gvk.Group+"/"+m.gvk.Version, func(t *testing.T) {
			c.InstallCRD(t, m.crd)
			ns := c.Namespace(t)
			ri := c.Dynamic().Resource(m.gvk.GroupVersion().WithResource("machines")).Namespace(ns)
			createMachine(t, ri, m.gvk, ns, "workers-x7k2p", "worker-0")
			createMachine(t, ri, m.gvk, ns, "workers-9dd4q", "worker-1")
			createMachine(t, ri, m.gvk, ns, "workers-b6m8z", "gpu-0")
			createMachine(t, ri, m.gvk, ns, "workers-provisioning", "")

			h, clk := health(t, "rook-ceph")
			h.Set(status(256, 0, "worker-0", "worker-1"))
			r := &fencegroupkube.Reconciler{
				Cluster: "rook-ceph", Health: h, Now: clk.Now,
				Machines: &fencegroupkube.Machines{Client: c.Objects(), Kind: m.gvk, Namespace: ns},
				Budgets:  []fencegroupkube.BudgetWriter{&fencegroupkube.MachineDisruptionBudget{Client: c.Objects(), Namespace: ns}},
			}
			res, err := r.Reconcile(t.Context())
			require.NoError(t, err)
			assert.Len(t, res.Applied, 2)

			// The budget's selector, as the API server evaluates it, picks
			// the machines running OSDs.
			mdb, err := c.Dynamic().Resource(mdbs).Namespace(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
			require.NoError(t, err)
			v, _, _ := unstructured.NestedInt64(mdb.Object, "spec", "maxUnavailable")
			assert.Equal(t, int64(1), v)
			selMap, _, _ := unstructured.NestedMap(mdb.Object, "spec", "selector")
			sel := &metav1.LabelSelector{}
			require.NoError(t, convert(selMap, sel))
			s, err := metav1.LabelSelectorAsSelector(sel)
			require.NoError(t, err)
			list, err := ri.List(t.Context(), metav1.ListOptions{LabelSelector: s.String()})
			require.NoError(t, err)
			var names []string
			for _, it := range list.Items {
				names = append(names, it.GetName())
				assert.Equal(t, "storage", it.GetLabels()["example.com/team"])
			}
			assert.ElementsMatch(t, []string{"workers-x7k2p", "workers-9dd4q"}, names)

			// Nothing changed: the budget is not written again.
			rv := mdb.GetResourceVersion()
			_, err = r.Reconcile(t.Context())
			require.NoError(t, err)
			mdb, err = c.Dynamic().Resource(mdbs).Namespace(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, rv, mdb.GetResourceVersion())

			// Degraded: maxUnavailable 0, the reason recorded.
			h.Set(status(250, 6, "worker-0", "worker-1"))
			_, err = r.Reconcile(t.Context())
			require.NoError(t, err)
			mdb, err = c.Dynamic().Resource(mdbs).Namespace(ns).Get(t.Context(), "fencegroup-rook-ceph", metav1.GetOptions{})
			require.NoError(t, err)
			v, _, _ = unstructured.NestedInt64(mdb.Object, "spec", "maxUnavailable")
			assert.Zero(t, v)
			assert.Equal(t, "6 of 256 PGs not active+clean (6 active+undersized+degraded) in Ceph cluster rook-ceph",
				mdb.GetAnnotations()[fencegroupkube.ReasonAnnotation])
		})
	}
}

// The adapter needs no more than: list and patch Nodes, and get, create and
// update PodDisruptionBudgets in its namespace. An identity with only that
// reconciles.
func TestIntegrationLeastPrivilege(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	admin := c.Client()
	run := kubetest.UniqueName(t)
	user := kubetest.UniqueName(t)
	n := []string{kubetest.UniqueName(t), kubetest.UniqueName(t)}
	createNodes(t, admin, run, n, nil)

	_, err := admin.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "fencegroup"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "create", "update"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fencegroup"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "fencegroup"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	cfg := c.Config()
	cfg.Impersonate.UserName = user
	client, err := crclient.New(cfg, crclient.Options{})
	require.NoError(t, err)
	h, clk := health(t, "rook-ceph")
	h.Set(status(256, 0, n[0]))
	r := &fencegroupkube.Reconciler{
		Cluster: "rook-ceph", Health: h, Now: clk.Now,
		Machines: &fencegroupkube.Nodes{Client: client, Selector: runLabel + "=" + run},
		Budgets:  []fencegroupkube.BudgetWriter{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: ns}},
	}
	// RBAC takes effect at once on a real API server, but allow for the
	// authorizer's cache to see the new bindings.
	var res fencegroupkube.Result
	require.Eventually(t, func() bool { res, err = r.Reconcile(t.Context()); return err == nil }, 10*time.Second, 100*time.Millisecond, "last error: %v", err)
	assert.Len(t, res.Applied, 1)
	assert.Equal(t, []string{n[0]}, group(t, admin, run))

	// Another namespace's budget is refused, and the error says where.
	r.Budgets = []fencegroupkube.BudgetWriter{&fencegroupkube.PodDisruptionBudget{Client: client, Namespace: "default"}}
	_, err = r.Reconcile(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fencegroupkube: PodDisruptionBudget default/fencegroup-rook-ceph: get: ")
	assert.Contains(t, err.Error(), "forbidden")
}
