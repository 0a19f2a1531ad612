package fencekube

import (
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/fencekit/fencekit/fence/controller"
)

// maxEventMessage bounds an event's message (the API server refuses more
// than 1 KiB in an events.k8s.io note).
const maxEventMessage = 1024

// NodeReference returns the reference an event on the node carries.
func NodeReference(node string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
}

// RBAC: events on the Node objects (they live in the default namespace),
// through the events.k8s.io API; an event is patched to count its repeats.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// RecorderEvents records the controller's events through an event
// recorder of the events.k8s.io API that someone else owns: a
// controller-runtime manager's (GetEventRecorder), with its broadcaster,
// its rate limits and its reporting controller. Each event regards the
// node (NodeReference), with action Fence. It implements
// controller.Events.
type RecorderEvents struct {
	// Recorder records the events.
	Recorder events.EventRecorder
	// Logger receives every event too, at debug level (discarded when
	// nil).
	Logger *slog.Logger
}

// Event records an event on the node: of type Warning when warning is
// set, else Normal.
func (r *RecorderEvents) Event(node string, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	// Clipped with room for the "..." it ends with: the API server refuses
	// a longer note, and the event would be lost.
	message = strings.ToValidUTF8(clip(message, maxEventMessage-len("...")), "")
	if r.Logger != nil {
		r.Logger.Debug("event", "node", node, "type", typ, "reason", reason, "message", message)
	}
	r.Recorder.Eventf(NodeReference(node), nil, typ, reason, "Fence", "%s", message)
}

var _ controller.Events = (*RecorderEvents)(nil)
