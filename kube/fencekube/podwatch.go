package fencekube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/internal/ctxsleep"
)

// WatchPods watches the node's pods and the volume attachments until ctx
// ends (controller.PodsNotifier), so that a fenced node is switched on
// again the moment its pods are gone.
func (t *TaintPods) WatchPods(ctx context.Context, node string, changed func()) error {
	return watchNodePods(ctx, t.Client, node, changed)
}

// WatchPods watches the node's pods and the volume attachments until ctx
// ends (controller.PodsNotifier).
func (d *DeletePods) WatchPods(ctx context.Context, node string, changed func()) error {
	return watchNodePods(ctx, d.Client, node, changed)
}

var (
	_ controller.PodsNotifier = (*TaintPods)(nil)
	_ controller.PodsNotifier = (*DeletePods)(nil)
)

// watchRetry is the pause before a watch that ended is set up again.
const watchRetry = 500 * time.Millisecond

// watchNodePods watches the pods bound to node (by spec.nodeName) and the
// VolumeAttachments, and calls changed once the watches are set up (a
// change just before is not missed) and after every change that may end a
// wait for the node's pods: a pod of the node deleted or ended, a
// VolumeAttachment of the node deleted. A watch that the server ends is set
// up again. A cluster without VolumeAttachments (or that does not let the
// controller watch them) is watched for pods only, as podsGone lists them.
// It returns when ctx ends, or an error when the pods cannot be watched.
func watchNodePods(ctx context.Context, c client.WithWatch, node string, changed func()) error {
	podOpts := &client.ListOptions{FieldSelector: fields.OneTermEqualSelector(PodNodeNameField, node)}
	vaWatch := true
	for first := true; ctx.Err() == nil; first = false {
		pods, err := c.Watch(ctx, &corev1.PodList{}, podOpts)
		if err != nil {
			if first {
				return &Error{Kind: "Node", Name: node, Op: OpListPods, Field: "watch", Err: err}
			}
			if ctxsleep.Sleep(ctx, watchRetry) != nil {
				return nil
			}
			continue
		}
		var vas watch.Interface
		if vaWatch {
			vas, err = c.Watch(ctx, &storagev1.VolumeAttachmentList{})
			switch {
			case err == nil:
			case noSuchResource(err):
				vaWatch = false
			default:
				pods.Stop()
				if ctxsleep.Sleep(ctx, watchRetry) != nil {
					return nil
				}
				continue
			}
		}
		changed()
		err = relayPodEvents(ctx, node, pods, vas, changed)
		pods.Stop()
		if vas != nil {
			vas.Stop()
		}
		if err == nil || ctxsleep.Sleep(ctx, watchRetry) != nil {
			return nil
		}
	}
	return nil
}

// relayPodEvents calls changed for each event of pods or vas that may end
// the wait, until ctx ends (nil) or a watch ends (an error: set it up
// again).
func relayPodEvents(ctx context.Context, node string, pods, vas watch.Interface, changed func()) error {
	var vaEvents <-chan watch.Event
	if vas != nil {
		vaEvents = vas.ResultChan()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-pods.ResultChan():
			if !ok {
				return errors.New("the pods' watch ended")
			}
			p, isPod := e.Object.(*corev1.Pod)
			switch {
			case e.Type == watch.Error:
				return fmt.Errorf("the pods' watch: %v", apierrors.FromObject(e.Object))
			case !isPod:
			case e.Type == watch.Deleted,
				e.Type == watch.Modified && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed):
				changed()
			}
		case e, ok := <-vaEvents:
			if !ok {
				return errors.New("the volume attachments' watch ended")
			}
			if e.Type == watch.Error {
				return fmt.Errorf("the volume attachments' watch: %v", apierrors.FromObject(e.Object))
			}
			if va, isVA := e.Object.(*storagev1.VolumeAttachment); isVA && e.Type == watch.Deleted && va.Spec.NodeName == node {
				changed()
			}
		}
	}
}
