package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/policy"
)

// Pausing and excluding, on the real API server with deploy/pause.yaml's
// ValidatingAdmissionPolicy: a pause request without a reason, or whose
// paused-by annotation is not its writer's user name, is refused by the
// API server; one that is accepted holds the fencing of a node that stops
// answering (its record and a FenceRefused event name who and why, and
// nothing is switched); a node labelled fencekit.io/exclude-from-fencing
// is refused as excluded; once the pause is deleted, the first node is
// fenced, the excluded one still is not.
func TestIntegrationPause(t *testing.T) {
	s := newScene(t, 4, 2, "action=off\n")
	c, admin, ns, ctx := s.c, s.admin, s.ns, t.Context()
	applyPausePolicy(t, admin, ns)
	victim, excluded := s.nodes[0], s.nodes[1]
	node, err := admin.CoreV1().Nodes().Get(ctx, excluded, metav1.GetOptions{})
	require.NoError(t, err)
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[policy.ExcludeLabel] = "true"
	_, err = admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	// alice asks for a pause; the API server checks the request.
	aliceCfg := c.Config()
	aliceCfg.Impersonate.UserName, aliceCfg.Impersonate.Groups = "alice", []string{"system:masters"}
	alice, err := kubernetes.NewForConfig(aliceCfg)
	require.NoError(t, err)
	pause := func(reason, by string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fencekube.PausePrefix + "upgrade",
			Annotations: map[string]string{fencekube.PausedByAnnotation: by}}}
		if reason != "" {
			cm.Data = map[string]string{fencekube.PauseReasonKey: reason}
		}
		_, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	require.Eventually(t, func() bool {
		err := pause("", "alice")
		if err == nil { // the policy is not in force yet
			require.NoError(t, alice.CoreV1().ConfigMaps(ns).Delete(ctx, fencekube.PausePrefix+"upgrade", metav1.DeleteOptions{}))
		}
		return err != nil && strings.Contains(err.Error(), "needs data.reason")
	}, 20*time.Second, 100*time.Millisecond, "the policy in force refuses a pause without a reason")
	err = pause("rack 3 switch upgrade", "bob")
	require.Error(t, err, "a pause in another's name")
	assert.Contains(t, err.Error(), "set to your user name, alice")
	require.NoError(t, pause("rack 3 switch upgrade", "alice"))

	run := s.start("--policy-file="+writePolicy(t, "maxInFlight: 2\n"), "--metrics-bind-address=127.0.0.1:0")
	s.down(victim, excluded)
	waitFor := s.record
	nf := waitFor(victim, "held by the pause", 20*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by pause")
	})
	assert.Contains(t, nf.Message, "fencing paused by alice (request upgrade, since ")
	assert.Contains(t, nf.Message, "rack 3 switch upgrade")
	nf = waitFor(excluded, "excluded", 20*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Status == flow.StatusNew && strings.Contains(nf.Message, "refused by excluded")
	})
	assert.Contains(t, nf.Message, "carries the label fencekit.io/exclude-from-fencing=true")
	require.Eventually(t, func() bool { return eventCounts(t, admin, victim)["FenceRefused"] > 0 }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)
	assert.Equal(t, fence.StateOn, s.pdu.Truth("1"), "nothing switched during the pause")
	m := get(t, "http://"+run.info.MetricsAddr.String()+"/metrics")
	assert.Contains(t, m.body, `fencekit_gate_refusals_total{gate="pause"}`)
	assert.Contains(t, m.body, `fencekit_gate_refusals_total{gate="excluded"}`)

	// The pause ends: the node, still down, is fenced; the excluded one
	// is not.
	require.NoError(t, alice.CoreV1().ConfigMaps(ns).Delete(ctx, fencekube.PausePrefix+"upgrade", metav1.DeleteOptions{}))
	waitFor(victim, "fenced", 20*time.Second, func(nf *flow.NodeFence) bool { return !nf.FencedAt.IsZero() })
	assert.Equal(t, fence.StateOff, s.pdu.Truth("1"))
	time.Sleep(time.Second)
	assert.Equal(t, fence.StateOn, s.pdu.Truth("2"), "the excluded node is never switched")
	require.NoError(t, run.shutdown(t))
	assert.Contains(t, run.logs.String(), "refused by excluded: node "+excluded)
}

// applyPausePolicy creates deploy/pause.yaml's ValidatingAdmissionPolicy
// and its binding, bound to namespace ns (under names of the test's).
func applyPausePolicy(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	var vap admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	path := filepath.Join(deployDir, "pause.yaml")
	object(t, path, "ValidatingAdmissionPolicy", &vap)
	object(t, path, "ValidatingAdmissionPolicyBinding", &bind)
	unique := kubetest.UniqueName(t)
	vap.Name, bind.Name, bind.Spec.PolicyName = unique, unique, unique
	bind.Spec.MatchResources.NamespaceSelector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": ns}
	ctx := context.WithoutCancel(t.Context())
	_, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &vap, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, unique, metav1.DeleteOptions{})
	})
	_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &bind, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, unique, metav1.DeleteOptions{})
	})
}

// --detect-only on the real API server: a node that stops answering gets
// its record, which says that its power management would start now, and a
// FenceRefused event; nothing is switched, no taint is put on the node.
func TestIntegrationDetectOnly(t *testing.T) {
	s := newScene(t, 3, 1, "")
	victim := s.nodes[0]
	run := s.start("--detect-only")
	s.down(victim)
	nf := s.record(victim, "refused", 20*time.Second, func(nf *flow.NodeFence) bool { return strings.Contains(nf.Message, "refused by detect-only") })
	assert.Contains(t, nf.Message, "power_management of node "+victim+" would start now; no device is switched and no pod released")
	require.Eventually(t, func() bool { return eventCounts(t, s.admin, victim)["FenceRefused"] > 0 }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second)
	assert.Equal(t, fence.StateOn, s.pdu.Truth("1"))
	assert.Empty(t, s.pdu.History("1")[1:], "never switched")
	n, err := s.admin.CoreV1().Nodes().Get(t.Context(), victim, metav1.GetOptions{})
	require.NoError(t, err)
	for _, taint := range n.Spec.Taints {
		assert.NotEqual(t, corev1.TaintNodeOutOfService, taint.Key, "no out-of-service taint")
	}
	require.NoError(t, run.shutdown(t))
	assert.Contains(t, run.logs.String(), "detect-only mode: no device is switched")
}
