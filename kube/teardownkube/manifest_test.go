package teardownkube_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/teardown"
)

const stopperManifest = "../../deploy/teardown/kubelet-stopper.yaml"

// The kubelet-stopping DaemonSet the shutdown-kubelet step relies on: it
// selects the nodes the step labels, tolerates their taints, stops the
// kubelet in the host's namespaces, and the API server accepts it
// (kubectl apply --dry-run=server).
func TestKubeletStopperManifest(t *testing.T) {
	raw, err := os.ReadFile(stopperManifest)
	require.NoError(t, err)
	var ds appsv1.DaemonSet
	require.NoError(t, yaml.UnmarshalStrict(raw, &ds))
	spec := ds.Spec.Template.Spec
	assert.Equal(t, map[string]string{teardown.DecommissionLabel: teardown.DecommissionValue}, spec.NodeSelector)
	require.Len(t, spec.Tolerations, 1)
	assert.Equal(t, "Exists", string(spec.Tolerations[0].Operator))
	assert.Empty(t, spec.Tolerations[0].Key, "every taint")
	assert.True(t, spec.HostPID)
	require.Len(t, spec.Containers, 1)
	assert.Contains(t, spec.Containers[0].Command, "systemctl disable kubelet && systemctl stop kubelet; sleep infinity")

	c := kubetest.Shared(t)
	kubetest.Kubectl(t)
	out, err := c.KubectlCommand(t.Context(), t, "apply", "--dry-run=server", "-f", stopperManifest).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "daemonset.apps/teardown-kubelet-stopper created (server dry run)\n", string(out))
}
