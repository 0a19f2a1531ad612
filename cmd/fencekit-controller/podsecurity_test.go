package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/fencekit/fencekit/internal/kubetest"
)

// warnings keeps the API server's warnings (a Pod Security level's "would
// violate" among them), as kubectl prints them.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// deploy/ in a locked-down cluster, on the real API server's Pod Security
// admission: what `kubectl apply -k deploy/` creates (kustomize's build,
// into a namespace of the test's with deploy/namespace.yaml's labels, the
// cluster-scoped objects under the test's names, the CRDs left to the
// tests that install them) is admitted without a warning; a Pod of the
// Deployment's template is admitted under restricted (a server-side dry
// run: the admission runs, nothing is written); the agent's Pod is refused
// there, and in a baseline namespace, naming what it asks for; the agent's
// own namespace, labelled as deploy/agent.yaml labels it, admits it. The
// NetworkPolicies are accepted, select the controller's pods, and let in
// the ports the controller serves to others, but no other.
func TestPodSecurityAdmitsManifests(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	w := &warnings{}
	cfg := c.Config()
	cfg.WarningHandler = w
	admin, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(admin.Discovery()))
	unique := kubetest.UniqueName(t)

	dir, err := filepath.Abs(deployDir)
	require.NoError(t, err)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: m}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			continue
		case "Namespace":
			u.SetName(unique)
		case "ClusterRole", "ClusterRoleBinding":
			u.SetName(unique + "-" + u.GetName())
			if u.GetKind() == "ClusterRoleBinding" {
				ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
				require.NoError(t, unstructured.SetNestedField(u.Object, unique+"-"+ref, "roleRef", "name"))
			}
		}
		if u.GetNamespace() != "" {
			u.SetNamespace(unique)
		}
		if u.GetKind() == "Namespace" {
			objs = slices.Insert(objs, 0, u)
		} else {
			objs = append(objs, u)
		}
	}
	require.Equal(t, "Namespace", objs[0].GetKind())
	assert.Equal(t, "restricted", objs[0].GetLabels()["pod-security.kubernetes.io/enforce"])
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, gvk)
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := u.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		_, err = ri.Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
		if u.GetNamespace() == "" && u.GetKind() != "Namespace" {
			name := u.GetName()
			t.Cleanup(func() { _ = ri.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}) })
		}
	}
	assert.Empty(t, w.take(), "kubectl apply -k deploy/ prints no warning")

	// A Pod of a template, created in a dry run: what a ReplicaSet or a
	// DaemonSet would create, admitted or refused as it would be.
	var d appsv1.Deployment
	object(t, filepath.Join(deployDir, "deployment.yaml"), "Deployment", &d)
	var ds appsv1.DaemonSet
	object(t, filepath.Join(deployDir, "agent.yaml"), "DaemonSet", &ds)
	pod := func(ns string, tmpl corev1.PodTemplateSpec) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	require.NoError(t, pod(unique, d.Spec.Template), "the controller's pod under restricted")
	err = pod(unique, ds.Spec.Template)
	require.Error(t, err, "the agent's pod under restricted")
	for _, want := range []string{`violates PodSecurity "restricted:latest"`, "privileged", "hostNetwork", `restricted volume type "hostPath"`} {
		assert.Contains(t, err.Error(), want)
	}
	ds.Namespace = unique
	_, err = admin.AppsV1().DaemonSets(unique).Create(ctx, &ds, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "a workload is admitted, with a warning")
	assert.Contains(t, strings.Join(w.take(), "\n"), `would violate PodSecurity "restricted:latest"`, "the warning label holds")

	// The agent's namespace: privileged, the level it needs (baseline
	// refuses it).
	var agentNS corev1.Namespace
	object(t, filepath.Join(deployDir, "agent.yaml"), "Namespace", &agentNS)
	assert.Equal(t, "privileged", agentNS.Labels["pod-security.kubernetes.io/enforce"])
	for level, admitted := range map[string]bool{"privileged": true, "baseline": false} {
		ns := agentNS.DeepCopy()
		ns.Name = unique + "-agent-" + level
		ns.Labels["pod-security.kubernetes.io/enforce"] = level
		_, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		require.NoError(t, err)
		err = pod(ns.Name, ds.Spec.Template)
		if admitted {
			assert.NoError(t, err, "the agent's pod in its namespace")
		} else {
			require.Error(t, err, "the agent's pod under %s", level)
			assert.Contains(t, err.Error(), `violates PodSecurity "baseline:latest"`)
		}
	}

	// The NetworkPolicies, as the API server holds them.
	nps, err := admin.NetworkingV1().NetworkPolicies(unique).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nps.Items, 2)
	podLabels := labels.Set(d.Spec.Template.Labels)
	open := map[string]bool{}
	for _, np := range nps.Items {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(podLabels), "%s selects the controller's pods", np.Name)
		assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes, "%s: egress open (the devices are anywhere)", np.Name)
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				require.NotNil(t, p.Port)
				key := string(*p.Protocol) + "/" + p.Port.String()
				open[key] = true
				if p.Port.IntValue() == 8080 {
					require.Len(t, rule.From, 1)
					assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "monitoring"}, rule.From[0].NamespaceSelector.MatchLabels,
						"the metrics from the monitoring namespace only")
				} else {
					assert.Empty(t, rule.From, "%s from anywhere", key)
				}
			}
		}
	}
	// What the controller serves to others: the Deployment's ports but the
	// kubelet's probes, and the webhook's target port.
	want := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		if p.Name != "probes" {
			want[fmt.Sprintf("%s/%d", p.Protocol, p.ContainerPort)] = true
		}
	}
	var svc corev1.Service
	object(t, filepath.Join(deployDir, "config-webhook.yaml"), "Service", &svc)
	want["TCP/"+svc.Spec.Ports[0].TargetPort.String()] = true
	assert.Equal(t, want, open)
}
