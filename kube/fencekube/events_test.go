package fencekube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubectl/pkg/scheme"

	"github.com/fencekit/fencekit/kube/fencekube"
)

// recorderEvents returns RecorderEvents over a broadcaster of client's
// events.k8s.io API, as a controller-runtime manager gives one, reporting
// as component.
func recorderEvents(t *testing.T, client kubernetes.Interface, component string) *fencekube.RecorderEvents {
	t.Helper()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	b.StartRecordingToSink(ctx.Done())
	t.Cleanup(func() { cancel(); b.Shutdown() })
	return &fencekube.RecorderEvents{Recorder: b.NewRecorder(scheme.Scheme, component)}
}

func TestEvents(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	ev := recorderEvents(t, client, "fencekit")

	ev.Event("worker-1", true, "FenceIsolation", "isolation: node not ready for the configured duration: fencing starts")
	ev.Event("worker-1", false, "FenceRunning", strings.Repeat("x", 5000))
	var got []eventsv1.Event
	require.Eventually(t, func() bool {
		l, err := client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		got = l.Items
		return len(got) == 2
	}, 10*time.Second, 10*time.Millisecond)
	byReason := map[string]eventsv1.Event{}
	for _, e := range got {
		byReason[e.Reason] = e
	}
	e := byReason["FenceIsolation"]
	assert.Equal(t, corev1.EventTypeWarning, e.Type)
	assert.Equal(t, "Node", e.Regarding.Kind)
	assert.Equal(t, "worker-1", e.Regarding.Name)
	assert.Equal(t, "worker-1", string(e.Regarding.UID), "as the kubelet refers to its node")
	assert.Equal(t, "fencekit", e.ReportingController)
	assert.Equal(t, "Fence", e.Action)
	assert.Contains(t, e.Note, "fencing starts")
	e = byReason["FenceRunning"]
	assert.Equal(t, corev1.EventTypeNormal, e.Type)
	assert.LessOrEqual(t, len(e.Note), 1024, "clipped")
}
