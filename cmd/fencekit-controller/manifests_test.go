package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/kube/fencekube"
	"github.com/fencekit/fencekit/policy"
)

// deployDir is the manifests' directory.
const deployDir = "../../deploy"

// docs reads every YAML document of a file, as JSON.
func docs(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, path)
		if len(bytes.TrimSpace(stripComments(d))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(d)
		require.NoError(t, err, "%s: %s", path, d)
		out = append(out, j)
	}
}

// objects reads every object of a file.
func objects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs(t, path) {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(d), path)
		out = append(out, u)
	}
	return out
}

// object decodes the only object of kind in path into v.
func object(t *testing.T, path, kind string, v any) {
	t.Helper()
	n := 0
	for _, d := range docs(t, path) {
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(d))
		if u.GetKind() == kind {
			require.NoError(t, yaml.UnmarshalStrict(d, v), "%s: %s", path, kind)
			n++
		}
	}
	require.Equal(t, 1, n, "%s: objects of kind %s", path, kind)
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for l := range strings.SplitSeq(string(d), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

// Every manifest parses, and holds the objects the kustomization lists.
func TestManifestsParse(t *testing.T) {
	kinds := map[string][]string{}
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	require.NoError(t, err)
	crd, err := filepath.Glob(filepath.Join(deployDir, "crd", "*.yaml"))
	require.NoError(t, err)
	for _, f := range append(files, crd...) {
		for _, u := range objects(t, f) {
			if filepath.Base(f) == "kustomization.yaml" {
				assert.Equal(t, "Kustomization", u.GetKind())
				continue
			}
			assert.NotEmpty(t, u.GetAPIVersion(), f)
			assert.NotEmpty(t, u.GetName(), f)
			kinds[filepath.Base(f)] = append(kinds[filepath.Base(f)], u.GetKind()+"/"+u.GetName())
		}
	}
	assert.Equal(t, []string{"Namespace/fencekit-system"}, kinds["namespace.yaml"])
	assert.Equal(t, []string{"ServiceAccount/fencekit-controller", "ClusterRole/fencekit-controller",
		"ClusterRoleBinding/fencekit-controller", "Role/fencekit-controller", "RoleBinding/fencekit-controller"}, kinds["rbac.yaml"])
	assert.Equal(t, []string{"Deployment/fencekit-controller"}, kinds["deployment.yaml"])
	assert.Equal(t, []string{"ConfigMap/fencekit-policy"}, kinds["policy.yaml"])
	assert.Equal(t, []string{"ValidatingAdmissionPolicy/fencekit-pause-requests", "ValidatingAdmissionPolicyBinding/fencekit-pause-requests",
		"Role/fencekit-pause"}, kinds["pause.yaml"])
	assert.Equal(t, []string{"ClusterRole/fencekit-ext-remediation", "ClusterRole/fencekit-capi-remediation"}, kinds["remediation-rbac.yaml"])
	assert.Equal(t, []string{"ValidatingAdmissionPolicy/fencekit-confirmations", "ValidatingAdmissionPolicyBinding/fencekit-confirmations",
		"ClusterRole/fencekit-confirm", "ClusterRole/fencekit-view"}, kinds["confirm.yaml"])
	assert.Equal(t, []string{"ClusterRole/fencekit-metrics-reader", "ClusterRole/fencekit-profiles-reader"}, kinds["metrics-reader.yaml"])
	assert.Equal(t, []string{"Service/fencekit-controller-webhook", "Issuer/fencekit-selfsigned", "Certificate/fencekit-controller-webhook",
		"ValidatingWebhookConfiguration/fencekit-fence-configmaps"}, kinds["config-webhook.yaml"])
	assert.Equal(t, []string{"Namespace/medik8s-leases", "Role/fencekit-node-leases", "RoleBinding/fencekit-node-leases"}, kinds["node-lease.yaml"])
	assert.Equal(t, []string{"CustomResourceDefinition/nodefences.fencekit.io"}, kinds["fencekit.io_nodefences.yaml"])
	assert.Len(t, kinds["example-fence-config.yaml"], 7)
	assert.Equal(t, []string{"NetworkPolicy/fencekit-default-deny", "NetworkPolicy/fencekit-controller"}, kinds["network-policy.yaml"])
	assert.Equal(t, []string{"Namespace/fencekit-agent", "ServiceAccount/fencekit-agent", "Role/fencekit-agent", "RoleBinding/fencekit-agent",
		"ValidatingAdmissionPolicy/fencekit-agent-leases", "ValidatingAdmissionPolicyBinding/fencekit-agent-leases",
		"ClusterRole/fencekit-agent-reviews", "ClusterRoleBinding/fencekit-agent-reviews", "Role/fencekit-controller-agents", "RoleBinding/fencekit-controller-agents", "DaemonSet/fencekit-agent"}, kinds["agent.yaml"])
}

// kustomize refuses a resource outside the kustomization's directory, so
// deploy/crd holds a copy of the CRD: it must stay the same.
func TestCRDCopyIsTheOriginal(t *testing.T) {
	orig, err := os.ReadFile("../../config/crd/fencekit.io_nodefences.yaml")
	require.NoError(t, err)
	copied, err := os.ReadFile(filepath.Join(deployDir, "crd", "fencekit.io_nodefences.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(orig), string(copied),
		"deploy/crd/fencekit.io_nodefences.yaml differs from config/crd: cp config/crd/fencekit.io_nodefences.yaml deploy/crd/")
}

// kustomize build deploy/ works, and puts every namespaced object in
// fencekit-system.
func TestKustomizeBuild(t *testing.T) {
	dir, err := filepath.Abs(deployDir)
	require.NoError(t, err)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	var got []string
	for _, r := range res.Resources() {
		got = append(got, r.GetKind()+"/"+r.GetName())
		switch r.GetKind() {
		case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition":
			assert.Empty(t, r.GetNamespace(), r.GetKind())
		default:
			assert.Equal(t, "fencekit-system", r.GetNamespace(), r.GetKind())
		}
	}
	slices.Sort(got)
	assert.Equal(t, []string{
		"ClusterRole/fencekit-capi-remediation", "ClusterRole/fencekit-controller", "ClusterRole/fencekit-ext-remediation",
		"ClusterRole/fencekit-metrics-reader", "ClusterRole/fencekit-profiles-reader",
		"ClusterRoleBinding/fencekit-controller", "ConfigMap/fencekit-policy",
		"CustomResourceDefinition/nodefenceremediations.fencekit.io", "CustomResourceDefinition/nodefenceremediationtemplates.fencekit.io",
		"CustomResourceDefinition/nodefences.fencekit.io", "Deployment/fencekit-controller", "Namespace/fencekit-system",
		"NetworkPolicy/fencekit-controller", "NetworkPolicy/fencekit-default-deny",
		"Role/fencekit-controller", "RoleBinding/fencekit-controller", "ServiceAccount/fencekit-controller",
	}, got)
	out, err := res.AsYaml()
	require.NoError(t, err)
	assert.Contains(t, string(out), "image: fencekit-controller:latest")
}

// Every argument of the Deployment is a flag of the program, and together
// with the pod's environment they parse; the policy file it names is the
// mounted ConfigMap's and parses; the kdump port is exposed.
func TestDeploymentMatchesFlags(t *testing.T) {
	var d appsv1.Deployment
	object(t, filepath.Join(deployDir, "deployment.yaml"), "Deployment", &d)
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]

	var o options
	fs := newFlagSet(&o, env(nil), io.Discard)
	for _, a := range c.Args {
		require.True(t, strings.HasPrefix(a, "--"), "argument %q is not a --flag", a)
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		assert.NotNil(t, fs.Lookup(name), "deployment.yaml passes --%s, which the program does not have", name)
	}
	assert.Empty(t, c.Command, "the image's entry point is the program")

	// The environment: the downward API gives the two variables the
	// program reads; GOMEMLIMIT is the Go runtime's.
	vars := map[string]string{}
	for _, e := range c.Env {
		switch e.Name {
		case envPodName:
			require.NotNil(t, e.ValueFrom)
			assert.Equal(t, "metadata.name", e.ValueFrom.FieldRef.FieldPath)
			vars[e.Name] = "fencekit-controller-5f7c9-abcde"
		case envPodNamespace:
			require.NotNil(t, e.ValueFrom)
			assert.Equal(t, "metadata.namespace", e.ValueFrom.FieldRef.FieldPath)
			vars[e.Name] = "fencekit-system"
		case "GOMEMLIMIT":
			require.NotNil(t, e.ValueFrom)
			assert.Equal(t, "limits.memory", e.ValueFrom.ResourceFieldRef.Resource)
		default:
			t.Errorf("deployment.yaml sets %s, which the program does not read", e.Name)
		}
	}
	o, err := parseFlags(c.Args, env(vars), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "fencekit-system", o.Namespace)
	assert.Equal(t, "fencekit-controller-5f7c9-abcde", o.Identity)
	assert.True(t, o.LeaderElect)
	assert.Greater(t, *d.Spec.Replicas, int32(1), "replicas under leader election")
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	assert.Greater(t, time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second, o.ShutdownTimeout,
		"the grace period leaves the workers --shutdown-timeout")

	// The policy file is the fencekit-policy ConfigMap's key, mounted.
	require.NotEmpty(t, o.PolicyFile)
	var mounted *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if filepath.Dir(o.PolicyFile) == m.MountPath {
			mounted = &c.VolumeMounts[i]
		}
	}
	require.NotNil(t, mounted, "--policy-file %s is not in a mounted volume", o.PolicyFile)
	assert.True(t, mounted.ReadOnly)
	var cmName string
	for _, v := range spec.Volumes {
		if v.Name == mounted.Name && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	var cm corev1.ConfigMap
	object(t, filepath.Join(deployDir, "policy.yaml"), "ConfigMap", &cm)
	assert.Equal(t, cm.Name, cmName)
	body, ok := cm.Data[filepath.Base(o.PolicyFile)]
	require.True(t, ok, "the ConfigMap has no key %s", filepath.Base(o.PolicyFile))
	pc, err := policy.ParseConfig([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, policy.DefaultConfig(), pc, "the shipped policy is the defaults, written out")

	// kdump: the port the listener binds is exposed, over UDP; the
	// metrics and probe ports over TCP, and the probes use the latter.
	require.NotEmpty(t, o.KdumpListen)
	_, port, _ := strings.Cut(o.KdumpListen, ":")
	_, metricsPort, _ := strings.Cut(o.MetricsBindAddress, ":")
	_, probePort, _ := strings.Cut(o.ProbeBindAddress, ":")
	var ports []string
	named := map[string]int32{}
	for _, p := range c.Ports {
		ports = append(ports, string(p.Protocol)+"/"+strconv.Itoa(int(p.ContainerPort)))
		named[p.Name] = p.ContainerPort
	}
	assert.Equal(t, []string{"UDP/" + port, "TCP/" + metricsPort, "TCP/" + probePort}, ports)
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, pr.HTTPGet)
		assert.Equal(t, strconv.Itoa(int(named[pr.HTTPGet.Port.StrVal])), probePort, "probes on the probe port")
	}
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)

	// Locked down.
	assert.False(t, spec.HostNetwork)
	assert.Equal(t, "fencekit-controller", spec.ServiceAccountName)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.NotEmpty(t, c.Resources.Requests)
	assert.NotEmpty(t, c.Resources.Limits)
}

// The lease the program takes is the one the Role lets it update.
func TestRBACLeaseName(t *testing.T) {
	o, err := parseFlags(nil, env(nil), io.Discard)
	require.NoError(t, err)
	var r rbacv1.Role
	object(t, filepath.Join(deployDir, "rbac.yaml"), "Role", &r)
	found := false
	for _, rule := range r.Rules {
		if slices.Contains(rule.Resources, "leases") && slices.Contains(rule.Verbs, "update") {
			assert.ElementsMatch(t, []string{o.LeaderElectionName, fencekube.DefaultAdmissionsLease}, rule.ResourceNames,
				"the leader's lease and the admissions ledger")
			found = true
		}
	}
	assert.True(t, found)
}

// The example fence configuration parses, and configures worker-1's three
// steps with fake devices.
func TestExampleFenceConfig(t *testing.T) {
	f, err := os.Open(filepath.Join(deployDir, "example-fence-config.yaml"))
	require.NoError(t, err)
	defer f.Close()
	cms, err := config.LoadConfigMaps(f)
	require.NoError(t, err)
	require.Len(t, cms, 7)
	for _, cm := range cms {
		assert.Equal(t, "fencekit-system", cm.Namespace, cm.Name)
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	t.Cleanup(func() { fake.Forget("fc-switch"); fake.Forget("pdu") })
	nc, ok := cfg.Node("worker-1")
	require.True(t, ok)
	assert.Equal(t, map[fence.Step][][]string{
		fence.StepIsolation:       {{"fc-off"}},
		fence.StepPowerManagement: {{"pdu-off"}},
		fence.StepRecovery:        {{"pdu-on", "fc-on"}},
	}, nc.Steps)
	assert.False(t, nc.Kdump)
	for _, m := range []string{"fc-off", "fc-on", "pdu-off", "pdu-on"} {
		opened, err := cfg.OpenMethod(t.Context(), nil, "worker-1", m, nil)
		require.NoError(t, err, m)
		assert.NotNil(t, opened.Device, m)
	}
}
