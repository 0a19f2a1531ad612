package fencekube

import (
	"log/slog"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/fencekit/fencekit/fence/controller"
)

// EventsOptions tune Events. The zero value works.
type EventsOptions struct {
	// Component is the source of the events ("fencekit-controller" when
	// empty); Host the host it runs on.
	Component, Host string
	// Logger receives every event too, at debug level (discarded when
	// nil).
	Logger *slog.Logger
}

// maxEventMessage bounds an event's message.
const maxEventMessage = 1024

// Events records core/v1 Events on Node objects, through client-go's event
// broadcaster, so that `kubectl describe node` shows what happens to a
// node's fencing. It implements controller.Events.
//
// An event refers to the node as the kubelet does (kind Node, UID the
// node's name), which `kubectl describe node` finds; it lives in the
// default namespace. Events are sent in the background, never blocking
// the caller; client-go groups repeated events and drops them beyond a
// rate per node and reason (25 at once, then one per five minutes).
// Call Shutdown when done.
type Events struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	logger      *slog.Logger
	once        sync.Once
}

// NewEvents returns Events that record through client.
func NewEvents(client kubernetes.Interface, opts EventsOptions) *Events {
	if opts.Component == "" {
		opts.Component = "fencekit-controller"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		// The spam filter counts per node and reason, so that a burst of
		// one kind of event never hides the others.
		SpamKeyFunc: func(e *corev1.Event) string {
			return strings.Join([]string{e.Source.Component, e.Source.Host, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason}, "/")
		},
	}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &Events{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: opts.Component, Host: opts.Host}),
		logger:      logger,
	}
}

// NodeReference returns the reference an event on the node carries.
func NodeReference(node string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
}

// Event records an event on the node: of type Warning when warning is
// set, else Normal.
func (e *Events) Event(node string, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	message = strings.ToValidUTF8(clip(message, maxEventMessage), "")
	e.logger.Debug("event", "node", node, "type", typ, "reason", reason, "message", message)
	e.recorder.Event(NodeReference(node), typ, reason, message)
}

// Shutdown stops the broadcaster. Events recorded afterwards are dropped.
func (e *Events) Shutdown() {
	e.once.Do(e.broadcaster.Shutdown)
}

var _ controller.Events = (*Events)(nil)

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
	message = strings.ToValidUTF8(clip(message, maxEventMessage), "")
	if r.Logger != nil {
		r.Logger.Debug("event", "node", node, "type", typ, "reason", reason, "message", message)
	}
	r.Recorder.Eventf(NodeReference(node), nil, typ, reason, "Fence", "%s", message)
}

var _ controller.Events = (*RecorderEvents)(nil)
