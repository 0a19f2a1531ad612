package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/kubetest"
)

// fakeCSIDriver is the CSI driver of the test's volumes; the test plays its
// external attacher (it marks every VolumeAttachment attached).
const fakeCSIDriver = "csi.fencekit.test"

// playAttacher marks the VolumeAttachments of fakeCSIDriver attached, as a
// CSI driver's external attacher does, until t ends.
func playAttacher(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			vas, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range vas.Items {
				va := &vas.Items[i]
				if va.Spec.Attacher != fakeCSIDriver || va.Status.Attached || va.DeletionTimestamp != nil {
					continue
				}
				va.Status.Attached = true
				_, _ = c.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
			}
		}
	}()
}

// attachment returns the VolumeAttachment of node, or nil.
func attachment(t *testing.T, c kubernetes.Interface, node string) *storagev1.VolumeAttachment {
	t.Helper()
	vas, err := c.StorageV1().VolumeAttachments().List(context.WithoutCancel(t.Context()), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range vas.Items {
		if vas.Items[i].Spec.NodeName == node && vas.Items[i].DeletionTimestamp == nil {
			return &vas.Items[i]
		}
	}
	return nil
}

// TestControlPlaneForceDetach shows what kube-controller-manager does with
// the volume of a node whose fence failed, with and without
// --disable-force-detach-on-timeout. A pod with a ReadWriteOnce CSI volume
// runs on node A (its VolumeAttachment attached, the node reporting the
// volume in use); node A dies with its BMC, so the fencing fails; then a
// person force-deletes the stuck pod, the common wrong fix. With the
// controller manager's default, the volume is detached 6 minutes later,
// though nothing proved node A off. With the flag, it stays attached past
// those 6 minutes, and is detached only once the node is fenced (here a
// person's confirmation: the out-of-service taint). fencekit says at start
// which it is (told by --force-detach-on-timeout: the test's controller
// manager is a process, not a pod it could read).
//
// A pod left Terminating (not deleted) keeps its volume in the controller
// manager's desired state: no timeout detaches it; the 6 minutes run once
// the pod object is gone.
//
// Its two cases wait out those minutes side by side and beside the
// package's other end-to-end tests (e2eSpec.background), which run in the
// lane meanwhile.
func TestControlPlaneForceDetach(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		disabled bool
	}{{"default", false}, {"disabled", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := "node-a", "node-b"
			spec := e2eSpec{
				groups:     map[string][]string{"a": {a}, "b": {b}},
				fenced:     []string{a},
				policy:     "stormGuard:\n  maxUnresponsivePercent: 60\n  cooldown: 5s\nmaxInFlight: 2\n",
				args:       []string{"--max-retries=0", "--force-detach-on-timeout=enabled"},
				background: true,
			}
			if tc.disabled {
				spec.cmArgs = []string{"--disable-force-detach-on-timeout"}
				spec.args[1] = "--force-detach-on-timeout=disabled"
			}
			e := startE2E(t, spec)
			ctx := t.Context()
			admin := e.cp.Client()
			ns := e.cp.Namespace(t)
			playAttacher(t, admin)

			// Node A is the attach-detach controller's, and runs a pod with
			// a ReadWriteOnce CSI volume.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				n, err := admin.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
				_, err = admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
				return err
			})
			require.NoError(t, err)
			pvName := ns + "-data"
			_, err = admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: pvName},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: "manual",
					ClaimRef:         &corev1.ObjectReference{Namespace: ns, Name: "data"},
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
						Driver: fakeCSIDriver, VolumeHandle: "vol-" + tc.name}},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			sc := "manual"
			_, err = admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &sc, VolumeName: pvName,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
				return err == nil && pvc.Status.Phase == corev1.ClaimBound
			}, 30*time.Second, 100*time.Millisecond, "the claim bound")
			_, err = admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "app"},
				Spec: corev1.PodSpec{NodeName: a,
					Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			kubetest.WaitPodRunning(t, admin, ns, "app", "", 30*time.Second)
			require.Eventually(t, func() bool {
				va := attachment(t, admin, a)
				return va != nil && va.Status.Attached
			}, 60*time.Second, 100*time.Millisecond, "the volume attached to node A")
			// The kubelet would report the volume mounted.
			inUse := corev1.UniqueVolumeName("kubernetes.io/csi/" + fakeCSIDriver + "^vol-" + tc.name)
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				n, err := admin.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
				if err != nil {
					return err
				}
				n.Status.VolumesInUse = []corev1.UniqueVolumeName{inUse}
				_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
				return err
			})
			require.NoError(t, err)

			// Node A dies with its BMC: the fencing fails.
			e.bmcs[a].SetFault(ipmisim.FaultSilent)
			require.NoError(t, e.cp.StopNodes("a"))
			e.waitRecord(a, 120*time.Second, "Failed", func(nf *flow.NodeFence) bool { return nf.Status == flow.StatusFailed })

			// Someone force-deletes the stuck pod.
			zero := int64(0)
			require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
			require.Eventually(t, func() bool {
				_, err := admin.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}, 10*time.Second, 50*time.Millisecond)
			deleted := time.Now()

			if !tc.disabled {
				// Detached at 6 minutes, without proof.
				var gone time.Duration
				for time.Since(deleted) < 8*time.Minute {
					if attachment(t, admin, a) == nil {
						gone = time.Since(deleted)
						break
					}
					time.Sleep(time.Second)
				}
				require.NotZero(t, gone, "the volume still attached 8 minutes after the pod was deleted:\n%s", e.cp.ControllerManagerLog(20))
				t.Logf("force-detached %v after the pod was deleted, the node never fenced", gone.Round(time.Second))
				assert.Greater(t, gone, 6*time.Minute-10*time.Second)
				assert.False(t, e.record(a).Fenced(), "nothing proved node A off")
				assert.Contains(t, e.run.logs.String(), "kube-controller-manager force-detaches the volumes of a node unhealthy for 6 minutes")
				return
			}

			// Still attached past the 6 minutes.
			for time.Since(deleted) < 7*time.Minute {
				require.NotNil(t, attachment(t, admin, a), "detached %v after the pod was deleted, the node not fenced", time.Since(deleted).Round(time.Second))
				time.Sleep(2 * time.Second)
			}
			assert.Contains(t, e.run.logs.String(), "kube-controller-manager keeps the volumes of an unhealthy node attached until it is fenced")

			// A person confirms node A off: tainted, then detached.
			e.cp.Create(t, kubetest.Objects(t, filepath.Join(deployDir, "confirm.yaml"))...)
			grant(t, e.cp, "alice", "fencekit-confirm", "confirm")
			plugins := buildPlugin(t)
			confirmed := time.Now()
			code, out := kubectl(t, e.cp.Cluster, plugins, "fence", "confirm", a, "--reason", "no power, checked", "--as", "alice")
			require.Equal(t, 0, code, out)
			require.Eventually(t, func() bool { return attachment(t, admin, a) == nil }, 60*time.Second, 200*time.Millisecond,
				"detached once the node is fenced")
			t.Logf("kept attached %v after the pod was deleted; detached %v after the confirmation",
				confirmed.Sub(deleted).Round(time.Second), time.Since(confirmed).Round(100*time.Millisecond))
			assert.True(t, strings.Contains(e.cp.ControllerManagerLog(200), "out-of-service taint"), "detached for the out-of-service taint")
		})
	}
}
