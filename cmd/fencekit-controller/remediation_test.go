package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/kube/nodelease"
)

var (
	templateGVR = v1alpha1.GroupVersion.WithResource(v1alpha1.NodeFenceRemediationTemplatePlural)
	machineGVR  = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
)

// nhcLease takes node's lease as Node Health Check does before it creates
// a remediation (medik8s's common lease package: node-NAME in
// medik8s-leases, its holder NodeHealthCheck-NAME, here for an hour).
func nhcLease(t *testing.T, admin kubernetes.Interface, node, holder string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	leases := admin.CoordinationV1().Leases(nodelease.DefaultNamespace)
	_, err := leases.Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: nodelease.Name(node)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: new(int32(3600)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: new(int32(0))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = leases.Delete(context.Background(), nodelease.Name(node), metav1.DeleteOptions{}) })
}

// nhcCreate creates the remediation of node from template as Node Health
// Check does (its template-to-CR contract, node-healthcheck-operator's
// controllers/resources/manager.go, generateRemediationCR), and returns its
// name: the kind is the template's without its Template suffix, in the
// template's namespace and API version, named after the node (or, for a
// template with the annotation
// remediation.medik8s.io/multiple-templates-support, a name generated from
// the node's), spec a copy of the template's spec.template.spec, the
// annotations remediation.medik8s.io/node-name and
// remediation.medik8s.io/template-name, the label
// app.kubernetes.io/part-of=node-healthcheck-controller, and the
// NodeHealthCheck owner as its owner (not its controller). It runs with the
// rules of deploy/remediation-rbac.yaml.
func nhcCreate(t *testing.T, dyn dynamic.Interface, ns, template, node string, owner *unstructured.Unstructured) string {
	t.Helper()
	tpl, err := dyn.Resource(templateGVR).Namespace(ns).Get(t.Context(), template, metav1.GetOptions{})
	require.NoError(t, err)
	spec, found, err := unstructured.NestedMap(tpl.Object, "spec", "template", "spec")
	require.NoError(t, err)
	if !found {
		spec = map[string]any{}
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	cr.SetAPIVersion(tpl.GetAPIVersion())
	cr.SetKind(strings.TrimSuffix(tpl.GetKind(), "Template"))
	cr.SetNamespace(tpl.GetNamespace())
	if _, multi := tpl.GetAnnotations()[v1alpha1.MultipleTemplatesAnnotation]; multi {
		cr.SetGenerateName(node + "-")
	} else {
		cr.SetName(node)
	}
	cr.SetAnnotations(map[string]string{"remediation.medik8s.io/node-name": node, "remediation.medik8s.io/template-name": template})
	cr.SetLabels(map[string]string{"app.kubernetes.io/part-of": "node-healthcheck-controller"})
	cr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
		Name: owner.GetName(), UID: owner.GetUID(), Controller: new(false)}})
	created, err := dyn.Resource(fencekube.RemediationResource).Namespace(ns).Create(t.Context(), cr, metav1.CreateOptions{})
	require.NoError(t, err)
	return created.GetName()
}

// healthChecker returns a dynamic client that acts as a health checker's
// service account, with deploy/remediation-rbac.yaml's ClusterRole for it
// bound to it (the aggregation controller that would add it to the
// checker's own role does not run here).
func healthChecker(t *testing.T, c *kubetest.Cluster, ns, role string) dynamic.Interface {
	t.Helper()
	var cr rbacv1.ClusterRole
	for _, u := range objects(t, filepath.Join(deployDir, "remediation-rbac.yaml")) {
		if u.GetName() == role {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cr))
		}
	}
	require.Equal(t, role, cr.Name)
	unique := kubetest.UniqueName(t)
	cr.Name = unique
	ctx := t.Context()
	admin := c.Client()
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: role}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: unique},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: unique},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: role, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := c.Config()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":" + role
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(templateGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the checker's binding holds")
	return dyn
}

// The controller with --remediation, as Node Health Check and Cluster
// API's MachineHealthCheck use a remediator, on a real API server:
//
//   - a node not ready for an hour with no remediation is not fenced: the
//     controller's own timer is off;
//   - a remediation created as Node Health Check creates it has the node
//     fenced (its outlet confirmed off, its pods released): the
//     remediation's conditions say so (kubectl wait
//     --for=condition=Succeeded) and its finalizer holds it; the node back,
//     it is recovered once, and the remediation, deleted by the checker,
//     goes once the recovery is over;
//   - a remediation Node Health Check times out fences nothing more and
//     says so (Succeeded False, RemediationInterruptedByNHC);
//   - a remediation Cluster API creates, named after a Machine that owns
//     it, has the Machine's node fenced.
func TestIntegrationRemediation(t *testing.T) {
	c := kubetest.Shared(t)
	c.InstallCRD(t, crdPath)
	for _, f := range []string{"fencekit.io_nodefenceremediations.yaml", "fencekit.io_nodefenceremediationtemplates.yaml"} {
		c.InstallCRD(t, filepath.Join(deployDir, "crd", f))
	}
	c.InstallCRD(t, filepath.Join("testdata", "machine-crd.yaml"))
	c.InstallCRD(t, filepath.Join("testdata", "nodehealthcheck-crd.yaml"))
	ctx := t.Context()
	admin := c.Client()
	ns := c.Namespace(t)
	cfg := applyRBAC(t, c, ns, nil)
	nhc := healthChecker(t, c, ns, "fencekit-ext-remediation")

	prefix := kubetest.UniqueName(t)
	w1, w2, w3, w4 := prefix+"-w1", prefix+"-w2", prefix+"-w3", prefix+"-w4"
	pdus := map[string]*fake.Device{}
	for _, n := range []string{w1, w3, w4} {
		pdus[n] = fake.NewNamed(n+"-pdu", fake.Options{Plugs: []string{"1"}})
		t.Cleanup(func() { fake.Forget(n + "-pdu") })
		createConfigMap(t, admin, ns, "fence-method-template-pdu-"+n, "template.properties",
			"driver=fake\naddress=fake://"+n+"-pdu\nplug=1\nstonith_status_sleep=0\npower_timeout=2\n")
		for _, a := range []string{"off", "on"} {
			createConfigMap(t, admin, ns, "fence-method-pdu-"+a+"-"+n, "method.properties", "template=pdu-"+n+"\naction="+a+"\n")
		}
		createConfigMap(t, admin, ns, "fence-config-"+n, "config.properties", "power_management=pdu-off\nrecovery=pdu-on\n")
	}
	// w2 has no fence configuration: its fencing cannot start.
	for _, n := range []string{w1, w2, w3} {
		createNode(t, admin, n, corev1.ConditionTrue, time.Now().Add(-time.Hour))
		t.Cleanup(func() { removeNodeAndFence(t, c, n) })
	}
	createNode(t, admin, w4, corev1.ConditionFalse, time.Now().Add(-time.Hour))
	t.Cleanup(func() { removeNodeAndFence(t, c, w4) })

	// Two templates: fencekit, and fencekit-multi, which tells Node Health
	// Check that it may be one of several of its kind for a node (its
	// remediations get generated names).
	for name, ann := range map[string]map[string]any{
		"fencekit": nil, "fencekit-multi": {v1alpha1.MultipleTemplatesAnnotation: "true"},
	} {
		tpl := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.NodeFenceRemediationTemplateKind,
			"metadata": map[string]any{"name": name, "namespace": ns, "annotations": ann},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
		}}
		_, err := c.Dynamic().Resource(templateGVR).Namespace(ns).Create(ctx, tpl, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// The NodeHealthCheck that owns the remediations it creates.
	nhcGVR := schema.GroupVersionResource{Group: "remediation.medik8s.io", Version: "v1alpha1", Resource: "nodehealthchecks"}
	owner, err := c.Dynamic().Resource(nhcGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",
		"metadata": map[string]any{"name": prefix},
		"spec": map[string]any{"remediationTemplate": map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.NodeFenceRemediationTemplateKind,
			"name": "fencekit", "namespace": ns}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Dynamic().Resource(nhcGVR).Delete(context.WithoutCancel(ctx), prefix, metav1.DeleteOptions{})
	})

	// Four nodes, three of them down by the end: the storm guard's bound
	// is raised (health checkers have bounds of their own, such as Node
	// Health Check's minHealthy).
	policyFile := writePolicy(t, "stormGuard:\n  maxUnresponsivePercent: 90\nmaxInFlight: 3\n")
	s := startRun(t, cfg, true,
		"--namespace="+ns, "--identity="+prefix+"-ctl", "--remediation", "--remediation-namespace="+ns, "--policy-file="+policyFile,
		"--leader-elect=true", "--leader-election-name="+serviceAccount,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
		"--unhealthy-after=1s", "--interval=200ms", "--power-delay=1s", "--poll-interval=300ms", "--max-polls=200",
		"--retry-backoff=200ms", "--job-timeout=20s", "--pods-timeout=5s",
		"--log-level=debug", "--sync-timeout=20s", "--shutdown-timeout=5s")

	rems := c.Dynamic().Resource(fencekube.RemediationResource).Namespace(ns)
	remediation := func(name string) *v1alpha1.NodeFenceRemediation {
		u, err := rems.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		var r v1alpha1.NodeFenceRemediation
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r))
		return &r
	}
	record := newRecords(t, c.Objects()).get
	condition := func(r *v1alpha1.NodeFenceRemediation, typ string) string {
		if c := meta.FindStatusCondition(r.Status.Conditions, typ); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}

	// w4 has been not ready for an hour: nothing asks for its fencing.
	time.Sleep(1500 * time.Millisecond) // a few passes of 200 ms
	assert.Nil(t, record(w4), "the Ready timer is off under --remediation")
	assert.Equal(t, fence.StateOn, pdus[w4].Truth("1"))

	// Node Health Check finds w1 unhealthy, takes its node lease (as
	// NodeHealthCheck-NAME) and creates its remediation, which shares the
	// lease: fencekit neither takes it over nor deletes it.
	setReady(t, admin, w1, corev1.ConditionFalse, time.Now())
	nhcLease(t, admin, w1, "NodeHealthCheck-"+owner.GetName())
	require.Equal(t, w1, nhcCreate(t, nhc, ns, "fencekit", w1, owner))
	require.Eventually(t, func() bool {
		r := remediation(w1)
		return r != nil && condition(r, v1alpha1.ConditionSucceeded) == "True/"+v1alpha1.ReasonRemediationSucceeded
	}, 30*time.Second, 20*time.Millisecond, "w1's remediation succeeded: %+v", remediation(w1))
	r := remediation(w1)
	assert.Equal(t, w1, r.Status.NodeName)
	assert.Equal(t, "True/"+v1alpha1.ReasonPoweredOff, condition(r, v1alpha1.ConditionFenced))
	assert.Equal(t, "True/"+v1alpha1.ReasonPower, condition(r, v1alpha1.ConditionPodsReleased))
	assert.Contains(t, r.Finalizers, v1alpha1.RemediationFinalizer)
	assert.NotNil(t, r.Status.LastUpdateTime)
	assert.Equal(t, fence.StateOff, pdus[w1].Truth("1"), "the outlet confirmed off")
	l, err := admin.CoordinationV1().Leases(nodelease.DefaultNamespace).Get(ctx, nodelease.Name(w1), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "NodeHealthCheck-"+owner.GetName(), *l.Spec.HolderIdentity, "Node Health Check's lease, shared")
	cmd := c.KubectlCommand(ctx, t, "--namespace", ns, "wait", "--for=condition=Succeeded", "nodefenceremediation/"+w1, "--timeout=10s")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "condition met")
	// Events on the remediation, where a person using Node Health Check
	// looks, not only on the Node.
	require.Eventually(t, func() bool {
		evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=" + v1alpha1.NodeFenceRemediationKind + ",involvedObject.name=" + w1})
		return err == nil && slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == v1alpha1.ReasonRemediationSucceeded && e.Type == corev1.EventTypeNormal
		})
	}, 10*time.Second, 50*time.Millisecond, "a %s event on the remediation", v1alpha1.ReasonRemediationSucceeded)

	// w1 is back: recovered once, not fenced again while its remediation
	// stays; the checker then deletes it, and it goes.
	setReady(t, admin, w1, corev1.ConditionTrue, time.Now())
	require.Eventually(t, func() bool { nf := record(w1); return nf != nil && nf.Closed() }, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		return condition(remediation(w1), v1alpha1.ConditionProcessing) == "False/"+v1alpha1.ReasonRecovered
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(time.Second)
	assert.Equal(t, []fence.State{fence.StateOn, fence.StateOff, fence.StateOn}, pdus[w1].History("1"), "fenced once, recovered once")
	require.NoError(t, nhc.Resource(fencekube.RemediationResource).Namespace(ns).Delete(ctx, w1, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return remediation(w1) == nil }, 10*time.Second, 20*time.Millisecond, "the finalizer goes")

	// w2 cannot be fenced (no configuration); Node Health Check times its
	// remediation (from the template that allows several, so with a
	// generated name) out and escalates.
	setReady(t, admin, w2, corev1.ConditionFalse, time.Now())
	w2rem := nhcCreate(t, nhc, ns, "fencekit-multi", w2, owner)
	require.NotEqual(t, w2, w2rem)
	require.Eventually(t, func() bool {
		r := remediation(w2rem)
		return r != nil && slices.Contains(r.Finalizers, v1alpha1.RemediationFinalizer) &&
			strings.HasPrefix(condition(r, v1alpha1.ConditionProcessing), "True/")
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, w2, remediation(w2rem).Status.NodeName, "the node of the annotation")
	// Retrying is not a verdict: Succeeded is not False before the end
	// (Node Health Check and Cluster API read False as the remediation's
	// end and would escalate at once).
	assert.False(t, strings.HasPrefix(condition(remediation(w2rem), v1alpha1.ConditionSucceeded), "False/"),
		"Succeeded while the fencing is retried: %q", condition(remediation(w2rem), v1alpha1.ConditionSucceeded))
	_, err = nhc.Resource(fencekube.RemediationResource).Namespace(ns).Patch(ctx, w2rem, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"remediation.medik8s.io/nhc-timed-out":"`+time.Now().UTC().Format(time.RFC3339)+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r := remediation(w2rem)
		return condition(r, v1alpha1.ConditionSucceeded) == "False/"+v1alpha1.ReasonInterruptedByNHC &&
			condition(r, v1alpha1.ConditionProcessing) == "False/"+v1alpha1.ReasonInterruptedByNHC
	}, 20*time.Second, 20*time.Millisecond, "%+v", remediation(w2rem))

	// Cluster API: a Machine owns the remediation named after it; its
	// node is the Machine's status.nodeRef.
	capi := healthChecker(t, c, ns, "fencekit-capi-remediation")
	machine := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": prefix + "-m3", "namespace": ns},
		"spec":     map[string]any{"clusterName": "c1"},
	}}
	m, err := c.Dynamic().Resource(machineGVR).Namespace(ns).Create(ctx, machine, metav1.CreateOptions{})
	require.NoError(t, err)
	m.Object["status"] = map[string]any{"nodeRef": map[string]any{"kind": "Node", "name": w3}}
	_, err = c.Dynamic().Resource(machineGVR).Namespace(ns).UpdateStatus(ctx, m, metav1.UpdateOptions{})
	require.NoError(t, err)
	setReady(t, admin, w3, corev1.ConditionFalse, time.Now())
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	cr.SetAPIVersion(v1alpha1.GroupVersion.String())
	cr.SetKind(v1alpha1.NodeFenceRemediationKind)
	cr.SetName(m.GetName())
	cr.SetNamespace(ns)
	cr.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "c1"})
	cr.SetAnnotations(map[string]string{"cluster.x-k8s.io/cloned-from-name": "fencekit",
		"cluster.x-k8s.io/cloned-from-groupkind": v1alpha1.NodeFenceRemediationTemplateKind + "." + v1alpha1.Group})
	cr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Machine", Name: m.GetName(), UID: m.GetUID()}})
	_, err = capi.Resource(fencekube.RemediationResource).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r := remediation(m.GetName())
		return r != nil && r.Status.NodeName == w3 && condition(r, v1alpha1.ConditionSucceeded) == "True/"+v1alpha1.ReasonRemediationSucceeded
	}, 30*time.Second, 20*time.Millisecond, "the Machine's node fenced: %+v", remediation(m.GetName()))
	assert.Equal(t, fence.StateOff, pdus[w3].Truth("1"))

	// The Machine goes first, then the remediation: its node is the one
	// its status recorded, the fencing is abandoned and undone (the node
	// is not back), and the finalizer goes.
	require.NoError(t, c.Dynamic().Resource(machineGVR).Namespace(ns).Delete(ctx, m.GetName(), metav1.DeleteOptions{}))
	require.NoError(t, capi.Resource(fencekube.RemediationResource).Namespace(ns).Delete(ctx, m.GetName(), metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return remediation(m.GetName()) == nil }, 30*time.Second, 50*time.Millisecond,
		"the remediation of a deleted Machine goes: %+v", remediation(m.GetName()))
	assert.Nil(t, record(w3), "its fencing abandoned and undone")

	assert.Nil(t, record(w4), "still nothing asks for w4")
	require.NoError(t, s.shutdown(t))
	assert.NotContains(t, s.logs.String(), "forbidden", "the RBAC of deploy/rbac.yaml is enough")
}
