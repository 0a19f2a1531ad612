package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// secretConfig is the fence configuration of docs/library.md's "credentials in
// Secrets" section for node NODE: one template for the node's BMC (an
// ipmi_sim here) whose password comes from key password of the Secret
// bmc-NODE, a method that powers the node off (power management) and one
// that powers it on again (recovery).
const secretConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: fence-method-template-bmc-%[1]s
data:
  template.properties: |
    agent_name=fence_ipmilan
    ip=127.0.0.1
    ipport=%[2]d
    username=admin
    password_secret=bmc-%[1]s/password
    lanplus=1
    power_timeout=10
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: fence-method-bmc-off-%[1]s
data:
  method.properties: |
    template=bmc-%[1]s
    action=off
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: fence-method-bmc-on-%[1]s
data:
  method.properties: |
    template=bmc-%[1]s
    action=on
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: fence-config-%[1]s
data:
  config.properties: |
    power_management=bmc-off
    recovery=bmc-on
`

// The controller of docs/library.md, under the RBAC of deploy/rbac.yaml, with
// credentials in Secrets, on a real API server and a live IPMI simulator:
//
//   - the node is fenced with the password the Secret holds (the
//     ConfigMaps hold only its name);
//   - the BMC's password is rotated (ipmitool user set password) and the
//     Secret with it while the node is fenced: its recovery powers it on
//     with the new password;
//   - a node whose Secret is missing is not fenced, and its record and
//     events name the ConfigMap and the key; once the Secret is created, it
//     is fenced;
//   - /metrics counts the attempts;
//   - no password is in any log line, event, record or metric.
func TestIntegrationSecretBackedIPMI(t *testing.T) {
	const pw1, pw2 = "bmc-pass-1-c0ffee", "bmc-pass-2-decade"
	c, admin, ns, cfg := deployed(t)
	ctx := t.Context()
	sim := ipmisim.StartIPMISim(t, ipmisim.SimOptions{User: "admin", Password: pw1})
	ipmitool := func(pw string, args ...string) {
		t.Helper()
		a := append([]string{"-I", "lanplus", "-C", "3", "-H", ipmisim.Host, "-p", fmt.Sprint(sim.Port), "-U", sim.User, "-P", pw}, args...)
		out, err := exec.CommandContext(ctx, "ipmitool", a...).CombinedOutput()
		require.NoError(t, err, "ipmitool %v: %s", args, out)
	}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		cmd := c.KubectlCommand(ctx, t, append([]string{"--namespace", ns}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %v: %s", args, out)
		return string(out)
	}

	prefix := kubetest.UniqueName(t)
	victim, other := prefix+"-w1", prefix+"-w2"
	// docs/library.md's commands: the Secret, then the ConfigMaps that name it.
	kubectl("", "create", "secret", "generic", "bmc-"+victim, "--from-literal=password="+pw1)
	kubectl(fmt.Sprintf(secretConfig, victim, sim.Port), "apply", "-f", "-")
	kubectl(fmt.Sprintf(secretConfig, other, sim.Port), "apply", "-f", "-") // its Secret comes later
	createNode(t, admin, victim, corev1.ConditionTrue, time.Now().Add(-time.Hour))
	createNode(t, admin, other, corev1.ConditionTrue, time.Now().Add(-time.Hour))

	s := startRun(t, cfg, true,
		"--namespace="+ns, "--identity="+prefix+"-ctl",
		"--leader-elect=true", "--leader-election-name="+serviceAccount,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
		"--unhealthy-after=1s", "--interval=200ms", "--power-delay=1s", "--poll-interval=300ms", "--max-polls=200",
		"--max-retries=50", "--retry-backoff=200ms", "--job-timeout=30s", "--pods-timeout=5s",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
		"--log-level=debug", "--sync-timeout=20s", "--shutdown-timeout=5s")

	records := newRecords(t, c.Objects())
	waitFor := func(node, what string, d time.Duration, done func(nf *flow.NodeFence) bool) *flow.NodeFence {
		t.Helper()
		return records.wait(node, what, d, done)
	}
	power := func() fence.State {
		st, err := sim.Truth()
		require.NoError(t, err)
		return st
	}

	// The node stops answering: it is powered off with the Secret's
	// password.
	setReady(t, admin, victim, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	nf := waitFor(victim, "power fenced", 30*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone
	})
	assert.True(t, nf.PoweredOff)
	assert.Equal(t, fence.StateOff, power(), "the BMC confirmed off")
	// The conditions, as an admin waits on them.
	for _, c := range []string{"Fenced", "PodsReleased", "Succeeded"} {
		out := kubectl("", "wait", "--for=condition="+c, "nodefence/"+victim, "--timeout=20s")
		assert.Contains(t, out, "condition met", c)
	}

	// The BMC's password is rotated, and the Secret with it, while the node
	// is fenced (kubectl apply of the new Secret, as a rotation job does).
	ipmitool(pw1, "user", "set", "password", "2", pw2)
	rotated := kubectl("", "create", "secret", "generic", "bmc-"+victim, "--from-literal=password="+pw2, "--dry-run=client", "-o", "yaml")
	kubectl(rotated, "apply", "-f", "-")

	// The node is back: its recovery powers it on with the new password.
	setReady(t, admin, victim, corev1.ConditionTrue, time.Now())
	waitFor(victim, "recovered", 30*time.Second, func(nf *flow.NodeFence) bool { return nf.Closed() })
	assert.Equal(t, fence.StateOn, power(), "powered on again with the rotated password")

	// A node whose Secret is missing: nothing is switched, and its record
	// says which ConfigMap and key name the missing Secret.
	setReady(t, admin, other, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	nf = waitFor(other, "refused for its missing Secret", 30*time.Second, func(nf *flow.NodeFence) bool {
		return strings.Contains(nf.Message, "password_secret")
	})
	t.Logf("the record of the node without its Secret: %s", nf.Message)
	for _, want := range []string{"fence-method-template-bmc-" + other, "key password_secret", "bmc-" + other, "secret not found"} {
		assert.Contains(t, nf.Message, want)
	}
	assert.False(t, nf.PoweredOff)
	assert.Equal(t, fence.StateOn, power(), "nothing switched without the password")
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(eventList(t, c, other), func(e corev1.Event) bool {
			return strings.Contains(e.Message, "key password_secret")
		})
	}, 20*time.Second, 50*time.Millisecond, "an event names the key")

	// The Secret is created: the node is fenced.
	kubectl("", "create", "secret", "generic", "bmc-"+other, "--from-literal=password="+pw2)
	waitFor(other, "power fenced once its Secret exists", 60*time.Second, func(nf *flow.NodeFence) bool {
		return nf.Step == fence.StepPowerManagement && nf.Status == flow.StatusDone && nf.PoweredOff
	})
	assert.Equal(t, fence.StateOff, power())

	// curl /metrics: the attempts counted by driver, phase and outcome.
	m := get(t, "http://"+s.info.MetricsAddr.String()+"/metrics")
	require.Equal(t, http.StatusOK, m.code)
	for _, want := range []string{
		`fencekit_attempts_total{driver="ipmi",outcome="confirmed",phase="off"} 2`,
		`fencekit_attempts_total{driver="ipmi",outcome="confirmed",phase="on"} 1`,
	} {
		assert.Contains(t, m.body, want)
	}

	require.NoError(t, s.shutdown(t))
	logs := s.logs.String()
	assert.NotContains(t, logs, "forbidden", "the RBAC of deploy/rbac.yaml is enough")
	nfs, err := c.Dynamic().Resource(fencekube.NodeFenceResource).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	raw, err := nfs.MarshalJSON()
	require.NoError(t, err)
	var events strings.Builder
	for _, n := range []string{victim, other} {
		for _, e := range eventList(t, c, n) {
			events.WriteString(e.Message + "\n")
		}
	}
	for _, pw := range []string{pw1, pw2} {
		assert.NotContains(t, logs, pw, "a password in the log")
		assert.NotContains(t, string(raw), pw, "a password in a NodeFence")
		assert.NotContains(t, events.String(), pw, "a password in an event")
		assert.NotContains(t, m.body, pw, "a password in the metrics")
	}
}

// eventList returns the events on node.
func eventList(t *testing.T, c *kubetest.Cluster, node string) []corev1.Event {
	t.Helper()
	l, err := c.Client().CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node})
	require.NoError(t, err)
	return l.Items
}
