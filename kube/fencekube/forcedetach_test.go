package fencekube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/kube/fencekube"
)

func kcm(name string, command ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"component": "kube-controller-manager"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-controller-manager", Command: command}}}}
}

// The controller manager's setting read from its pods' command lines.
func TestDetectForceDetach(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want fencekube.ForceDetach
		how  string
	}{
		{"no pod", nil, fencekube.ForceDetachUnknown, "no pod component=kube-controller-manager in kube-system"},
		{"default", []*corev1.Pod{kcm("kcm-1", "kube-controller-manager", "--controllers=*")}, fencekube.ForceDetachEnabled, "runs without --disable-force-detach-on-timeout"},
		{"bare flag", []*corev1.Pod{kcm("kcm-1", "kube-controller-manager", "--disable-force-detach-on-timeout")}, fencekube.ForceDetachDisabled, "every kube-controller-manager pod of kube-system (1)"},
		{"true", []*corev1.Pod{kcm("kcm-1", "kube-controller-manager", "--disable-force-detach-on-timeout=true")}, fencekube.ForceDetachDisabled, ""},
		{"false", []*corev1.Pod{kcm("kcm-1", "kube-controller-manager", "--disable-force-detach-on-timeout=false")}, fencekube.ForceDetachEnabled, "=false"},
		{"shell line", []*corev1.Pod{kcm("kcm-1", "/bin/sh", "-c", "exec kube-controller-manager --disable-force-detach-on-timeout=true --v=2")}, fencekube.ForceDetachDisabled, ""},
		{"one of two", []*corev1.Pod{kcm("kcm-1", "kube-controller-manager", "--disable-force-detach-on-timeout"), kcm("kcm-2", "kube-controller-manager")},
			fencekube.ForceDetachEnabled, "pod kube-system/kcm-2 runs without"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			for _, p := range tc.pods {
				b = b.WithObjects(p)
			}
			// A pod of another component is not read.
			c := b.WithObjects(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "kube-system", Labels: map[string]string{"component": "etcd"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Command: []string{"etcd"}}}}}).Build()
			got, how, err := fencekube.DetectForceDetach(t.Context(), c)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Contains(t, how, tc.how)
		})
	}
	_, err := fencekube.ParseForceDetach("auto")
	assert.EqualError(t, err, `"auto": want enabled or disabled`)
}
