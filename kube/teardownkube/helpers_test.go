package teardownkube_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fencekit/fencekit/teardown"
)

// newNode returns a Node object named name with a Ready condition of the
// given status and heartbeat.
func newNode(name string, ready corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady",
			LastHeartbeatTime:  metav1.NewTime(heartbeat),
			LastTransitionTime: metav1.NewTime(heartbeat),
		}}},
	}
}

// podOpt changes a pod that newPod builds.
type podOpt func(*corev1.Pod)

// newPod returns a pod bound to node, Running and Ready, with one
// container and a terminationGracePeriodSeconds of 0 unless an option
// says otherwise.
func newPod(ns, name, node string, opts ...podOpt) *corev1.Pod {
	zero := int64(0)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"pod": name}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &zero,
			Containers:                    []corev1.Container{{Name: "main", Image: "registry.example/app:1"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ownedBy makes a controller of kind (apps/v1) the pod's owner.
func ownedBy(kind, name string, uid types.UID) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kind, Name: name, UID: uid, Controller: &yes,
		})
	}
}

// withEmptyDir gives the pod an emptyDir volume.
func withEmptyDir(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// mirror marks the pod as the mirror of a static pod.
func mirror(p *corev1.Pod) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[corev1.MirrorPodAnnotationKey] = "hash"
}

// withLabel sets a label.
func withLabel(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

// withPhase sets the pod's phase.
func withPhase(phase corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

// withGrace sets the pod's terminationGracePeriodSeconds.
func withGrace(seconds int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
}

// withFinalizer adds a finalizer.
func withFinalizer(f string) podOpt {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, f) }
}

// progress records a drain's reports; it checks that they never overlap.
type progress struct {
	mu      sync.Mutex
	busy    bool
	overlap bool
	reports []teardown.DrainProgress
}

func (r *progress) report(p teardown.DrainProgress) {
	r.mu.Lock()
	if r.busy {
		r.overlap = true
	}
	r.busy = true
	r.reports = append(r.reports, p)
	r.mu.Unlock()
	time.Sleep(time.Millisecond) // widen the window an overlapping report would hit
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
}

// messages returns every report's message.
func (r *progress) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.reports {
		out = append(out, p.Message)
	}
	return out
}

// done returns the pods the reports named as gone, sorted.
func (r *progress) done() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.reports {
		out = append(out, p.Done...)
	}
	slices.Sort(out)
	return out
}

// last returns the last report.
func (r *progress) last() teardown.DrainProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) == 0 {
		return teardown.DrainProgress{}
	}
	return r.reports[len(r.reports)-1]
}

// containing returns the messages that contain s.
func (r *progress) containing(s string) []string {
	var out []string
	for _, m := range r.messages() {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// logBuffer is a logger that writes text records to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func ptr[T any](v T) *T { return &v }
